/* lib_io: files: open, read, map_file, readline, write, flush, close, lines (streams a
 * file line by line), popen, and the standard streams.
 *
 * A file is a handle of type "file" around a stdio FILE. Writes go through
 * stdio, so write(stdout(), ...) and print() share one buffer and interleave
 * as written. Reads bypass stdio: they read(2) the descriptor into the
 * file's own buffer, so that lines() can memchr a whole chunk at once and a
 * read of a tty or pipe returns what has arrived instead of waiting for a
 * full stdio buffer. Files are opened for reading or for writing, not both,
 * which keeps the two paths from ever disagreeing about the offset.
 *
 * The standard input's buffer belongs to the process, not to a handle, so
 * that every stdin() handle (and every VM in the process) reads one stream
 * without losing what another buffered. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm/lib.h"
#include "vm/lib_store.h"
#include "vm/natives.h"

#define READ_CHUNK ((size_t)64 << 10)
#define READ_ALL_FIRST ((size_t)64 << 10)

enum {
    F_READ = 1,         /* opened for reading (else for writing) */
    F_STD = 2,          /* a standard stream: close flushes, never fcloses */
    F_PIPE = 4,         /* from popen: close returns the command's status */
    F_AUTOCLOSE = 8,    /* from lines(path): closed at the end of the file */
    F_DONE = 16,        /* closed by reaching the end of an F_AUTOCLOSE file */
};

typedef struct ReadBuf {
    char *data;         /* READ_CHUNK bytes, allocated on the first read */
    size_t pos, end;    /* the unread bytes are data[pos..end) */
} ReadBuf;

typedef struct File {
    FILE *fp;           /* NULL once closed */
    VStr *name;         /* the path, "<stdin>"..., or a pipe's command */
    ReadBuf own;
    ReadBuf *rb;        /* &own, or the process's stdin buffer */
    unsigned flags;
} File;

static char stdin_chars[READ_CHUNK];
static ReadBuf stdin_rb = {stdin_chars, 0, 0};

/* A command's end: it may have changed stores (vm_store_recheck). */
static int close_pipe(FILE *fp)
{
    int ws = pclose(fp);
    vm_store_recheck();
    return ws;
}

static void file_free(VM *vm, void *data)
{
    File *f = data;
    if (f->fp && !(f->flags & F_STD)) {
        if (f->flags & F_PIPE)
            close_pipe(f->fp);
        else
            fclose(f->fp);
    }
    if (f->own.data)
        vm_free_mem(vm, f->own.data, READ_CHUNK);
}

static void file_mark(VM *vm, void *data)
{
    File *f = data;
    if (f->name)
        vm_mark_obj(vm, &f->name->hdr);
}

static void file_show(VM *vm, void *data, VStrBuf *sb)
{
    File *f = data;
    vm_sb_addc(vm, sb, "<file ");
    vm_sb_add(vm, sb, f->name->data, f->name->len);
    vm_sb_addc(vm, sb, f->fp ? ">" : " (closed)>");
}

static bool file_next(VM *vm, void *data, int64_t *cursor, Value *a, Value *b);

static const VHandleType lib_file_type = {
    .name = "file", .free = file_free, .mark = file_mark, .next = file_next, .show = file_show,
};

/* ---- making files ----------------------------------------------------- */

/* A new file handle for the caller to give a FILE. The handle exists before
 * the FILE does, so a failed allocation cannot leak an open file. */
static File *file_new(VM *vm, VStr *name, unsigned flags, Value *out)
{
    VHandle *h = vm_handle_new(vm, &lib_file_type, sizeof(File));
    File *f = handle_data(h);
    f->name = name;
    f->rb = &f->own;
    f->flags = flags;
    *out = v_obj(h);
    return f;
}

/* Opens the path argv[0] as mode "r", "w" or "a". */
static Value open_path(VM *vm, Value *argv, const char *mode, unsigned flags)
{
    VStr *name = lib_cstr_arg(vm, argv, 0);
    const char *path = name->data;
    if (strcmp(mode, "r") && strcmp(mode, "w") && strcmp(mode, "a"))
        vm_error(vm, "bad mode '%s' (use \"r\", \"w\" or \"a\")", mode);
    Value v;
    File *f = file_new(vm, name, flags | (*mode == 'r' ? F_READ : 0), &v);
    char cmode[3] = {mode[0], 'e', '\0'};  /* close on exec: system() children don't inherit it */
    f->fp = fopen(path, cmode);
    if (!f->fp)
        vm_error(vm, "cannot open '%s': %s", path, strerror(errno));
    return v;
}

