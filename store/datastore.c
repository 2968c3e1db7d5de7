/* datastore: volumes x partitions, snapshot readers, locked atomic commits. */
#include "config.h"
#include "store/datastore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/lock.h"
#include "store/mem.h"
#include "store/proj.h"
#include "store/sysio.h"
#include "store/tagfile.h"
#include "store/watch.h"

/* The bytes of DIR/LOCK: byte 0 is the store (a whole-store writer holds it
 * exclusively, a volume writer shared), byte 1 serialises commits, byte 2 + v
 * is volume v. Each writer also writes its pid as text into the 16 bytes at
 * 16 x its byte, so a refused writer can say who holds the lock. */
#define BYTE_STORE 0u
#define BYTE_COMMIT 1u
#define BYTE_VOLUME(v) (2u + (v))
#define PID_SLOT 16

#define MAX_OPEN_RETRIES 1000 /* manifests replaced while we pin: give up eventually */
#define DIR_MAX (PATH_MAX - 64)  /* leaves room for "/vNNN/pNNN/KIND.GEN" */

struct st_store {
    char dir[DIR_MAX];
    char store_path[PATH_MAX], manifest_path[PATH_MAX], lock_path[PATH_MAX],
        readers_path[PATH_MAX];
    st_meta meta;
    st_manifest m;        /* the snapshot */
    st_lockfile readers;  /* holds the pin: a shared lock on byte m.generation */
    uint32_t refs;        /* holders - 1 (st_store_ref) */
};

struct stage {
    uint32_t vol, part;
    st_kind kind;
    uint64_t gen, size; /* gen 0: drop */
    st_mkeys keys;      /* a tags file's partition keys (a store placed by windows) */
    char *path;
};

struct st_txn {
    st_store *s;
    uint32_t scope;       /* a volume or ST_ALL_VOLUMES */
    st_lockfile lock;     /* its bytes: the writer lock */
    st_lockfile readers;  /* a second open file, so our own snapshot's pin counts */
    uint64_t gen;         /* the generation staged files are named after */
    struct stage *st;
    size_t n, cap;
    int32_t *staged;      /* [vol][part][kind]: index into st, or -1 */
    st_mkeys *found;      /* [vol][part]: find_keys' (NULL: none read) */
    char label[ST_TEXT_MAX + 1];
    int has_label;
};

/* ---- names -------------------------------------------------------------- */

/* Formats a path into buf[PATH_MAX]; a path that does not fit is an error. */
static int pathf(char *buf, st_err *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *buf, st_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, PATH_MAX, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= PATH_MAX)
        return st_sys_err(err, ENAMETOOLONG, "%s", buf);
    return 0;
}

static int part_dir(const st_store *s, uint32_t vol, uint32_t part, char *buf, st_err *err)
{
    return pathf(buf, err, "%s/v%03u/p%03u", s->dir, vol, part);
}

static int file_path(const st_store *s, uint32_t vol, uint32_t part, st_kind kind, uint64_t gen,
                     char *buf, st_err *err)
{
    return pathf(buf, err, "%s/v%03u/p%03u/%s.%llu", s->dir, vol, part, st_kind_names[kind],
                 (unsigned long long)gen);
}

/* Is name a partition file "KIND.GEN" or a writer's temporary "KIND.GEN.x"?
 * 1 with kind, gen and *tmp set; 0 for names that are not ours. */
static int parse_name(const char *name, st_kind *kind, uint64_t *gen, int *tmp)
{
    for (int k = 0; k < ST_NKINDS; k++) {
        size_t kl = strlen(st_kind_names[k]);
        if (strncmp(name, st_kind_names[k], kl) != 0 || name[kl] != '.')
            continue;
        const char *p = name + kl + 1;
        uint64_t g = 0;
        for (; *p >= '0' && *p <= '9' && g < UINT64_MAX / 10; p++)
            g = g * 10 + (uint64_t)(*p - '0');
        if (p == name + kl + 1 || (*p && *p != '.'))
            return 0;
        *kind = (st_kind)k;
        *gen = g;
        *tmp = *p == '.' && strcmp(p, ".proj") != 0; /* a file's projection goes with it */
        return 1;
    }
    return 0;
}

static int check_part(const st_store *s, uint32_t vol, uint32_t part, st_kind kind, st_err *err)
{
    if (vol >= s->meta.volumes || part >= s->meta.partitions || (unsigned)kind >= ST_NKINDS)
        return st_err_set(err, ST_EINPUT,
                          "%s: no volume %u partition %u kind %d (the store has %u x %u)",
                          s->dir, vol, part, (int)kind, s->meta.volumes, s->meta.partitions);
    return 0;
}

/* ---- placement ---------------------------------------------------------- */

uint32_t st_partition_of(const void *bytes, size_t len, uint32_t nparts_total)
{
    return (uint32_t)(XXH3_64bits(bytes, len) % nparts_total);
}

void st_partition_split(uint32_t global, uint32_t partitions, uint32_t *vol, uint32_t *part)
{
    *vol = global / partitions;
    *part = global % partitions;
}

static int64_t floor_div(int64_t v, int64_t b) { return v / b - (v % b < 0); }

