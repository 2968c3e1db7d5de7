/* diag: how the front end reports errors in a program. */
#include "config.h"
#include "lang/diag.h"

#include <stdarg.h>

void diag_init(Diag *d, FILE *out, const char *file)
{
    d->out = out;
    d->file = file;
    d->nerrors = 0;
    d->at_eof = false;
}

void diag_error(Diag *d, int line, int col, const char *fmt, ...)
{
    d->nerrors++;
    if (!d->out || d->nerrors > DIAG_MAX)
        return;
    if (d->nerrors == DIAG_MAX) {
        fprintf(d->out, "%s: too many errors, giving up\n", d->file);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fprintf(d->out, "%s:%d:%d: ", d->file, line, col);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
    va_end(ap);
}
