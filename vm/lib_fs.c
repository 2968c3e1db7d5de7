/* lib_fs: the file system as scripts need it to move files through a
 * pipeline (the cycle's loading dock): directory listings, a file's facts,
 * renaming, making and removing, and SHA-256 digests of strings and files.
 * Failures raise with the path and the system's reason; what is absent is
 * an answer (nil, false), not an error, where a script would test for it. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm/lib.h"
#include "vm/sha256.h"

static int by_name(const void *a, const void *b)
{
    const VStr *x = AS_STR(*(const Value *)a), *y = AS_STR(*(const Value *)b);
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->data, y->data, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* ls(dir): the names in dir but . and .., sorted bytewise, so that a
 * script handles files in the same order on every run. */
Value nat_ls(VM *vm, int argc, Value *argv)
{
    (void)argc;
    const char *dir = lib_cstr_arg(vm, argv, 0)->data;
    DIR *d = opendir(dir);
    if (!d)
        vm_error(vm, "%s: %s", dir, strerror(errno));
    VArray *out = vm_array_new(vm, 16);
    struct dirent *e;
    for (errno = 0; (e = readdir(d)); errno = 0)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            vm_array_push(vm, out, v_obj(vm_str_cstr(vm, e->d_name)));
    int err = errno;
    closedir(d);
    if (err)
        vm_error(vm, "%s: %s", dir, strerror(err));
    qsort(out->items, out->len, sizeof *out->items, by_name);
    return v_obj(out);
}

/* stat(path): {type: "file" | "dir" | "link" | "other", size, mtime (seconds
 * since 1970 UTC)} of path itself (a link is not followed), or nil when
 * there is nothing there. */
Value nat_stat(VM *vm, int argc, Value *argv)
{
    (void)argc;
    const char *path = lib_cstr_arg(vm, argv, 0)->data;
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return v_nil();
        vm_error(vm, "%s: %s", path, strerror(errno));
    }
    const char *type = S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "dir"
                     : S_ISLNK(st.st_mode) ? "link" : "other";
    VMap *m = vm_map_new(vm, 3);
    lib_put(vm, m, "type", v_obj(vm_str_cstr(vm, type)));
    lib_put(vm, m, "size", v_int((int64_t)st.st_size));
    lib_put(vm, m, "mtime", v_int((int64_t)st.st_mtime));
    return v_obj(m);
}

/* rename(from, to): rename(2), which replaces to at once if it exists:
 * the way to publish a file whole. */
Value nat_rename(VM *vm, int argc, Value *argv)
{
    (void)argc;
    const char *from = lib_cstr_arg(vm, argv, 0)->data;
    const char *to = lib_cstr_arg(vm, argv, 1)->data;
    if (rename(from, to) < 0)
        vm_error(vm, "%s -> %s: %s", from, to, strerror(errno));
    return v_nil();
}

/* mkdir(path): make the directory and any missing parents; whether it
 * made the last one (false when it was there already). */
Value nat_mkdir(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VStr *arg = lib_cstr_arg(vm, argv, 0);
    char *path = vm_alloc(vm, arg->len + 1);
    memcpy(path, arg->data, arg->len + 1);
    int err = 0;
    for (char *p = path + 1; *p && !err; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(path, 0777) < 0 && errno != EEXIST)
            err = errno;
        *p = '/';
    }
    bool made = false;
    if (!err) {
        if (mkdir(path, 0777) == 0)
            made = true;
        else if (errno != EEXIST)
            err = errno;
    }
    struct stat st;
    if (!err && !made && (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)))
        err = ENOTDIR;
    vm_free_mem(vm, path, arg->len + 1);
    if (err)
        vm_error(vm, "%s: %s", arg->data, strerror(err));
    return v_bool(made);
}

/* remove(path): remove a file or an empty directory; whether there was
 * one (false when there was nothing to remove). */
Value nat_remove(VM *vm, int argc, Value *argv)
{
    (void)argc;
    const char *path = lib_cstr_arg(vm, argv, 0)->data;
    if (remove(path) == 0)
        return v_bool(true);
    if (errno == ENOENT)
        return v_bool(false);
    vm_error(vm, "%s: %s", path, strerror(errno));
}

/* sha256(s): the SHA-256 digest of the bytes of s, in lowercase hex. */
Value nat_sha256(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VStr *s = vm_arg_str(vm, argv, 0);
    Sha256 h;
    char hex[65];
    sha256_init(&h);
    sha256_feed(&h, s->data, s->len);
    sha256_hex(&h, hex);
    return v_obj(vm_str_new(vm, hex, 64));
}

/* sha256_file(path): the digest of a file's bytes, read in pieces so that
 * a large file costs no memory. */
Value nat_sha256_file(VM *vm, int argc, Value *argv)
{
    (void)argc;
    const char *path = lib_cstr_arg(vm, argv, 0)->data;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        vm_error(vm, "%s: %s", path, strerror(errno));
    Sha256 h;
    sha256_init(&h);
    static char buf[1 << 16];
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int err = errno;
            close(fd);
            vm_error(vm, "%s: %s", path, strerror(err));
        }
        sha256_feed(&h, buf, (size_t)got);
    }
    close(fd);
    char hex[65];
    sha256_hex(&h, hex);
    return v_obj(vm_str_new(vm, hex, 64));
}
