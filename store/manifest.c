/* manifest: formatting, checksumming and parsing STORE and MANIFEST. */
#include "config.h"
#include "store/manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <xxhash.h>

#include "store/mem.h"
#include "store/sysio.h"

#define ST_KIND_NAME(e, name) name,
const char *const st_kind_names[ST_NKINDS] = {ST_KINDS(ST_KIND_NAME)};
#undef ST_KIND_NAME

#define MANIFEST_MAGIC "comb-manifest"
#define META_MAGIC "comb-store"
#define FORMAT_VERSION 1
#define MANIFEST_VERSION_KEYS 2 /* a keys line and partitions' key ranges */
#define STORE_VERSION_BUCKET 2 /* STORE with a partbucket line (time placement) */
#define STORE_VERSION_RANGE 3  /* and a partkeytype line (another integer key) */
#define SUM_LINE 22 /* "xxh3 " + 16 hex + "\n" */

/* ---- building text ------------------------------------------------------ */

struct text {
    char *p;
    size_t n, cap;
    int oom;
};

static void put(struct text *t, const void *bytes, size_t n)
{
    if (t->oom)
        return;
    if (t->n + n + 1 > t->cap) {
        size_t ncap = t->cap ? t->cap : 4096;
        while (ncap < t->n + n + 1)
            ncap *= 2;
        char *p = mem_realloc(t->p, t->cap, ncap);
        if (!p) {
            t->oom = 1;
            return;
        }
        t->p = p;
        t->cap = ncap;
    }
    memcpy(t->p + t->n, bytes, n);
    t->n += n;
    t->p[t->n] = '\0';
}

static void putf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct text *t, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    put(t, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Appends the checksum line and hands the bytes over in a block of exactly
 * *n + 1 bytes, so the caller frees it by that size. */
static int seal(struct text *t, const char *what, char **buf, size_t *n, st_err *err)
{
    if (!t->oom)
        putf(t, "xxh3 %016llx\n", (unsigned long long)XXH3_64bits(t->p, t->n));
    if (t->oom) {
        mem_free(t->p, t->cap);
        return st_err_nomem(err, what);
    }
    char *p = mem_realloc(t->p, t->cap, t->n + 1);
    if (!p) {
        mem_free(t->p, t->cap);
        return st_err_nomem(err, what);
    }
    *buf = p;
    *n = t->n;
    return 0;
}

/* ---- reading text ------------------------------------------------------- */

struct cur {
    const char *p, *end, *path;
    unsigned line;
    st_err *err;
};

static int bad(struct cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct cur *c, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return st_err_set(c->err, ST_ECORRUPT, "%s: line %u: %s", c->path, c->line, what);
}

/* The next line "key[ value]": *val is the text after "key " (not NUL-ended). */
static int field(struct cur *c, const char *key, const char **val, size_t *vlen)
{
    c->line++;
    const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    size_t kl = strlen(key);
    if (!nl)
        return bad(c, "missing \"%s\" line", key);
    size_t ll = (size_t)(nl - c->p);
    if (ll < kl || memcmp(c->p, key, kl) != 0 || (ll > kl && c->p[kl] != ' '))
        return bad(c, "expected \"%s\"", key);
    *val = c->p + kl + (ll > kl);
    *vlen = (size_t)(nl - *val);
    c->p = nl + 1;
    return 0;
}

/* Parses a decimal number from *s (no sign, no leading zeros) up to end or a
 * separator; advances *s past it. */
static int number(struct cur *c, const char **s, const char *end, uint64_t max, uint64_t *v)
{
    const char *p = *s;
    uint64_t x = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return bad(c, "number too large");
        x = x * 10 + d;
        p++;
    }
    if (p == *s || (p - *s > 1 && **s == '0'))
        return bad(c, "expected a number");
    if (x > max)
        return bad(c, "%llu is out of range (at most %llu)", (unsigned long long)x,
                   (unsigned long long)max);
    *s = p;
    *v = x;
    return 0;
}

static int field_number(struct cur *c, const char *key, uint64_t min, uint64_t max,
                        uint64_t *v)
{
    const char *val;
    size_t n;
    if (field(c, key, &val, &n) < 0 || number(c, &val, val + n, max, v) < 0)
        return -1;
    if (val != c->p - 1)
        return bad(c, "junk after the number");
    if (*v < min)
        return bad(c, "%s must be at least %llu", key, (unsigned long long)min);
    return 0;
}

