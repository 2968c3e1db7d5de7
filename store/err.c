/* err: the store layer's error buffer (code + one line naming file and block). */
#include "config.h"
#include "store/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int st_err_set(st_err *err, enum st_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return -1;
}

void st_err_prefix(st_err *err, const char *fmt, ...)
{
    char head[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    size_t h = strlen(head), m = strlen(err->msg);
    if (h >= sizeof err->msg - 1)
        h = sizeof err->msg - 1;
    if (h + m >= sizeof err->msg)
        m = sizeof err->msg - 1 - h;
    memmove(err->msg + h, err->msg, m);
    memcpy(err->msg, head, h);
    err->msg[h + m] = '\0';
}

void st_err_suffix(st_err *err, const char *fmt, ...)
{
    size_t m = strlen(err->msg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + m, sizeof err->msg - m, fmt, ap);
    va_end(ap);
}

int st_err_nomem(st_err *err, const char *what)
{
    return st_err_set(err, ST_ENOMEM, "out of memory (%s)", what);
}