/* Window w's global partition of n (uw for an unsigned key's window). */
static uint32_t window_part(bool uns, int64_t w, uint64_t uw, uint32_t n)
{
    if (uns)
        return (uint32_t)(uw % n);
    int64_t g = w % (int64_t)n;
    return (uint32_t)(g < 0 ? g + n : g);
}

uint32_t st_partition_of_time(int64_t value, uint64_t bucket, uint32_t nparts_total)
{
    return window_part(false, floor_div(value, (int64_t)bucket), 0, nparts_total);
}

int st_partition_check_bucket(const st_field *f, uint64_t bucket, st_err *err)
{
    if (bucket > INT64_MAX)
        return st_err_set(err, ST_EINPUT, "the partition bucket %llu is too large",
                          (unsigned long long)bucket);
    if (bucket && (f->type > ST_I64 && f->type != ST_TIME))
        return st_err_set(err, ST_EINPUT, "a partition bucket needs an integer or time partition "
                          "key; '%s' is not one", f->name);
    return 0;
}

const char *st_partition_keytype(const st_field *f)
{
    return f->type < ST_I64 ? st_meta_keytypes[f->type] : NULL;
}

/* A key of a store placed by windows: its window floor(value / bucket),
 * signed (*w) or, for an unsigned key type, unsigned (*uw). */
static bool key_window(const st_meta *m, const void *bytes, size_t len, int64_t *w, uint64_t *uw)
{
    unsigned char b[8] = {0};
    memcpy(b, bytes, len < 8 ? len : 8);
    uint64_t u;
    memcpy(&u, b, 8);
    if (m->keytype[0] == 'u') {
        *uw = u / m->bucket;
        return true;
    }
    if (len < 8 && (b[len - 1] & 0x80)) /* sign-extend a narrower signed key */
        u |= ~(uint64_t)0 << (8 * len);
    *w = floor_div((int64_t)u, (int64_t)m->bucket);
    return false;
}

void st_store_place(const st_store *s, const void *bytes, size_t len, uint32_t *vol,
                    uint32_t *part)
{
    uint32_t n = s->meta.volumes * s->meta.partitions, g;
    if (s->meta.bucket) {
        int64_t w = 0;
        uint64_t uw = 0;
        bool uns = key_window(&s->meta, bytes, len, &w, &uw);
        g = window_part(uns, w, uw, n);
    } else {
        g = st_partition_of(bytes, len, n);
    }
    st_partition_split(g, s->meta.partitions, vol, part);
}

bool st_store_place_range(const st_store *s, const void *lo, const void *hi, size_t len,
                          uint32_t *out, uint32_t *nout)
{
    uint32_t n = s->meta.volumes * s->meta.partitions;
    if (!s->meta.bucket)
        return false;
    *nout = 0;
    int64_t wlo = INT64_MIN, whi = INT64_MAX;
    uint64_t ulo = 0, uhi = UINT64_MAX / s->meta.bucket, span;
    bool uns = s->meta.keytype[0] == 'u';
    if (!uns) { /* the least and greatest windows of the key's type */
        int64_t bk = (int64_t)s->meta.bucket;
        int64_t least = len < 8 ? -((int64_t)1 << (8 * len - 1)) : INT64_MIN;
        int64_t most = len < 8 ? ((int64_t)1 << (8 * len - 1)) - 1 : INT64_MAX;
        wlo = floor_div(least, bk);
        whi = floor_div(most, bk);
    }
    if (lo)
        key_window(&s->meta, lo, len, &wlo, &ulo);
    if (hi)
        key_window(&s->meta, hi, len, &whi, &uhi);
    if (uns ? ulo > uhi : wlo > whi)
        return true;
    span = uns ? uhi - ulo : (uint64_t)whi - (uint64_t)wlo;
    if (span >= n - 1) {
        for (uint32_t g = 0; g < n; g++)
            out[(*nout)++] = g;
        return true;
    }
    /* at most n windows, each a different partition: in order from the first */
    uint32_t g0 = window_part(uns, wlo, ulo, n);
    for (uint64_t k = 0; k <= span; k++)
        out[(*nout)++] = (uint32_t)((g0 + k) % n);
    return true;
}

/* ---- create ------------------------------------------------------------- */

static int remove_one(const char *p, const struct stat *sb, int type, struct FTW *f)
{
    (void)sb, (void)type, (void)f;
    remove(p);
    return 0;
}

static int check_meta(const char *dir, const st_store_meta *meta, st_err *err)
{
    if (!meta->name || !meta->partkey || (!meta->schema && meta->schema_len))
        return st_err_set(err, ST_EINPUT, "%s: the store needs a name and a partition key", dir);
    if (st_meta_check_text("store name", meta->name, 0, 1, err) < 0 ||
        st_meta_check_text("partition key", meta->partkey, 0, 0, err) < 0)
        return -1;
    if (meta->volumes < 1 || meta->volumes > ST_MAX_VOLUMES || meta->partitions < 1 ||
        meta->partitions > ST_MAX_PARTITIONS)
        return st_err_set(err, ST_EINPUT,
                          "%s: %u volumes x %u partitions: each must be 1 to %u", dir,
                          meta->volumes, meta->partitions, ST_MAX_VOLUMES);
    if (meta->bucket > INT64_MAX)
        return st_err_set(err, ST_EINPUT, "%s: the partition bucket is too large", dir);
    if (meta->schema_len > ST_SCHEMA_MAX)
        return st_err_set(err, ST_EINPUT, "%s: the schema is larger than %u bytes", dir,
                          ST_SCHEMA_MAX);
    if (strlen(dir) >= DIR_MAX - 20) /* mkdtemp's suffix */
        return st_err_set(err, ST_EINPUT, "%s: the path is too long", dir);
    return 0;
}