static int field_text(struct cur *c, const char *key, char *dst, int allow_empty,
                      int allow_space)
{
    const char *val;
    size_t n;
    if (field(c, key, &val, &n) < 0)
        return -1;
    if (n > ST_TEXT_MAX)
        return bad(c, "%s is longer than %d bytes", key, ST_TEXT_MAX);
    memcpy(dst, val, n);
    dst[n] = '\0';
    st_err e;
    if (st_meta_check_text(key, dst, allow_empty, allow_space, &e) < 0)
        return bad(c, "%s", e.msg);
    return 0;
}

/* Checks the magic line and the checksum; on success c covers the body
 * between them. */
static int open_text(struct cur *c, const char *buf, size_t n, const char *path,
                     const char *magic, const char *what, uint64_t newest, uint64_t *version,
                     st_err *err)
{
    *c = (struct cur){buf, buf + n, path, 0, err};
    const char *val;
    size_t vlen;
    if (field(c, magic, &val, &vlen) < 0)
        return st_err_set(err, ST_ECORRUPT, "%s: not a comb %s file", path, what);
    if (number(c, &val, val + vlen, UINT32_MAX, version) < 0)
        return -1;
    if (*version < FORMAT_VERSION || *version > newest)
        return st_err_set(err, ST_EVERSION,
                          "%s: format version %llu; this comb reads up to version %llu", path,
                          (unsigned long long)*version, (unsigned long long)newest);
    if (n < SUM_LINE || buf[n - 1] != '\n' || memcmp(buf + n - SUM_LINE, "xxh3 ", 5) != 0 ||
        (n > SUM_LINE && buf[n - SUM_LINE - 1] != '\n'))
        return st_err_set(err, ST_ECORRUPT, "%s: the checksum line is missing (truncated?)",
                          path);
    unsigned long long stored;
    char hex[17];
    memcpy(hex, buf + n - SUM_LINE + 5, 16);
    hex[16] = '\0';
    if (sscanf(hex, "%16llx", &stored) != 1 || strspn(hex, "0123456789abcdef") != 16)
        return st_err_set(err, ST_ECORRUPT, "%s: the checksum line is damaged", path);
    unsigned long long computed = XXH3_64bits(buf, n - SUM_LINE);
    if (stored != computed)
        return st_err_set(err, ST_ECORRUPT,
                          "%s: checksum mismatch (stored %016llx, computed %016llx): the "
                          "file is damaged",
                          path, stored, computed);
    c->end = buf + n - SUM_LINE;
    return 0;
}

/* ---- manifests ---------------------------------------------------------- */

int st_manifest_init(st_manifest *m, uint32_t volumes, uint32_t partitions, st_err *err)
{
    memset(m, 0, sizeof *m);
    m->volumes = volumes;
    m->partitions = partitions;
    m->files = mem_calloc((size_t)volumes * partitions * ST_NKINDS, sizeof *m->files);
    if (!m->files)
        return st_err_nomem(err, "manifest");
    return 0;
}

static size_t nfiles(const st_manifest *m)
{
    return (size_t)m->volumes * m->partitions * ST_NKINDS;
}

static size_t nparts(const st_manifest *m)
{
    return (size_t)m->volumes * m->partitions;
}

int st_manifest_keys(st_manifest *m, char sign, st_err *err)
{
    if (m->keys)
        return 0;
    if (!(m->keys = mem_calloc(nparts(m), sizeof *m->keys)))
        return st_err_nomem(err, "manifest");
    m->keysign = sign;
    return 0;
}

st_mkeys *st_manifest_keys_at(const st_manifest *m, uint32_t vol, uint32_t part)
{
    return m->keys ? &m->keys[(size_t)vol * m->partitions + part] : NULL;
}

int st_manifest_copy(st_manifest *dst, const st_manifest *src, st_err *err)
{
    if (st_manifest_init(dst, src->volumes, src->partitions, err) < 0)
        return -1;
    st_mfile *files = dst->files;
    *dst = *src;
    dst->files = files;
    dst->keys = NULL;
    memcpy(files, src->files, nfiles(src) * sizeof *files);
    if (src->keys) {
        if (st_manifest_keys(dst, src->keysign, err) < 0) {
            st_manifest_free(dst);
            return -1;
        }
        memcpy(dst->keys, src->keys, nparts(src) * sizeof *src->keys);
    }
    return 0;
}