Value nat_open(VM *vm, int argc, Value *argv)
{
    Value store;
    if (argc == 1 && vm_store_open(vm, lib_cstr_arg(vm, argv, 0), &store))
        return store;
    const char *mode = argc > 1 ? lib_cstr_arg(vm, argv, 1)->data : "r";
    return open_path(vm, argv, mode, 0);
}

Value nat_popen(VM *vm, int argc, Value *argv)
{
    VStr *name = lib_cstr_arg(vm, argv, 0);
    const char *cmd = name->data;
    const char *mode = argc > 1 ? lib_cstr_arg(vm, argv, 1)->data : "r";
    if (strcmp(mode, "r") && strcmp(mode, "w"))
        vm_error(vm, "bad mode '%s' (use \"r\" or \"w\")", mode);
    Value v;
    File *f = file_new(vm, name, F_PIPE | (*mode == 'r' ? F_READ : 0), &v);
    fflush(NULL);   /* what we wrote comes before what the command writes */
    f->fp = popen(cmd, *mode == 'r' ? "re" : "we");
    if (!f->fp)
        vm_error(vm, "cannot run '%s': %s", cmd, strerror(errno));
    return v;
}

static Value std_stream(VM *vm, FILE *fp, const char *name, unsigned flags)
{
    Value v;
    File *f = file_new(vm, vm_str_cstr(vm, name), F_STD | flags, &v);
    f->fp = fp;
    if (fp == stdin)
        f->rb = &stdin_rb;
    return v;
}

Value nat_stdin(VM *vm, int argc, Value *argv)
{
    (void)argc, (void)argv;
    return std_stream(vm, stdin, "<stdin>", F_READ);
}

Value nat_stdout(VM *vm, int argc, Value *argv)
{
    (void)argc, (void)argv;
    return std_stream(vm, stdout, "<stdout>", 0);
}

Value nat_stderr(VM *vm, int argc, Value *argv)
{
    (void)argc, (void)argv;
    return std_stream(vm, stderr, "<stderr>", 0);
}

/* ---- reading ---------------------------------------------------------- */

/* argv[i] as an open file; reading tells which way it must be open. */
static File *file_arg(VM *vm, Value *argv, int i, bool reading)
{
    File *f = vm_arg_handle(vm, argv, i, &lib_file_type);
    if (!f->fp)
        vm_error(vm, "file '%s' is closed", f->name->data);
    if (reading != !!(f->flags & F_READ))
        vm_error(vm, "file '%s' is not open for %s", f->name->data,
                 reading ? "reading" : "writing");
    return f;
}

/* read(2) up to n bytes of f into p: the count, 0 at the end of the file. */
static size_t read_some(VM *vm, File *f, char *p, size_t n)
{
    if (f->rb == &stdin_rb)
        fflush(stdout);     /* a prompt written without a newline shows first */
    for (;;) {
        ssize_t r = read(fileno(f->fp), p, n);
        if (r >= 0)
            return (size_t)r;
        if (errno != EINTR)
            vm_error(vm, "cannot read '%s': %s", f->name->data, strerror(errno));
        if (vm_poll_flag & POLL_SIGINT)  /* left set: the loop stops at its next poll */
            vm_error(vm, "interrupted");
    }
}

/* Refills f's empty buffer: false at the end of the file. */
static bool refill(VM *vm, File *f)
{
    ReadBuf *rb = f->rb;
    if (!rb->data)
        rb->data = vm_alloc(vm, READ_CHUNK);
    rb->pos = rb->end = 0;
    rb->end = read_some(vm, f, rb->data, READ_CHUNK);
    return rb->end > 0;
}

/* The next line of f without its "\n" (a last line may lack it), or NULL
 * at the end of the file. A line longer than the buffer is built up chunk
 * by chunk. */