static int make_dir(const char *path, st_err *err)
{
    return mkdir(path, 0755) < 0 ? st_sys_err(err, errno, "mkdir %s", path) : 0;
}

/* Writes the files of a new store into tmp. */
static int fill_new(const char *tmp, const st_store_meta *meta, st_err *err)
{
    char path[PATH_MAX];
    for (uint32_t v = 0; v < meta->volumes; v++) {
        if (pathf(path, err, "%s/v%03u", tmp, v) < 0 || make_dir(path, err) < 0)
            return -1;
        for (uint32_t p = 0; p < meta->partitions; p++)
            if (pathf(path, err, "%s/v%03u/p%03u", tmp, v, p) < 0 || make_dir(path, err) < 0)
                return -1;
    }
    st_meta m = {.volumes = meta->volumes, .partitions = meta->partitions,
                 .bucket = meta->bucket, .schema = (char *)meta->schema,
                 .schema_len = meta->schema_len};
    snprintf(m.name, sizeof m.name, "%s", meta->name);
    snprintf(m.partkey, sizeof m.partkey, "%s", meta->partkey);
    snprintf(m.keytype, sizeof m.keytype, "%s", meta->bucket && meta->keytype ? meta->keytype : "");
    st_manifest man;
    char *text[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    int rc = -1;
    if (st_meta_format(&m, &text[0], &len[0], err) < 0 ||
        st_manifest_init(&man, meta->volumes, meta->partitions, err) < 0)
        goto done;
    rc = st_manifest_format(&man, &text[1], &len[1], err);
    st_manifest_free(&man);
    static const unsigned char zero[8];
    const char *names[5] = {"STORE", "MANIFEST", "LOCK", "READERS", "COMMITS"};
    const void *body[5] = {text[0], text[1], "", "", zero};
    size_t blen[5] = {len[0], len[1], 0, 0, sizeof zero};
    for (int i = 0; i < 5 && rc == 0; i++) {
        rc = pathf(path, err, "%s/%s", tmp, names[i]);
        if (rc == 0 && st_sys_replace(path, body[i], blen[i], err) < 0)
            rc = -1;
    }
    for (uint32_t v = 0; v < meta->volumes && rc == 0; v++) {
        rc = pathf(path, err, "%s/v%03u", tmp, v);
        if (rc == 0)
            rc = st_sys_fsync_dir(path, err);
    }
done:
    for (int i = 0; i < 2; i++)
        if (text[i])
            mem_free(text[i], len[i] + 1);
    return rc;
}

int st_store_create(const char *dir, const st_store_meta *meta, st_err *err)
{
    if (check_meta(dir, meta, err) < 0)
        return -1;
    struct stat sb;
    if (lstat(dir, &sb) == 0)
        return st_err_set(err, ST_EINPUT, "%s already exists: a new store needs a new directory",
                          dir);
    char tmp[PATH_MAX];
    if (pathf(tmp, err, "%s.creating-XXXXXX", dir) < 0)
        return -1;
    if (!mkdtemp(tmp))
        return st_sys_err(err, errno, "create %s", tmp);
    if (chmod(tmp, 0755) < 0) {
        st_sys_err(err, errno, "chmod %s", tmp);
        goto fail;
    }
    if (fill_new(tmp, meta, err) < 0 || st_sys_fsync_dir(tmp, err) < 0 ||
        st_sys_rename(tmp, dir, err) < 0)
        goto fail;
    return st_sys_fsync_parent(dir, err);
fail:
    nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    return -1;
}

/* ---- readers ------------------------------------------------------------ */

static int same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* The sign of the key ranges a store's manifest records: a store placed
 * by windows of an unsigned key 'u', of a signed one (time included) 'i';
 * one placed by hash records none (0). */
static char key_sign(const st_store *s)
{
    return !s->meta.bucket ? 0 : s->meta.keytype[0] == 'u' ? 'u' : 'i';
}

/* Loads the manifest (through fd if >= 0) and checks it fits the store. */
static int load_manifest(const st_store *s, int fd, st_manifest *m, st_err *err)
{
    if (st_manifest_load(m, fd, s->manifest_path, err) < 0)
        return -1;
    if (m->volumes != s->meta.volumes || m->partitions != s->meta.partitions)
        st_err_set(err, ST_ECORRUPT, "%s: %u x %u partitions, but STORE says %u x %u",
                   s->manifest_path, m->volumes, m->partitions, s->meta.volumes,
                   s->meta.partitions);
    else if (m->keysign && m->keysign != key_sign(s))
        st_err_set(err, ST_ECORRUPT, "%s: key ranges of %s keys, but STORE says %s",
                   s->manifest_path, m->keysign == 'u' ? "unsigned" : "signed",
                   !s->meta.bucket ? "it is placed by hash"
                   : key_sign(s) == 'u' ? "its key is unsigned" : "its key is signed");
    else
        return 0;
    st_manifest_free(m);
    return -1;
}

/* A tags file's range of the partition key from that column's zone. */
static st_mkeys keys_of(const st_zone *z)
{
    return (st_mkeys){z->min, z->max, z->min > z->max ? ST_KEYS_NONE : ST_KEYS_RANGE};
}

/* The range of the partition key in the tags file at path, from its
 * footer's zone maps. */
static int file_keys(const st_store *s, const char *path, st_mkeys *k, st_err *err)
{
    st_reader *r = st_reader_open(path, NULL, err);
    if (!r)
        return -1;
    int f = st_schema_find(st_reader_schema(r), s->meta.partkey, strlen(s->meta.partkey));
    st_zone z = {1, 0};
    int rc = f < 0 ? st_err_set(err, ST_EINPUT, "%s has no partition-key field '%s'", path,
                                s->meta.partkey)
                   : st_reader_zone(r, (uint32_t)f, &z, err);
    st_reader_close(r);
    if (rc == 0)
        *k = keys_of(&z);
    return rc;
}

/* Reads the current manifest into m and pins its generation through lf. A
 * pin only protects a generation that was still current after the pin was
 * taken, so: read, pin, and check the name still leads to what was read. */
static int load_pinned(const st_store *s, st_lockfile *lf, st_manifest *m, st_err *err)
{
    for (int tries = 0; tries < MAX_OPEN_RETRIES; tries++) {
        int fd = st_sys_open(s->manifest_path, O_RDONLY, 0, err);
        if (fd < 0)
            return -1;
        if (load_manifest(s, fd, m, err) < 0) {
            close(fd);
            return -1;
        }
        int rc = st_lock_try(lf, m->generation, 0, err);
        int current = rc == 0 && same_file(fd, s->manifest_path);
        close(fd);
        if (current)
            return 0;
        if (rc == 0)
            st_lock_release(lf, m->generation);
        st_manifest_free(m);
        if (rc != 0)
            return rc < 0 ? -1 : st_err_set(err, ST_EIO, "%s: cannot pin", s->readers_path);
    }
    return st_err_set(err, ST_EIO, "%s: replaced %d times while being read", s->manifest_path,
                      MAX_OPEN_RETRIES);
}

st_store *st_store_open(const char *dir, st_err *err)
{
    st_store *s = mem_calloc(1, sizeof *s);
    if (!s) {
        st_err_nomem(err, dir);
        return NULL;
    }
    s->readers.fd = -1;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n >= sizeof s->dir) {
        st_err_set(err, ST_EINPUT, "%s: the path is too long", dir);
        goto fail;
    }
    memcpy(s->dir, dir, n);
    if (pathf(s->store_path, err, "%s/STORE", s->dir) < 0 ||
        pathf(s->manifest_path, err, "%s/MANIFEST", s->dir) < 0 ||
        pathf(s->lock_path, err, "%s/LOCK", s->dir) < 0 ||
        pathf(s->readers_path, err, "%s/READERS", s->dir) < 0 ||
        st_meta_load(&s->meta, s->store_path, err) < 0)
        goto fail;
    if (st_lock_open(&s->readers, s->readers_path, 0, err) < 0 ||
        load_pinned(s, &s->readers, &s->m, err) < 0)
        goto fail;
    return s;
fail:
    st_store_close(s);
    return NULL;
}

