/* fieldtext: text to a field's stored bytes (numbers, bool, time, enum,
 * char[N]), one parser for every reader of text; the forms are in the header. */
#include "config.h"
#include "store/fieldtext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/mem.h"

#define SHOWN 64      /* bytes of a value quoted in a message */
#define NUMBUF 128    /* float text up to this long is copied on the stack */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The value as a message quotes it: control characters escaped (a quoted
 * field's newlines), cut with "..." where it would not fit. */
static const char *shown(const char *s, size_t n, char buf[SHOWN])
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (o + 4 + 4 >= SHOWN) {   /* room for an escape and the "..." */
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(buf + o, SHOWN - o,
                                  c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    buf[o] = 0;
    return buf;
}

/* "field 'NAME': 'TEXT' " + why. */
__attribute__((format(printf, 5, 6)))
static int bad(st_err *err, const st_field *f, const char *text, size_t len, const char *fmt, ...)
{
    char why[256], buf[SHOWN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return st_err_set(err, ST_EINPUT, "field '%s': '%s' %s", f->name, shown(text, len, buf), why);
}

/* ---- integers ----------------------------------------------------------- */

/* [+-]digits into sign and magnitude: 1, or 0 if the text is not that, -1
 * if it is but the magnitude is above 2^64-1. */
static int take_int(const char *s, size_t n, bool *neg, uint64_t *mag)
{
    size_t i = n && (s[0] == '+' || s[0] == '-');
    bool over = false;
    *neg = i && s[0] == '-';
    *mag = 0;
    if (i == n)
        return 0;
    for (; i < n; i++) {
        if (!is_digit(s[i]))
            return 0;
        over |= __builtin_mul_overflow(*mag, 10, mag) ||
                __builtin_add_overflow(*mag, (uint64_t)(s[i] - '0'), mag);
    }
    return over ? -1 : 1;
}

/* An integer in the range of f's type (time: i64), as little-endian bytes. */
static int parse_int(const st_field *f, const char *s, size_t n, void *out, st_err *err)
{
    bool neg, is_signed = f->type == ST_TIME || (f->type >= ST_I8 && f->type <= ST_I64);
    uint64_t mag;
    unsigned bits = 8 * f->width;
    int r = take_int(s, n, &neg, &mag);
    if (r == 0 && f->type == ST_TIME)
        return bad(err, f, s, n, "is not a time like 2026-12-02T13:05:00Z or seconds since 1970");
    if (r == 0)
        return bad(err, f, s, n, "is not an integer");
    /* The largest magnitude: 2^(bits-1) below zero and one less above when
     * signed; 2^bits - 1 above zero and 0 below when unsigned. */
    uint64_t top = is_signed ? UINT64_C(1) << (bits - 1) : bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    uint64_t lim = neg ? (is_signed ? top : 0) : (is_signed ? top - 1 : top);
    if (r < 0 || mag > lim)
        return bad(err, f, s, n, "is beyond the range of %s", st_type_name(f->type));
    uint64_t v = neg ? 0 - mag : mag;
    memcpy(out, &v, f->width);  /* little-endian: the low bytes are the narrower value */
    return 0;
}

/* ---- floats ------------------------------------------------------------- */

/* strtod/strtof of exactly s[0 .. n): copied so the parse stops at n. */
static int parse_float(const st_field *f, const char *s, size_t n, void *out, st_err *err)
{
    char stack[NUMBUF], *buf = n < NUMBUF ? stack : mem_alloc(n + 1);
    if (!buf)
        return st_err_nomem(err, "a number's text");
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    float x = 0;
    double d = 0;
    errno = 0;
    if (f->type == ST_F32)
        x = strtof(buf, &end);
    else
        d = strtod(buf, &end);
    /* strtod skips leading blanks: the text must start the number itself */
    bool whole = end == buf + n && !(buf[0] == ' ' || (buf[0] >= '\t' && buf[0] <= '\r'));
    bool over = errno == ERANGE && isinf(f->type == ST_F32 ? x : d);
    if (buf != stack)
        mem_free(buf, n + 1);
    if (!whole)
        return bad(err, f, s, n, "is not a number");
    if (over)   /* too small a magnitude rounds to a subnormal or 0: not an error */
        return bad(err, f, s, n, "is beyond the range of %s", st_type_name(f->type));
    if (f->type == ST_F32)
        memcpy(out, &x, 4);
    else
        memcpy(out, &d, 8);
    return 0;
}

/* ---- time --------------------------------------------------------------- */

static bool take_digits(const char **p, const char *end, unsigned n, int64_t *out)
{
    int64_t v = 0;
    for (unsigned i = 0; i < n; i++, (*p)++) {
        if (*p >= end || !is_digit(**p))
            return false;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return true;
}

static bool take_char(const char **p, const char *end, char c)
{
    if (*p >= end || **p != c)
        return false;
    (*p)++;
    return true;
}

/* The year: 4 digits, or with a sign 4 to 12 (enough for any i64 time). */
static bool take_year(const char **p, const char *end, int64_t *y)
{
    int sign = 0;
    if (*p < end && (**p == '+' || **p == '-'))
        sign = *(*p)++ == '-' ? -1 : 1;
    const char *y0 = *p;
    while (*p < end && is_digit(**p) && *p - y0 < 12)
        (*p)++;
    size_t ny = (size_t)(*p - y0);
    if (ny < 4 || (!sign && ny != 4))
        return false;
    *p = y0;
    take_digits(p, end, (unsigned)ny, y);
    *y = sign < 0 ? -*y : *y;
    return true;
}

/* Thh:mm[:ss] or the same after a space; absent, midnight. */
static bool take_clock(const char **p, const char *end, int64_t *hh, int64_t *mi, int64_t *ss)
{
    *hh = *mi = *ss = 0;
    if (*p == end || !(**p == 'T' || **p == ' '))
        return true;
    (*p)++;
    if (!(take_digits(p, end, 2, hh) && take_char(p, end, ':') && take_digits(p, end, 2, mi)))
        return false;
    return !take_char(p, end, ':') || take_digits(p, end, 2, ss);
}

/* Days since 1970-01-01 of a civil date (proleptic Gregorian), by 400-year eras. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* The time of a civil date and clock, checked: the month's days, leap years. */
static int civil_time(int64_t y, int64_t mo, int64_t d, int64_t hh, int64_t mi, int64_t ss,
                      int64_t *out)
{
    if (mo < 1 || mo > 12 || d < 1 || hh > 23 || mi > 59 || ss > 59)
        return -1;
    static const unsigned mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
        return -1;
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    /* Negative days count from the day's end so INT64_MIN itself is reachable. */
    int64_t sec = hh * 3600 + mi * 60 + ss, t;
    if (days < 0) {
        days++;
        sec -= 86400;
    }
    if (__builtin_mul_overflow(days, 86400, &t) || __builtin_add_overflow(t, sec, &t))
        return -1;
    *out = t;
    return 0;
}

int st_fieldtext_time(const char *text, size_t len, int64_t *out)
{
    const char *p = text, *end = text + len;
    int64_t y = 0, mo, d, hh, mi, ss;
    if (!(take_year(&p, end, &y) && take_char(&p, end, '-') && take_digits(&p, end, 2, &mo) &&
          take_char(&p, end, '-') && take_digits(&p, end, 2, &d) &&
          take_clock(&p, end, &hh, &mi, &ss)))
        return -1;
    take_char(&p, end, 'Z');
    if (p != end)
        return -1;
    return civil_time(y, mo, d, hh, mi, ss, out);
}

int st_fieldtext_compact_time(const char *text, size_t len, int64_t *out)
{
    const char *p = text, *end = text + len;
    int64_t y, mo, d, hh = 0, mi = 0, ss = 0;
    if (len != 8 && len != 14)
        return -1;
    if (!(take_digits(&p, end, 4, &y) && take_digits(&p, end, 2, &mo) &&
          take_digits(&p, end, 2, &d)) ||
        (len == 14 && !(take_digits(&p, end, 2, &hh) && take_digits(&p, end, 2, &mi) &&
                        take_digits(&p, end, 2, &ss))))
        return -1;
    return civil_time(y, mo, d, hh, mi, ss, out);
}

/* ---- one field ---------------------------------------------------------- */

static int parse_enum(const st_field *f, const char *s, size_t n, void *out,
                      st_suggest_fn *suggest, st_err *err)
{
    int k = st_field_enum_find(f, s, n);
    if (k < 0) {
        const char *hint = suggest ? suggest(s, n, (const char *const *)f->syms, f->nsyms) : NULL;
        return bad(err, f, s, n, "is not one of its symbols%s%s%s", hint ? " (did you mean '" : "",
                   hint ? hint : "", hint ? "'?)" : "");
    }
    *(unsigned char *)out = (unsigned char)k;
    return 0;
}

static int parse_char(const st_field *f, const char *s, size_t n, void *out, st_err *err)
{
    if (n > f->width)
        return bad(err, f, s, n, "is longer than char[%u]", f->width);
    if (memchr(s, 0, n))
        return bad(err, f, s, n, "holds a NUL byte, which char[%u] cannot", f->width);
    memcpy(out, s, n);
    return 0;
}

/* Spaces and tabs around a number, bool or time are not part of it (both
 * readers took "1, 2" before they were one); a symbol or char text is taken
 * exactly. */
static void trim(const char **text, size_t *len)
{
    while (*len && (**text == ' ' || **text == '\t'))
        (*text)++, (*len)--;
    while (*len && ((*text)[*len - 1] == ' ' || (*text)[*len - 1] == '\t'))
        (*len)--;
}

int st_fieldtext_parse(const st_field *f, const char *text, size_t len, void *out,
                       st_suggest_fn *suggest, st_err *err)
{
    memset(out, 0, f->width);
    if (f->type != ST_ENUM && f->type != ST_CHAR)
        trim(&text, &len);
    if (len == 0 && f->role == ST_KEY)
        return st_err_set(err, ST_EINPUT, "field '%s': a key field cannot be empty", f->name);
    /* an empty enum is a missing value, not its first symbol: a blank
     * state read as "open" would be wrong data that looks right */
    if (len == 0 && f->type == ST_ENUM)
        return st_err_set(err, ST_EINPUT, "field '%s': empty, not one of its symbols", f->name);
    if (len == 0)
        return 0;
    switch (f->type) {
    case ST_F32: case ST_F64:
        return parse_float(f, text, len, out, err);
    case ST_BOOL:
        if ((len == 4 && !memcmp(text, "true", 4)) || (len == 1 && text[0] == '1'))
            *(unsigned char *)out = 1;
        else if (!((len == 5 && !memcmp(text, "false", 5)) || (len == 1 && text[0] == '0')))
            return bad(err, f, text, len, "is not true, false, 1 or 0");
        return 0;
    case ST_TIME: {
        int64_t t;
        if (st_fieldtext_time(text, len, &t) != 0)
            return parse_int(f, text, len, out, err);
        memcpy(out, &t, 8);
        return 0;
    }
    case ST_ENUM:
        return parse_enum(f, text, len, out, suggest, err);
    case ST_CHAR:
        return parse_char(f, text, len, out, err);
    default:
        return parse_int(f, text, len, out, err);
    }
}
