/* err: the store layer's error buffer.
 *
 * Every store function that can fail returns -1 (or NULL) and fills the
 * caller's st_err with a code and one line naming the file and, where one is
 * involved, the block ("calls.ts: block 7: checksum mismatch"). The caller owns
 * the st_err (usually on its stack); nothing in it needs freeing. */
#ifndef COMB_STORE_ERR_H
#define COMB_STORE_ERR_H

enum st_code {
    ST_OK = 0,
    ST_ENOMEM,   /* an allocation failed */
    ST_EIO,      /* the operating system refused a read, write, fsync or rename */
    ST_ECORRUPT, /* a file is damaged: bad checksum, truncated, inconsistent */
    ST_EVERSION, /* a file written by a newer comb (or with unknown features) */
    ST_EINPUT,   /* bad input from the caller: schema text, key order, values */
    ST_ECANCEL,  /* the caller asked to stop (an interrupt): nothing was committed */
};

typedef struct st_err {
    enum st_code code;
    char msg[512];
} st_err;

/* Sets code and message (printf-style). Returns -1 so callers can write
 * `return st_err_set(err, ...)`. */
int st_err_set(st_err *err, enum st_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Puts text before the message ("calls.ts: block 3: " + "checksum mismatch"). */
void st_err_prefix(st_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds text after the message. */
void st_err_suffix(st_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The usual "out of memory" line, naming what was being allocated. */
int st_err_nomem(st_err *err, const char *what);

#endif
