/* diag: how the front end reports errors in a program. */
#include "config.h"
#include "lang/diag.h"

#include <stdarg.h>

#include "vm/place.h"

void diag_init(Diag *d, FILE *out, const char *file)
{
    d->out = out;
    d->file = file;
    d->nerrors = 0;
    d->at_eof = false;
    d->src = NULL;
}

void diag_source(Diag *d, const char *src, size_t len, int first_line)
{
    d->src = src;
    d->len = len;
    d->first_line = first_line;
}

void diag_error(Diag *d, int line, int col, const char *fmt, ...)
{
    if (d->nerrors < DIAG_MAX) {
        DiagMsg *m = &d->msgs[d->nerrors];
        m->line = line;
        m->col = col;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->text, sizeof m->text, fmt, ap);
        va_end(ap);
    }
    d->nerrors++;
}

static int by_place(const void *a, const void *b)
{
    const DiagMsg *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return (x->col > y->col) - (x->col < y->col);
}

void diag_flush(Diag *d)
{
    int n = d->nerrors < DIAG_MAX ? d->nerrors : DIAG_MAX;
    if (!d->out)
        return;
    /* insertion sort: stable, so errors at one place keep their order */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && by_place(&d->msgs[j - 1], &d->msgs[j]) > 0; j--) {
            DiagMsg t = d->msgs[j];
            d->msgs[j] = d->msgs[j - 1];
            d->msgs[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        fprintf(d->out, "%s:%d:%d: %s\n", d->file, d->msgs[i].line, d->msgs[i].col,
                d->msgs[i].text);
        vm_show_place(d->out, d->src, d->len, d->first_line, (uint32_t)d->msgs[i].line,
                      (uint32_t)d->msgs[i].col);
    }
    if (d->nerrors > DIAG_MAX)
        fprintf(d->out, "%s: %d more errors not shown\n", d->file, d->nerrors - DIAG_MAX);
}