void st_manifest_free(st_manifest *m)
{
    if (m->files)
        mem_free(m->files, nfiles(m) * sizeof *m->files);
    if (m->keys)
        mem_free(m->keys, nparts(m) * sizeof *m->keys);
    m->files = NULL;
    m->keys = NULL;
}

st_mfile *st_manifest_at(const st_manifest *m, uint32_t vol, uint32_t part, st_kind kind)
{
    return &m->files[((size_t)vol * m->partitions + part) * ST_NKINDS + kind];
}

/* A key's order image as its value: unsigned, or signed (the image is the
 * value with its sign bit flipped). */
static void put_key(struct text *t, char sign, uint64_t order)
{
    if (sign == 'i')
        putf(t, " %lld", (long long)(int64_t)(order ^ (UINT64_C(1) << 63)));
    else
        putf(t, " %llu", (unsigned long long)order);
}

static void put_keys(struct text *t, const st_manifest *m, uint32_t v, uint32_t p)
{
    const st_mkeys *k = st_manifest_keys_at(m, v, p);
    if (!k || !st_manifest_at(m, v, p, ST_TAGS)->gen || k->state == ST_KEYS_UNKNOWN)
        return;
    if (k->state == ST_KEYS_NONE) {
        put(t, " keys none", 10);
        return;
    }
    put(t, " keys", 5);
    put_key(t, m->keysign, k->lo);
    put_key(t, m->keysign, k->hi);
}

int st_manifest_format(const st_manifest *m, char **buf, size_t *n, st_err *err)
{
    struct text t = {0};
    /* a manifest without key ranges stays version 1, which every comb reads */
    putf(&t, "%s %d\ngeneration %llu\nvolumes %u\npartitions %u\nkinds", MANIFEST_MAGIC,
         m->keys ? MANIFEST_VERSION_KEYS : FORMAT_VERSION, (unsigned long long)m->generation,
         m->volumes, m->partitions);
    for (int k = 0; k < ST_NKINDS; k++)
        putf(&t, " %s", st_kind_names[k]);
    putf(&t, "\nlabel%s%s\n", m->label[0] ? " " : "", m->label);
    if (m->keys)
        putf(&t, "keys %c\n", m->keysign);
    for (uint32_t v = 0; v < m->volumes; v++) {
        for (uint32_t p = 0; p < m->partitions; p++) {
            const st_mfile *f = st_manifest_at(m, v, p, 0);
            int any = 0;
            for (int k = 0; k < ST_NKINDS; k++)
                any |= f[k].gen != 0;
            if (!any)
                continue; /* partitions without files are left out */
            putf(&t, "p %u %u", v, p);
            for (int k = 0; k < ST_NKINDS; k++)
                putf(&t, " %llu:%llu", (unsigned long long)f[k].gen,
                     (unsigned long long)f[k].size);
            put_keys(&t, m, v, p);
            put(&t, "\n", 1);
        }
    }
    return seal(&t, "manifest", buf, n, err);
}

static int sep(struct cur *c, const char **s, const char *end, char ch)
{
    if (*s == end || **s != ch)
        return bad(c, "expected '%c'", ch);
    ++*s;
    return 0;
}

/* A key value of the manifest's sign, as its order image. */
static int parse_key(struct cur *c, const char **s, const char *end, char sign, uint64_t *order)
{
    bool neg = sign == 'i' && *s < end && **s == '-';
    uint64_t x;
    *s += neg;
    if (number(c, s, end, sign == 'i' ? (UINT64_C(1) << 63) - !neg : UINT64_MAX, &x) < 0)
        return -1;
    if (neg && x == 0)
        return bad(c, "expected a number");
    *order = sign == 'i' ? (neg ? (UINT64_C(1) << 63) - x : x | (UINT64_C(1) << 63)) : x;
    return 0;
}

/* " keys LO HI" or " keys none" after a partition's files, if any. */
static int parse_keys(struct cur *c, st_manifest *m, uint32_t v, uint32_t p, const char **s,
                      const char *end)
{
    st_mkeys *k = st_manifest_keys_at(m, v, p);
    if (*s == end)
        return 0;
    if (!k || (size_t)(end - *s) < 6 || memcmp(*s, " keys ", 6) != 0)
        return bad(c, "junk after the last file");
    if (!st_manifest_at(m, v, p, ST_TAGS)->gen)
        return bad(c, "a key range for a partition without a tags file");
    *s += 6;
    if ((size_t)(end - *s) == 4 && memcmp(*s, "none", 4) == 0) {
        *s = end;
        k->state = ST_KEYS_NONE;
        return 0;
    }
    if (parse_key(c, s, end, m->keysign, &k->lo) < 0 || sep(c, s, end, ' ') < 0 ||
        parse_key(c, s, end, m->keysign, &k->hi) < 0)
        return -1;
    if (k->lo > k->hi)
        return bad(c, "the key range's low end is above its high end");
    k->state = ST_KEYS_RANGE;
    return 0;
}

