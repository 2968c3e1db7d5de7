/* fieldtext: text to a field's stored bytes, the one reader of values written
 * as text. read_text, `comb store load` and the language's time literals all
 * go through it, so a value means the same wherever it is written.
 *
 * Spaces and tabs around a number, bool or time are skipped; otherwise the
 * text is exactly the value, with no quotes (the reader
 * of the file strips those). By type:
 *
 *   u8 .. u64, i8 .. i64   decimal with an optional sign (+7, -0), in the
 *                          type's whole range (u64 up to 18446744073709551615)
 *   f32, f64               C's strtod forms: 1.5, -2e-3, 0x1p-4, inf, -inf,
 *                          nan; rounded to the nearest value of the type (so a
 *                          tiny one becomes a subnormal or 0), but a finite
 *                          number beyond the type's range is an error, not inf
 *   bool                   true, false, 1, 0
 *   time                   a UTC date or date and time (st_fieldtext_time), or
 *                          integer seconds since 1970
 *   enum                   one of the field's symbols, by name
 *   char[N]                up to N bytes taken literally, no NUL byte
 *
 * Empty text is the field's zero (0, false, "", 1970-01-01), except for a
 * key field and an enum (no symbol is a zero), where it is an error. Every error reads
 * "field 'NAME': 'TEXT' is not ..." with the text cut and its control
 * characters escaped. */
#ifndef COMB_STORE_FIELDTEXT_H
#define COMB_STORE_FIELDTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "store/err.h"
#include "store/schema.h"

/* A "did you mean" for a word among candidates, or NULL (vm_suggest is one);
 * store/ has none of its own, so callers that want the hint pass theirs. */
typedef const char *st_suggest_fn(const char *word, size_t n, const char *const *cands,
                                  size_t ncands);

/* Parses text[0 .. len) as a value of f into out (f->width bytes, laid out
 * as in a row). Returns 0, or -1 with err set (ST_EINPUT; ST_ENOMEM). suggest
 * may be NULL; else it offers a symbol for an unknown enum name. */
int st_fieldtext_parse(const st_field *f, const char *text, size_t len, void *out,
                       st_suggest_fn *suggest, st_err *err);

/* A time, in seconds since 1970 UTC, from
 *   2026-12-02                 midnight
 *   2026-12-02T13:05           (a space may stand for the T)
 *   2026-12-02T13:05:00
 * each with an optional Z, and the years st_time_format writes outside
 * 0000..9999 (+10000-01-01T00:00:00Z, -0001-12-31). Whole seconds only, UTC
 * only. Returns 0, or -1 if the text is not such a time or is out of range. */
int st_fieldtext_time(const char *text, size_t len, int64_t *out);
/* The compact form tap files and many logs write: exactly YYYYMMDDhhmmss or
 * YYYYMMDD (midnight), digits only, UTC, checked as st_fieldtext_time checks.
 * Not a field's form: there 20261201 is a number of seconds. */
int st_fieldtext_compact_time(const char *text, size_t len, int64_t *out);

#endif