st_store *st_store_ref(st_store *s)
{
    s->refs++;
    return s;
}

bool st_store_shared(const st_store *s)
{
    return s->refs > 0;
}

void st_store_close(st_store *s)
{
    if (!s)
        return;
    if (s->refs) {
        s->refs--;
        return;
    }
    st_lock_close(&s->readers);
    st_manifest_free(&s->m);
    st_meta_free(&s->meta);
    mem_free(s, sizeof *s);
}

void st_store_info(const st_store *s, st_storeinfo *info)
{
    memset(info, 0, sizeof *info);
    info->dir = s->dir;
    info->name = s->meta.name;
    info->partkey = s->meta.partkey;
    info->label = s->m.label;
    info->schema = s->meta.schema;
    info->schema_len = s->meta.schema_len;
    info->volumes = s->meta.volumes;
    info->partitions = s->meta.partitions;
    info->bucket = s->meta.bucket;
    info->keytype = s->meta.keytype;
    info->generation = s->m.generation;
    size_t nf = (size_t)s->m.volumes * s->m.partitions * ST_NKINDS;
    for (size_t i = 0; i < nf; i++) {
        if (s->m.files[i].gen) {
            info->files[i % ST_NKINDS]++;
            info->bytes[i % ST_NKINDS] += s->m.files[i].size;
        }
    }
}

