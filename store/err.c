/* err: formatting the store's error buffer. */
#include "config.h"
#include "store/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int st_err_set(st_err *e, int code, int sys, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    if (sys) {
        size_t n = strlen(e->msg);
        snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(code));
    }
    return -1;
}

void st_errcpy(st_err *dst, const st_err *src)
{
    if (dst && src && dst != src)
        *dst = *src;
}