static VStr *read_line(VM *vm, File *f)
{
    ReadBuf *rb = f->rb;
    VStrBuf sb = {NULL};
    for (;;) {
        if (rb->pos == rb->end && !refill(vm, f))
            return sb.s ? vm_sb_done(vm, &sb) : NULL;
        const char *p = rb->data + rb->pos;
        size_t avail = rb->end - rb->pos;
        const char *nl = memchr(p, '\n', avail);
        size_t n = nl ? (size_t)(nl - p) : avail;
        rb->pos += n + (nl != NULL);
        if (nl && !sb.s)
            return vm_str_new(vm, p, n);
        if (!sb.s)
            vm_sb_init(vm, &sb, 2 * avail);
        vm_sb_add(vm, &sb, p, n);
        if (nl)
            return vm_sb_done(vm, &sb);
    }
}

/* Ends an F_AUTOCLOSE file at its end: a read-only file loses nothing. */
static void auto_close(File *f)
{
    if (f->flags & F_PIPE)
        close_pipe(f->fp);
    else
        fclose(f->fp);
    f->fp = NULL;
    f->flags |= F_DONE;
}

/* `for line, n in file`: each line, and its number from 1. */
static bool file_next(VM *vm, void *data, int64_t *cursor, Value *a, Value *b)
{
    File *f = data;
    if (f->flags & F_DONE)
        return false;
    if (!f->fp)
        vm_error(vm, "for: file '%s' is closed", f->name->data);
    if (!(f->flags & F_READ))
        vm_error(vm, "for: file '%s' is not open for reading", f->name->data);
    VStr *line = read_line(vm, f);
    if (!line) {
        if (f->flags & F_AUTOCLOSE)
            auto_close(f);
        return false;
    }
    *a = v_obj(line);
    *b = v_int(++*cursor);
    return true;
}

/* A string of len bytes, as s (of at least len bytes) shortened. */
static VStr *str_truncate(VStr *s, size_t len)
{
    s->len = s->used = len;
    s->chars[len] = '\0';
    return s;
}

/* Room for more than have bytes: s copied into a string twice as large. */
static VStr *str_grow(VM *vm, VStr *s, size_t have)
{
    VStr *t = vm_str_alloc(vm, 2 * s->len);
    memcpy(str_wbuf(t), s->data, have);
    return t;
}

/* How many bytes are left to read in f, as a first guess for read(f). */
static size_t size_hint(File *f)
{
    struct stat st;
    int fd = fileno(f->fp);
    off_t at = lseek(fd, 0, SEEK_CUR);
    size_t n = f->rb->end - f->rb->pos + 1;
    if (at >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > at)
        return n + (size_t)(st.st_size - at);
    return n + READ_ALL_FIRST;
}

/* Whether a read(2) of f would return at once: something has arrived, or
 * the end (always, for a regular file). */
static bool ready(File *f)
{
    struct pollfd p = {.fd = fileno(f->fp), .events = POLLIN};
    int r;
    do
        r = poll(&p, 1, 0);
    while (r < 0 && errno == EINTR);
    return r != 0;      /* an error: let read(2) report it */
}

/* Up to n bytes of f (fewer only at its end; with some, also when more
 * would mean waiting: once a byte is had, it reads only what has already
 * arrived): buffered bytes first, then small reads through the buffer and
 * large ones straight into the string. */
static VStr *read_bytes(VM *vm, File *f, size_t n, bool some)
{
    ReadBuf *rb = f->rb;
    size_t hint = size_hint(f), got = 0;
    VStr *s = vm_str_alloc(vm, n < hint ? n : hint);
    while (got < n) {
        if (some && got && rb->pos == rb->end && !ready(f))
            break;
        if (rb->pos < rb->end) {
            size_t k = rb->end - rb->pos;
            if (k > n - got)
                k = n - got;
            if (got + k > s->len)
                s = str_grow(vm, s, got);
            memcpy(str_wbuf(s) + got, rb->data + rb->pos, k);
            rb->pos += k;
            got += k;
        } else if (n - got < READ_CHUNK) {
            if (!refill(vm, f))
                break;
        } else {
            if (got == s->len)
                s = str_grow(vm, s, got);
            size_t want = s->len - got < n - got ? s->len - got : n - got;
            size_t k = read_some(vm, f, str_wbuf(s) + got, want);
            if (!k)
                break;
            got += k;
        }
    }
    return str_truncate(s, got);
}