/* Fills out from the snapshot; 1 if the file exists, 0 if not. */
static int describe(const st_store *s, uint32_t vol, uint32_t part, st_kind kind, st_file *out,
                    st_err *err)
{
    const st_mfile *f = st_manifest_at(&s->m, vol, part, kind);
    /* Field by field: a compound literal would zero all PATH_MAX bytes of
     * the path, for every file of every open. */
    out->vol = vol;
    out->part = part;
    out->kind = kind;
    out->gen = f->gen;
    out->size = f->size;
    const st_mkeys *k = kind == ST_TAGS ? st_manifest_keys_at(&s->m, vol, part) : NULL;
    out->keys = k ? *k : (st_mkeys){0, 0, ST_KEYS_UNKNOWN};
    out->path[0] = '\0';
    if (!f->gen)
        return 0;
    return file_path(s, vol, part, kind, f->gen, out->path, err) < 0 ? -1 : 1;
}

int st_store_file(const st_store *s, uint32_t vol, uint32_t part, st_kind kind, st_file *out,
                  st_err *err)
{
    if (check_part(s, vol, part, kind, err) < 0)
        return -1;
    return describe(s, vol, part, kind, out, err);
}

int st_store_files(const st_store *s, int (*fn)(const st_file *f, void *ctx), void *ctx)
{
    st_file f;
    st_err err;
    for (uint32_t v = 0; v < s->meta.volumes; v++)
        for (uint32_t p = 0; p < s->meta.partitions; p++)
            for (int k = 0; k < ST_NKINDS; k++) {
                if (describe(s, v, p, (st_kind)k, &f, &err) != 1)
                    continue;
                int rc = fn(&f, ctx);
                if (rc)
                    return rc;
            }
    return 0;
}

int st_store_volume_dir(const st_store *s, uint32_t vol, char *buf, size_t n, st_err *err)
{
    if (vol >= s->meta.volumes)
        return check_part(s, vol, 0, ST_TAGS, err);
    if ((size_t)snprintf(buf, n, "%s/v%03u", s->dir, vol) >= n)
        return st_err_set(err, ST_EINPUT, "%s: buffer too small for a volume path", s->dir);
    return 0;
}

/* ---- writers ------------------------------------------------------------ */

static size_t nslots(const st_store *s)
{
    return (size_t)s->meta.volumes * s->meta.partitions * ST_NKINDS;
}

static size_t slot_of(const st_store *s, uint32_t vol, uint32_t part, st_kind kind)
{
    return ((size_t)vol * s->meta.partitions + part) * ST_NKINDS + kind;
}

static void end_txn(st_txn *t)
{
    st_lock_close(&t->lock); /* releases the writer lock */
    st_lock_close(&t->readers);
    for (size_t i = 0; i < t->n; i++)
        if (t->st[i].path)
            mem_free(t->st[i].path, strlen(t->st[i].path) + 1);
    mem_free(t->st, t->cap * sizeof *t->st);
    if (t->found)
        mem_free(t->found, (size_t)t->s->meta.volumes * t->s->meta.partitions * sizeof *t->found);
    if (t->staged)
        mem_free(t->staged, nslots(t->s) * sizeof *t->staged);
    mem_free(t, sizeof *t);
}

