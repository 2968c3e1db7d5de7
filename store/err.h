/* err: the store's error buffer, naming the file (and block) that failed.
 *
 * store/ reports failure by return code (-1 or NULL) and fills an st_err the
 * caller owns, so a message survives the cleanup that follows it and no error
 * path allocates. A NULL st_err is allowed where the caller does not care. */
#ifndef COMB_STORE_ERR_H
#define COMB_STORE_ERR_H

typedef struct st_err {
    int code;       /* an errno value (ENOMEM, EIO, ...), or 0 if none applies */
    char msg[512];  /* one line, no trailing newline */
} st_err;

/* Formats msg and sets code; with sys, appends ": strerror(code)". Returns -1
 * so callers can `return st_errf(...)`. */
int st_err_set(st_err *e, int code, int sys, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define st_errf(e, code, ...) st_err_set((e), (code), 0, __VA_ARGS__)
#define st_errsys(e, code, ...) st_err_set((e), (code), 1, __VA_ARGS__)

/* Copies an error (for errors saved and reported again later). */
void st_errcpy(st_err *dst, const st_err *src);

#endif