/* "p VOL PART gen:size ..." for one partition, after the previous one. */
static int parse_partition(struct cur *c, st_manifest *m, int64_t *last)
{
    const char *s;
    size_t n;
    if (field(c, "p", &s, &n) < 0)
        return -1;
    const char *end = s + n;
    uint64_t v, p;
    if (number(c, &s, end, m->volumes - 1, &v) < 0 || sep(c, &s, end, ' ') < 0 ||
        number(c, &s, end, m->partitions - 1, &p) < 0)
        return -1;
    int64_t at = (int64_t)(v * m->partitions + p);
    if (at <= *last)
        return bad(c, "partition %llu %llu is out of order or repeated",
                   (unsigned long long)v, (unsigned long long)p);
    *last = at;
    st_mfile *f = st_manifest_at(m, (uint32_t)v, (uint32_t)p, 0);
    for (int k = 0; k < ST_NKINDS; k++) {
        if (sep(c, &s, end, ' ') < 0 || number(c, &s, end, m->generation, &f[k].gen) < 0 ||
            sep(c, &s, end, ':') < 0 || number(c, &s, end, UINT64_MAX, &f[k].size) < 0)
            return -1;
        if (f[k].gen == 0 && f[k].size != 0)
            return bad(c, "a missing %s file has a size", st_kind_names[k]);
    }
    if (parse_keys(c, m, (uint32_t)v, (uint32_t)p, &s, end) < 0)
        return -1;
    if (s != end)
        return bad(c, "junk after the key range");
    return 0;
}

static int parse_manifest(st_manifest *m, const char *buf, size_t n, const char *path,
                          st_err *err)
{
    struct cur c;
    uint64_t gen, vols, parts, version;
    if (open_text(&c, buf, n, path, MANIFEST_MAGIC, "MANIFEST", MANIFEST_VERSION_KEYS, &version,
                  err) < 0 ||
        field_number(&c, "generation", 0, UINT64_MAX - 1, &gen) < 0 ||
        field_number(&c, "volumes", 1, ST_MAX_VOLUMES, &vols) < 0 ||
        field_number(&c, "partitions", 1, ST_MAX_PARTITIONS, &parts) < 0)
        return -1;
    const char *val;
    size_t vlen;
    if (field(&c, "kinds", &val, &vlen) < 0)
        return -1;
    char want[64] = "";
    for (int k = 0; k < ST_NKINDS; k++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", k ? " " : "",
                 st_kind_names[k]);
    if (vlen != strlen(want) || memcmp(val, want, vlen) != 0)
        return st_err_set(err, ST_EVERSION, "%s: file kinds \"%.*s\" are not \"%s\"", path,
                          (int)vlen, val, want);
    if (st_manifest_init(m, (uint32_t)vols, (uint32_t)parts, err) < 0)
        return -1;
    m->generation = gen;
    int64_t last = -1;
    if (field_text(&c, "label", m->label, 1, 1) < 0)
        goto fail;
    if (version >= MANIFEST_VERSION_KEYS) {
        if (field(&c, "keys", &val, &vlen) < 0)
            goto fail;
        if (vlen != 1 || (val[0] != 'u' && val[0] != 'i')) {
            bad(&c, "keys must be u or i");
            goto fail;
        }
        if (st_manifest_keys(m, val[0], err) < 0)
            goto fail;
    }
    while (c.p < c.end) {
        if (parse_partition(&c, m, &last) < 0)
            goto fail;
    }
    return 0;
fail:
    st_manifest_free(m);
    return -1;
}

int st_manifest_load(st_manifest *m, int fd, const char *path, st_err *err)
{
    char *buf;
    size_t n;
    /* The largest manifest: every partition with three files of huge numbers. */
    size_t max = (size_t)ST_MAX_VOLUMES * ST_MAX_PARTITIONS * 200 + 4096;
    int rc = fd >= 0 ? st_sys_read_all(fd, path, max, &buf, &n, err)
                     : st_sys_slurp(path, max, &buf, &n, err);
    if (rc < 0)
        return -1;
    rc = parse_manifest(m, buf, n, path, err);
    mem_free(buf, n + 1);
    return rc;
}