/* Who holds lock byte `at`: the pid its holder wrote, for the message. */
static long holder_pid(st_txn *t, uint32_t at)
{
    char buf[PID_SLOT + 1];
    ssize_t n = pread(t->lock.fd, buf, PID_SLOT, (off_t)at * PID_SLOT);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

/* The error for a writer lock byte someone else holds, naming the holder. */
static int refuse(st_txn *t, uint32_t at, st_err *err)
{
    const st_store *s = t->s;
    if (at == BYTE_STORE && t->scope == ST_ALL_VOLUMES) {
        /* Held shared by volume writers, or exclusively by a store writer. */
        for (uint32_t v = 0; v < s->meta.volumes; v++)
            if (st_lock_held(&t->lock, BYTE_VOLUME(v), 1, err) == 1)
                return refuse(t, BYTE_VOLUME(v), err);
    }
    if (at == BYTE_STORE)
        return st_err_set(err, ST_EINPUT, "%s: the store is being written by pid %ld (lock %s)",
                          s->dir, holder_pid(t, at), s->lock_path);
    return st_err_set(err, ST_EINPUT, "%s: volume %u is being written by pid %ld (lock %s)",
                      s->dir, at - BYTE_VOLUME(0), holder_pid(t, at), s->lock_path);
}

/* Takes the writer lock for t's scope and writes our pid beside it. */
static int lock_scope(st_txn *t, st_err *err)
{
    int whole = t->scope == ST_ALL_VOLUMES;
    uint32_t mine = whole ? BYTE_STORE : BYTE_VOLUME(t->scope);
    int rc = st_lock_try(&t->lock, BYTE_STORE, whole, err);
    if (rc == 1)
        return refuse(t, BYTE_STORE, err);
    if (rc == 0 && !whole && (rc = st_lock_try(&t->lock, mine, 1, err)) == 1)
        return refuse(t, mine, err);
    if (rc < 0)
        return -1;
    char pid[PID_SLOT + 1];
    snprintf(pid, sizeof pid, "%15ld\n", (long)getpid());
    ssize_t n = pwrite(t->lock.fd, pid, PID_SLOT, (off_t)mine * PID_SLOT);
    if (n != PID_SLOT)
        return st_sys_err(err, n < 0 ? errno : EIO, "write %s", t->s->lock_path);
    return 0;
}

/* Whether a reader may use the file of generation gen, which generation
 * upto no longer names: one pinned at a generation in [gen, upto). */
static bool in_use(st_txn *t, uint64_t gen, uint64_t upto)
{
    st_err ignored;
    return gen < upto && st_lock_held(&t->readers, gen, upto - gen, &ignored) != 0;
}

#define CLEAN_MAX 64    /* files of a partition directory told apart; more: all kept */

/* Removes what crashed or aborted writers left in one partition directory:
 * writers' temporaries and files of generations never committed always;
 * superseded files unless a reader may still use them: one pinned from the
 * file's generation to the next file of its kind (a pin of any generation
 * no longer keeps every file a later commit superseded). */
static int clean_partition(st_txn *t, const st_manifest *m, uint32_t v, uint32_t p, st_err *err)
{
    char dir[PATH_MAX];
    if (part_dir(t->s, v, p, dir, err) < 0)
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return st_sys_err(err, errno, "open directory %s", dir);
    struct { st_kind kind; uint64_t gen; } seen[CLEAN_MAX];
    size_t n = 0;
    bool all = true;
    struct dirent *e;
    st_kind kind;
    uint64_t gen;
    int tmp;
    while ((e = readdir(d)) != NULL)
        if (parse_name(e->d_name, &kind, &gen, &tmp) && !tmp) {
            all &= n < CLEAN_MAX;
            if (n < CLEAN_MAX)
                seen[n].kind = kind, seen[n++].gen = gen;
        }
    rewinddir(d);
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (!parse_name(e->d_name, &kind, &gen, &tmp))
            continue;
        uint64_t cur = st_manifest_at(m, v, p, kind)->gen, next = cur > gen ? cur : m->generation;
        for (size_t i = 0; i < n; i++)
            if (seen[i].kind == kind && seen[i].gen > gen && seen[i].gen < next)
                next = seen[i].gen;
        bool current = !tmp && cur == gen;
        bool garbage = tmp || gen > m->generation || (all && !in_use(t, gen, next));
        if (!current && garbage && unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
            rc = st_sys_err(err, errno, "remove stale %s/%s", dir, e->d_name);
    }
    closedir(d);
    return rc;
}

static int clean_scope(st_txn *t, const st_manifest *m, st_err *err)
{
    const st_store *s = t->s;
    for (uint32_t v = 0; v < s->meta.volumes; v++) {
        if (t->scope != ST_ALL_VOLUMES && v != t->scope)
            continue;
        for (uint32_t p = 0; p < s->meta.partitions; p++)
            if (clean_partition(t, m, v, p, err) < 0)
                return -1;
    }
    return 0;
}

/* Moves s's snapshot (and its pin) to a newer manifest m (taking m's files). */
static void advance(st_store *s, st_manifest *m)
{
    st_err ignored; /* a shared lock on READERS conflicts with nothing */
    uint64_t old = s->m.generation;
    st_lock_try(&s->readers, m->generation, 0, &ignored);
    st_lock_release(&s->readers, old);
    st_manifest_free(&s->m);
    s->m = *m;
    m->files = NULL;
    m->keys = NULL;
}

st_txn *st_store_begin(st_store *s, uint32_t vol, st_err *err)
{
    if (vol != ST_ALL_VOLUMES && vol >= s->meta.volumes) {
        check_part(s, vol, 0, ST_TAGS, err);
        return NULL;
    }
    st_txn *t = mem_calloc(1, sizeof *t);
    if (!t) {
        st_err_nomem(err, "transaction");
        return NULL;
    }
    t->s = s;
    t->scope = vol;
    t->lock.fd = t->readers.fd = -1;
    st_manifest m = {0};
    t->staged = mem_alloc(nslots(s) * sizeof *t->staged);
    if (!t->staged) {
        st_err_nomem(err, "transaction");
        goto fail;
    }
    memset(t->staged, 0xff, nslots(s) * sizeof *t->staged); /* all -1 */
    if (st_lock_open(&t->lock, s->lock_path, 1, err) < 0 || lock_scope(t, err) < 0 ||
        st_lock_open(&t->readers, s->readers_path, 0, err) < 0)
        goto fail;
    /* Under our lock nobody else changes our scope; other volumes may move. */
    if (load_manifest(s, -1, &m, err) < 0)
        goto fail;
    t->gen = m.generation + 1;
    /* The writer reads the files it replaces through s: move s to what is
     * current under the lock, or an update would build on a stale snapshot
     * and undo a commit made to this volume since s was opened. s's old pin,
     * older than m, is released only after m's is taken, so no commit can
     * delete m's files in between. */
    if (m.generation != s->m.generation)
        advance(s, &m);
    if (clean_scope(t, &s->m, err) < 0)
        goto fail;
    st_manifest_free(&m);
    return t;
fail:
    st_manifest_free(&m);
    end_txn(t);
    return NULL;
}

static int add_stage(st_txn *t, uint32_t vol, uint32_t part, st_kind kind, uint64_t gen,
                     st_err *err)
{
    const st_store *s = t->s;
    if (check_part(s, vol, part, kind, err) < 0)
        return -1;
    if (t->scope != ST_ALL_VOLUMES && vol != t->scope)
        return st_err_set(err, ST_EINPUT, "%s: this writer holds volume %u, not volume %u",
                          s->dir, t->scope, vol);
    int32_t *slot = &t->staged[slot_of(s, vol, part, kind)];
    if (*slot >= 0)
        return st_err_set(err, ST_EINPUT,
                          "%s: volume %u partition %u %s is already staged in this writer",
                          s->dir, vol, part, st_kind_names[kind]);
    if (t->n == t->cap) {
        size_t ncap = t->cap ? 2 * t->cap : 16;
        struct stage *st = mem_realloc(t->st, t->cap * sizeof *st, ncap * sizeof *st);
        if (!st)
            return st_err_nomem(err, "staged files");
        t->st = st;
        t->cap = ncap;
    }
    struct stage *st = &t->st[t->n];
    *st = (struct stage){.vol = vol, .part = part, .kind = kind, .gen = gen};
    if (gen) {
        char path[PATH_MAX];
        struct stat sb;
        if (file_path(s, vol, part, kind, gen, path, err) < 0)
            return -1;
        if (lstat(path, &sb) == 0)
            return st_err_set(err, ST_EIO, "%s already exists: a stale file nobody cleaned",
                              path);
        st->path = mem_strdup(path);
        if (!st->path)
            return st_err_nomem(err, path);
    }
    *slot = (int32_t)t->n++;
    return 0;
}

int st_store_stage(st_txn *t, uint32_t vol, uint32_t part, st_kind kind, const char **path,
                   st_err *err)
{
    if (add_stage(t, vol, part, kind, t->gen, err) < 0)
        return -1;
    *path = t->st[t->n - 1].path;
    return 0;
}

int st_store_stage_keys(st_txn *t, uint32_t vol, uint32_t part, const st_zone *z, st_err *err)
{
    if (check_part(t->s, vol, part, ST_TAGS, err) < 0)
        return -1;
    int32_t i = t->staged[slot_of(t->s, vol, part, ST_TAGS)];
    if (i < 0 || !t->st[i].gen)
        return st_err_set(err, ST_EINPUT, "%s: volume %u partition %u has no tags file staged in "
                          "this writer", t->s->dir, vol, part);
    t->st[i].keys = keys_of(z);
    return 0;
}

int st_store_drop(st_txn *t, uint32_t vol, uint32_t part, st_kind kind, st_err *err)
{
    return add_stage(t, vol, part, kind, 0, err);
}

int st_store_set_label(st_txn *t, const char *label, st_err *err)
{
    if (st_meta_check_text("label", label, 1, 1, err) < 0)
        return -1;
    snprintf(t->label, sizeof t->label, "%s", label);
    t->has_label = 1;
    return 0;
}

static void remove_staged(st_txn *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->st[i].path) {
            unlink(t->st[i].path);
            st_proj_remove(t->st[i].path);
        }
}