Value nat_read(VM *vm, int argc, Value *argv)
{
    File *f = file_arg(vm, argv, 0, true);
    if (argc < 2)
        return v_obj(read_bytes(vm, f, SIZE_MAX, false));
    int64_t n = vm_arg_int(vm, argv, 1);
    if (n < 0)
        vm_error(vm, "the count must not be negative, got %lld", (long long)n);
    if (n == 0)
        return v_obj(vm_str_new(vm, "", 0));
    VStr *s = read_bytes(vm, f, (size_t)n, argc > 2 && v_truthy(argv[2]));
    return s->len ? v_obj(s) : v_nil();
}

/* map_file(f): the rest of the regular file f as one string, its bytes
 * mapped, not copied (what f had buffered and not yet given out first),
 * and f at its end; "" at the end; nil if f is no regular file or cannot be
 * mapped (read it then). A file truncated while mapped reads as zeros past
 * its new end, and the next call or loop raises
 * "cannot read 'NAME': changed size while being read". */
Value nat_map_file(VM *vm, int argc, Value *argv)
{
    (void)argc;
    File *f = file_arg(vm, argv, 0, true);
    int fd = fileno(f->fp);
    struct stat st;
    off_t at = lseek(fd, 0, SEEK_CUR);
    size_t held = f->rb->end - f->rb->pos;
    if (at < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)at < held)
        return v_nil();
    uint64_t from = (uint64_t)at - held;
    if ((uint64_t)st.st_size <= from)
        return v_obj(vm_str_new(vm, "", 0));
    VStr *s = vm_str_mapped(vm, fd, from, (size_t)((uint64_t)st.st_size - from), f->name);
    if (!s || lseek(fd, st.st_size, SEEK_SET) < 0)
        return v_nil();
    f->rb->pos = f->rb->end;
    return v_obj(s);
}

Value nat_readline(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VStr *line = read_line(vm, file_arg(vm, argv, 0, true));
    return line ? v_obj(line) : v_nil();
}

Value nat_lines(VM *vm, int argc, Value *argv)
{
    (void)argc;
    if (IS_STR(argv[0]))
        return open_path(vm, argv, "r", F_AUTOCLOSE);
    if (!IS_HANDLE(argv[0]) || AS_HANDLE(argv[0])->type != &lib_file_type)
        vm_arg_error(vm, 0, "a path or a file", argv[0]);
    file_arg(vm, argv, 0, true);
    return argv[0];
}

/* ---- writing and closing ---------------------------------------------- */

_Noreturn static void write_error(VM *vm, File *f)
{
    vm_error(vm, "cannot write '%s': %s", f->name->data, strerror(errno));
}

Value nat_write(VM *vm, int argc, Value *argv)
{
    File *f = file_arg(vm, argv, 0, false);
    for (int i = 1; i < argc; i++) {
        VStr *s = IS_STR(argv[i]) ? AS_STR(argv[i]) : vm_tostring(vm, argv[i]);
        if (fwrite(s->data, 1, s->len, f->fp) != s->len)
            write_error(vm, f);
    }
    return v_nil();
}

Value nat_flush(VM *vm, int argc, Value *argv)
{
    if (argc == 0) {
        fflush(stdout);
        return v_nil();
    }
    File *f = file_arg(vm, argv, 0, false);
    if (fflush(f->fp))
        write_error(vm, f);
    return v_nil();
}

Value nat_close(VM *vm, int argc, Value *argv)
{
    (void)argc;
    File *f = vm_arg_handle(vm, argv, 0, &lib_file_type);
    FILE *fp = f->fp;
    if (!fp)
        return v_nil();     /* closing twice is harmless */
    f->fp = NULL;
    if (f->flags & F_STD) {     /* the stream stays open for print and others */
        if (!(f->flags & F_READ) && fflush(fp))
            write_error(vm, f);
        return v_nil();
    }
    if (f->flags & F_PIPE) {
        int ws = close_pipe(fp);
        if (ws < 0)
            vm_error(vm, "cannot close '%s': %s", f->name->data, strerror(errno));
        return v_int(lib_exit_status(ws));
    }
    if (fclose(fp))
        write_error(vm, f);
    return v_nil();
}