/* ---- the STORE file ----------------------------------------------------- */

int st_meta_check_text(const char *what, const char *s, int allow_empty, int allow_space,
                       st_err *err)
{
    size_t n = strlen(s);
    if (n > ST_TEXT_MAX || (n == 0 && !allow_empty))
        return st_err_set(err, ST_EINPUT, "%s must be 1 to %d bytes", what, ST_TEXT_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f || (ch == ' ' && !allow_space))
            return st_err_set(err, ST_EINPUT, "%s \"%s\" has a %s at byte %zu", what, s,
                              ch == ' ' ? "space" : "control character", i);
    }
    return 0;
}

int st_meta_format(const st_meta *meta, char **buf, size_t *n, st_err *err)
{
    struct text t = {0};
    /* a store placed by hash stays version 1, which every comb reads */
    putf(&t, "%s %d\nname %s\nvolumes %u\npartitions %u\npartkey %s\n", META_MAGIC,
         meta->keytype[0] ? STORE_VERSION_RANGE : meta->bucket ? STORE_VERSION_BUCKET : FORMAT_VERSION,
         meta->name, meta->volumes, meta->partitions, meta->partkey);
    if (meta->bucket)
        putf(&t, "partbucket %llu\n", (unsigned long long)meta->bucket);
    if (meta->keytype[0])
        putf(&t, "partkeytype %s\n", meta->keytype);
    putf(&t, "schema %zu\n", meta->schema_len);
    put(&t, meta->schema, meta->schema_len);
    put(&t, "\n", 1);
    return seal(&t, "STORE file", buf, n, err);
}

const char *const st_meta_keytypes[ST_META_NKEYTYPES] = {"u8", "u16", "u32", "u64", "i8", "i16", "i32"};

static bool known_keytype(const char *t)
{
    for (size_t i = 0; i < ST_META_NKEYTYPES; i++)
        if (!strcmp(t, st_meta_keytypes[i]))
            return true;
    return false;
}

static int parse_meta(st_meta *meta, const char *buf, size_t n, const char *path, st_err *err)
{
    struct cur c;
    uint64_t vols, parts, len, version;
    memset(meta, 0, sizeof *meta);
    if (open_text(&c, buf, n, path, META_MAGIC, "STORE", STORE_VERSION_RANGE, &version, err) < 0 ||
        field_text(&c, "name", meta->name, 0, 1) < 0 ||
        field_number(&c, "volumes", 1, ST_MAX_VOLUMES, &vols) < 0 ||
        field_number(&c, "partitions", 1, ST_MAX_PARTITIONS, &parts) < 0 ||
        field_text(&c, "partkey", meta->partkey, 0, 0) < 0 ||
        (version >= STORE_VERSION_BUCKET &&
         field_number(&c, "partbucket", 1, INT64_MAX, &meta->bucket) < 0) ||
        (version == STORE_VERSION_RANGE &&
         field_text(&c, "partkeytype", meta->keytype, 0, 0) < 0) ||
        field_number(&c, "schema", 0, ST_SCHEMA_MAX, &len) < 0)
        return -1;
    if (version == STORE_VERSION_RANGE && !known_keytype(meta->keytype))
        return bad(&c, "partkeytype %s is not an integer type", meta->keytype);
    if ((uint64_t)(c.end - c.p) != len + 1 || c.end[-1] != '\n')
        return bad(&c, "the schema is not %llu bytes and a newline", (unsigned long long)len);
    meta->volumes = (uint32_t)vols;
    meta->partitions = (uint32_t)parts;
    meta->schema_len = (size_t)len;
    meta->schema = mem_alloc(meta->schema_len + 1);
    if (!meta->schema)
        return st_err_nomem(err, "schema");
    memcpy(meta->schema, c.p, meta->schema_len);
    meta->schema[meta->schema_len] = '\0';
    return 0;
}

int st_meta_load(st_meta *meta, const char *path, st_err *err)
{
    char *buf;
    size_t n;
    if (st_sys_slurp(path, ST_SCHEMA_MAX + 4096, &buf, &n, err) < 0)
        return -1;
    int rc = parse_meta(meta, buf, n, path, err);
    mem_free(buf, n + 1);
    return rc;
}

void st_meta_free(st_meta *meta)
{
    if (meta->schema)
        mem_free(meta->schema, meta->schema_len + 1);
    meta->schema = NULL;
}