void st_store_abort(st_txn *t)
{
    if (!t)
        return;
    remove_staged(t);
    end_txn(t);
}

/* Makes every staged file durable (data and directory entry) and records its
 * size; a staged file that was never written is an error. */
static int sync_staged(st_txn *t, st_err *err)
{
    const st_store *s = t->s;
    for (size_t i = 0; i < t->n; i++) {
        struct stage *st = &t->st[i];
        if (!st->gen)
            continue;
        int fd = open(st->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            return st_err_set(err, ST_EINPUT, "%s was staged but never written", st->path);
        if (fd < 0)
            return st_sys_err(err, errno, "open %s", st->path);
        struct stat sb;
        int rc = fstat(fd, &sb) < 0 ? st_sys_err(err, errno, "stat %s", st->path)
                                    : st_sys_fsync(fd, st->path, err);
        close(fd);
        if (rc < 0)
            return -1;
        st->size = (uint64_t)sb.st_size;
        if (key_sign(s) && st->kind == ST_TAGS && st->keys.state == ST_KEYS_UNKNOWN)
            return st_err_set(err, ST_EINPUT, "%s: its writer gave no range of the partition key "
                              "(st_store_stage_keys)", st->path);
    }
    char dir[PATH_MAX];
    for (uint32_t v = 0; v < s->meta.volumes; v++)
        for (uint32_t p = 0; p < s->meta.partitions; p++)
            for (int k = 0; k < ST_NKINDS; k++) {
                int32_t i = t->staged[slot_of(s, v, p, (st_kind)k)];
                if (i < 0 || !t->st[i].gen)
                    continue;
                if (part_dir(s, v, p, dir, err) < 0 || st_sys_fsync_dir(dir, err) < 0)
                    return -1;
                break; /* one fsync per partition directory */
            }
    return 0;
}

/* Deletes the files that generation `gen` no longer names (old named them),
 * unless a reader pinned at a generation that names one may still read it
 * (then a later begin does it). */
static void remove_superseded(st_txn *t, const st_manifest *old, uint64_t gen)
{
    st_err ignored; /* the commit stands; a file left over is cleaned later */
    for (size_t i = 0; i < t->n; i++) {
        const struct stage *st = &t->st[i];
        const st_mfile *f = st_manifest_at(old, st->vol, st->part, st->kind);
        char path[PATH_MAX];
        if (f->gen && f->gen != st->gen && !in_use(t, f->gen, gen) &&
            file_path(t->s, st->vol, st->part, st->kind, f->gen, path, &ignored) == 0) {
            unlink(path);
            st_proj_remove(path);
        }
    }
}

/* The ranges of the partition key of the tags files in t's scope that the
 * commit keeps and whose manifest recorded none (written before key
 * ranges), read from the files before the commit lock is taken (t's lock
 * keeps anyone else from replacing them); one that does not read stays
 * unknown, and queries read the file. */
static int find_keys(st_txn *t, st_err *err)
{
    const st_store *s = t->s;
    for (uint32_t v = 0; key_sign(s) && v < s->meta.volumes; v++)
        for (uint32_t p = 0; p < s->meta.partitions; p++) {
            const st_mkeys *k = st_manifest_keys_at(&s->m, v, p);
            st_file f;
            st_mkeys got;
            st_err ignored;
            if ((t->scope != ST_ALL_VOLUMES && v != t->scope) ||
                (k && k->state != ST_KEYS_UNKNOWN) || t->staged[slot_of(s, v, p, ST_TAGS)] >= 0 ||
                describe(s, v, p, ST_TAGS, &f, &ignored) != 1 ||
                file_keys(s, f.path, &got, &ignored) < 0)
                continue;
            /* all unknown (0) but those read */
            if (!t->found && !(t->found = mem_calloc((size_t)s->meta.volumes * s->meta.partitions,
                                                     sizeof *t->found)))
                return st_err_nomem(err, "key ranges");
            t->found[(size_t)v * s->meta.partitions + p] = got;
        }
    return 0;
}

/* The key ranges of the new manifest m: the staged tags files', as their
 * writers gave them, and those find_keys read; a store placed by hash
 * records none. */
static int record_keys(st_txn *t, st_manifest *m, st_err *err)
{
    const st_store *s = t->s;
    if (!key_sign(s))
        return 0;
    if (st_manifest_keys(m, key_sign(s), err) < 0)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        const struct stage *st = &t->st[i];
        if (st->kind == ST_TAGS)
            *st_manifest_keys_at(m, st->vol, st->part) = st->keys;
    }
    for (size_t i = 0; t->found && i < (size_t)s->meta.volumes * s->meta.partitions; i++)
        if (t->found[i].state != ST_KEYS_UNKNOWN)
            m->keys[i] = t->found[i];
    return 0;
}

