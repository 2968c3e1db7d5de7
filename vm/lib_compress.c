/* lib_compress: files compressed and back, in the LZ4 frame format (what
 * `lz4 -d` reads; a checksum of the content in it), through liblz4, the
 * store's own compressor: archives that cost little CPU to make (the
 * cycle's dock keeps every tap so). Streamed in pieces, so a large file
 * costs no memory; a failure raises with the path and the reason, after
 * closing what it opened and removing the output it began. */
#include "config.h"

#define LZ4F_STATIC_LINKING_ONLY    /* the allocator hook: LZ4F_create*_advanced */
#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/mem.h"
#include "vm/lib.h"

#define PIECE (1 << 16)
#define HDR 16      /* before each block liblz4 gets: its size, for mem_free */

static void *lz_alloc(void *state, size_t n)
{
    (void)state;
    unsigned char *p = mem_alloc(n + HDR);
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof n);
    return p + HDR;
}

static void *lz_calloc(void *state, size_t n)
{
    void *p = lz_alloc(state, n);
    if (p)
        memset(p, 0, n);
    return p;
}

static void lz_free(void *state, void *a)
{
    (void)state;
    if (!a)
        return;
    unsigned char *p = (unsigned char *)a - HDR;
    size_t n;
    memcpy(&n, p, sizeof n);
    mem_free(p, n + HDR);
}

static const LZ4F_CustomMem lz_mem = {lz_alloc, lz_calloc, lz_free, NULL};

/* One file through the (de)compressor: what is open, freed by done(). */
typedef struct Pipe {
    const char *from, *to;
    int in, out;
    unsigned char *ibuf, *obuf;
    size_t ocap;
    LZ4F_cctx *c;
    LZ4F_dctx *d;
    char why[160];      /* the first failure, said when all is closed */
} Pipe;

static bool fail(Pipe *p, const char *path, const char *what)
{
    if (!p->why[0])
        snprintf(p->why, sizeof p->why, "%s: %s", path, what);
    return false;
}

static bool put(Pipe *p, const unsigned char *b, size_t n)
{
    while (n) {
        ssize_t w = write(p->out, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return fail(p, p->to, strerror(errno));
        b += w;
        n -= (size_t)w;
    }
    return true;
}

/* The next piece of the input: its length, 0 at the end, -1 on an error. */
static ssize_t take(Pipe *p)
{
    ssize_t got;
    while ((got = read(p->in, p->ibuf, PIECE)) < 0 && errno == EINTR)
        ;
    if (got < 0)
        fail(p, p->from, strerror(errno));
    return got;
}

/* liblz4's rc, a failure when it is one: what (its name). */
static bool lz_ok(Pipe *p, size_t rc, const char *what)
{
    char msg[128];
    if (!LZ4F_isError(rc))
        return true;
    snprintf(msg, sizeof msg, "%s (liblz4: %s)", what, LZ4F_getErrorName(rc));
    return fail(p, p->from, msg);
}

static void open_pipe(VM *vm, Pipe *p, Value *argv, size_t ocap)
{
    memset(p, 0, sizeof *p);
    p->from = lib_cstr_arg(vm, argv, 0)->data;
    p->to = lib_cstr_arg(vm, argv, 1)->data;
    p->out = -1;
    p->in = open(p->from, O_RDONLY | O_CLOEXEC);
    if (p->in < 0)
        vm_error(vm, "%s: %s", p->from, strerror(errno));
    p->out = open(p->to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    p->ibuf = mem_alloc(PIECE);
    p->obuf = mem_alloc(p->ocap = ocap);
    if (p->out < 0)
        fail(p, p->to, strerror(errno));
    if (!p->ibuf || !p->obuf)
        fail(p, p->from, "out of memory");
}

/* Closes and frees what p holds; raises with its failure, if any, after
 * removing the output begun (nothing half-written is left). */
static void done(VM *vm, Pipe *p)
{
    if (p->out >= 0 && close(p->out) != 0)
        fail(p, p->to, strerror(errno));
    if (p->out >= 0 && p->why[0])
        unlink(p->to);
    close(p->in);
    mem_free(p->ibuf, PIECE);
    mem_free(p->obuf, p->ocap);
    LZ4F_freeCompressionContext(p->c);
    LZ4F_freeDecompressionContext(p->d);
    if (p->why[0])
        vm_error(vm, "%s", p->why);
}

/* compress_file(from, to): from's bytes into the file to as one LZ4 frame. */
Value nat_compress_file(VM *vm, int argc, Value *argv)
{
    (void)argc;
    LZ4F_preferences_t prefs = {.frameInfo = {.contentChecksumFlag = LZ4F_contentChecksumEnabled}};
    Pipe p;
    open_pipe(vm, &p, argv, LZ4F_compressBound(PIECE, &prefs) + LZ4F_HEADER_SIZE_MAX);
    if (!p.why[0] && !(p.c = LZ4F_createCompressionContext_advanced(lz_mem, LZ4F_VERSION)))
        fail(&p, p.from, "out of memory");
    size_t rc = 0;
    ssize_t got = 0;
    bool ok = !p.why[0] && lz_ok(&p, rc = LZ4F_compressBegin(p.c, p.obuf, p.ocap, &prefs), "cannot compress") &&
              put(&p, p.obuf, rc);
    while (ok && (got = take(&p)) > 0)
        ok = lz_ok(&p, rc = LZ4F_compressUpdate(p.c, p.obuf, p.ocap, p.ibuf, (size_t)got, NULL),
                   "cannot compress") &&
             put(&p, p.obuf, rc);
    if (ok && got == 0 && lz_ok(&p, rc = LZ4F_compressEnd(p.c, p.obuf, p.ocap, NULL), "cannot compress"))
        put(&p, p.obuf, rc);
    done(vm, &p);
    return v_nil();
}

/* decompress_file(from, to): the bytes of the LZ4 frame in from into to;
 * raises on a frame that is damaged or cut short. */
Value nat_decompress_file(VM *vm, int argc, Value *argv)
{
    (void)argc;
    Pipe p;
    open_pipe(vm, &p, argv, PIECE);
    if (!p.why[0] && !(p.d = LZ4F_createDecompressionContext_advanced(lz_mem, LZ4F_VERSION)))
        fail(&p, p.from, "out of memory");
    size_t hint = 1;    /* liblz4's: 0 once a whole frame is read */
    ssize_t got = 0;
    bool ok = !p.why[0];
    while (ok && (got = take(&p)) > 0) {
        const unsigned char *src = p.ibuf, *end = p.ibuf + got;
        while (ok && src < end) {
            size_t on = p.ocap, in = (size_t)(end - src);
            ok = lz_ok(&p, hint = LZ4F_decompress(p.d, p.obuf, &on, src, &in, NULL),
                       "not an LZ4 frame, or a damaged one") &&
                 put(&p, p.obuf, on);
            src += in;
            if (ok && hint == 0 && src < end)
                ok = fail(&p, p.from, "bytes after the end of the LZ4 frame");
        }
    }
    if (ok && got == 0 && hint != 0)
        fail(&p, p.from, "not a whole LZ4 frame (cut short or not LZ4)");
    done(vm, &p);
    return v_nil();
}