int st_store_commit(st_txn *t, st_err *err)
{
    st_store *s = t->s;
    st_manifest old = {0}, cur = {0};
    char *text = NULL;
    size_t len = 0;
    int rc = -1;
    /* the lock serialises commits: held for the manifest's swap alone */
    if (sync_staged(t, err) < 0 || find_keys(t, err) < 0 ||
        st_lock_wait(&t->lock, BYTE_COMMIT, 1, err) < 0)
        goto done;
    /* Other volumes' writers may have committed since we began: start from
     * the latest manifest; our scope's entries are ours alone. */
    if (load_manifest(s, -1, &old, err) < 0 || st_manifest_copy(&cur, &old, err) < 0)
        goto unlock;
    cur.generation = old.generation + 1;
    if (t->has_label)
        memcpy(cur.label, t->label, sizeof cur.label);
    for (size_t i = 0; i < t->n; i++) {
        const struct stage *st = &t->st[i];
        *st_manifest_at(&cur, st->vol, st->part, st->kind) = (st_mfile){st->gen, st->size};
    }
    if (record_keys(t, &cur, err) < 0)
        goto unlock;
    /* The counter before and after (store/watch.h): a reader that read the
     * first add and then the old MANIFEST sees the second. */
    if (st_manifest_format(&cur, &text, &len, err) == 0 && st_watch_bump(s->dir, err) == 0) {
        rc = st_sys_replace(s->manifest_path, text, len, err);
        st_err ignored; /* committed; if this fails only a reader racing it can miss it */
        if (rc != -1)
            st_watch_bump(s->dir, &ignored);
    }
unlock:
    st_lock_release(&t->lock, BYTE_COMMIT);
    if (rc != -1) {
        /* Committed: s moves to the new generation first, so its own pin
         * does not hold back the old files. If the directory fsync failed,
         * a crash might still undo the rename: keep them for that case. */
        uint64_t gen = cur.generation;
        advance(s, &cur);
        if (rc == 0)
            remove_superseded(t, &old, gen);
        else
            st_err_suffix(err, " (generation %llu is committed but may not survive a crash)",
                          (unsigned long long)gen);
    }
done:
    if (rc == -1)
        remove_staged(t);
    if (text)
        mem_free(text, len + 1);
    st_manifest_free(&old);
    st_manifest_free(&cur);
    end_txn(t);
    return rc;
}
