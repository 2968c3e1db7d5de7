/* gen_store: random schemas and tagsets for the store's unit tests. */
#include "config.h"
#include "tests/unit/gen_store.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/datastore.h"

#include "store/mem.h"

uint64_t gen_u64(gen *g)
{
    uint64_t z = (g->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t gen_below(gen *g, uint64_t n)
{
    return gen_u64(g) % n;
}

static const char *const types[] = {"u8", "u16", "u32", "u64", "i8", "i16", "i32",
                                    "i64", "f32", "f64", "bool", "time", "char", "enum"};

static void add(char **buf, size_t *n, size_t *cap, const char *fmt, ...)
{
    char piece[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (*n + (size_t)k + 1 > *cap) {
        size_t ncap = (*n + (size_t)k + 1) * 2;
        *buf = mem_realloc(*buf, *cap, ncap);
        assert_non_null(*buf);
        *cap = ncap;
    }
    memcpy(*buf + *n, piece, (size_t)k + 1);
    *n += (size_t)k;
}

char *gen_schema_text(gen *g, unsigned nmax, int tags)
{
    char *buf = NULL;
    size_t n = 0, cap = 0;
    unsigned nf = 1 + (unsigned)gen_below(g, nmax);
    unsigned key_at = (unsigned)gen_below(g, nf);
    add(&buf, &n, &cap, "# generated schema\n");
    for (unsigned i = 0; i < nf; i++) {
        unsigned role = i == key_at ? 0 : (unsigned)gen_below(g, tags ? 3 : 2);
        static const char *const roles[] = {"key", "tagset", "tag"};
        add(&buf, &n, &cap, "%s f%u :%s", roles[role], i, gen_below(g, 2) ? " " : "");
        const char *t = types[gen_below(g, sizeof types / sizeof types[0])];
        if (strcmp(t, "char") == 0) {
            add(&buf, &n, &cap, "char[%u]", 1 + (unsigned)gen_below(g, gen_below(g, 4) ? 20 : 300));
        } else if (strcmp(t, "enum") == 0) {
            unsigned ns = 1 + (unsigned)gen_below(g, gen_below(g, 4) ? 6 : 255);
            add(&buf, &n, &cap, "enum(");
            for (unsigned j = 0; j < ns; j++)
                add(&buf, &n, &cap, "%sS%u_%u", j ? (gen_below(g, 8) ? ", " : ",\n  ") : "", i, j);
            add(&buf, &n, &cap, ")");
        } else {
            add(&buf, &n, &cap, "%s", t);
        }
        switch (gen_below(g, 4)) {
        case 0: add(&buf, &n, &cap, "; "); break;
        case 1: add(&buf, &n, &cap, "  # field %u\n", i); break;
        default: add(&buf, &n, &cap, "\n"); break;
        }
    }
    buf = mem_realloc(buf, cap, n + 1); /* exactly strlen + 1, for mem_free */
    assert_non_null(buf);
    return buf;
}

st_schema *gen_schema(gen *g, unsigned nmax, int tags)
{
    char *text = gen_schema_text(g, nmax, tags);
    size_t len = strlen(text);
    st_err err = {0};
    st_schema *s = st_schema_parse(text, len, 1, 1, &err);
    if (!s)
        fail_msg("generated schema did not parse: %s\n%s", err.msg, text);
    mem_free(text, len + 1);
    return s;
}

static uint64_t extreme_bits(gen *g)
{
    static const uint64_t special[] = {0, 1, UINT64_MAX, UINT64_C(1) << 63,
                                       (UINT64_C(1) << 63) - 1, 0x80, 0x7f};
    return special[gen_below(g, sizeof special / sizeof special[0])];
}

static void gen_float(gen *g, const st_field *f, unsigned char *p)
{
    double specials[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e308, -1e-308, 1.5};
    double x = gen_below(g, 3) ? specials[gen_below(g, 8)]
                               : (double)(int64_t)gen_u64(g) / (double)(1 + gen_below(g, 1000));
    if (f->type == ST_F32) {
        float y = (float)x;
        memcpy(p, &y, 4);
    } else {
        memcpy(p, &x, 8);
    }
}

void gen_fields(gen *g, const st_schema *s, uint32_t from, uint32_t to, unsigned char *row)
{
    for (uint32_t i = from; i < to; i++) {
        const st_field *f = &s->fields[i];
        unsigned char *p = row + f->offset;
        switch (f->type) {
        case ST_F32: case ST_F64:
            gen_float(g, f, p);
            break;
        case ST_BOOL:
            *p = (unsigned char)gen_below(g, 2);
            break;
        case ST_ENUM:
            *p = (unsigned char)gen_below(g, f->nsyms);
            break;
        case ST_CHAR: {
            uint32_t len = gen_below(g, 4) == 0 ? 0 : gen_below(g, 4) == 0 ? f->width
                                                                            : (uint32_t)gen_below(g, f->width + 1);
            memset(p, 0, f->width);
            for (uint32_t j = 0; j < len; j++)
                p[j] = (unsigned char)(1 + gen_below(g, 255));
            break;
        }
        default: {
            uint64_t v = gen_below(g, 3) ? gen_u64(g) >> gen_below(g, 64) : extreme_bits(g);
            memcpy(p, &v, f->width); /* little-endian: the low bytes */
            break;
        }
        }
    }
}

const char *gen_tmpdir(const char *name)
{
    static char dir[256];
    mkdir("tests", 0755);
    mkdir("tests/tmp", 0755);
    snprintf(dir, sizeof dir, "tests/tmp/%s-XXXXXX", name);
    assert_non_null(mkdtemp(dir));
    return dir;
}

void gen_store_tiny(const char *path)
{
    static const char schema[] = "key onum: u64\ntagset dur: u32\n";
    st_store_meta m = {.name = "tiny", .partkey = "onum", .volumes = 1, .partitions = 1,
                       .schema = schema, .schema_len = sizeof schema - 1};
    st_err err;
    assert_int_equal(st_store_create(path, &m, &err), 0);
}

void gen_store_commit(const char *path)
{
    st_err err;
    st_store *s = st_store_open(path, &err);
    assert_non_null(s);
    st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    assert_non_null(t);
    assert_int_equal(st_store_commit(t, &err), 0);
    st_store_close(s);
}

void gen_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char path[512];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    assert_int_equal(rmdir(dir), 0);
}

int gen_count_temps(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return n;
}

unsigned char *gen_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = mem_alloc((size_t)n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static int key_order(const void *a, const void *b, void *s)
{
    return st_schema_key_cmp(s, a, b);
}

void gen_make_tagsets(gen *g, const st_schema *s, uint32_t n, uint32_t maxtags, int sorted,
                      gen_tagsets *t)
{
    t->n = n;
    t->rows = mem_alloc((size_t)n * s->row_size + 1);
    t->tag_start = mem_alloc(((size_t)n + 1) * sizeof *t->tag_start);
    assert_non_null(t->rows);
    assert_non_null(t->tag_start);
    for (uint32_t i = 0; i < n; i++)
        gen_fields(g, s, 0, s->nrow, t->rows + (size_t)i * s->row_size);
    if (sorted)
        qsort_r(t->rows, n, s->row_size, key_order, (void *)s);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        t->tag_start[i] = total;
        if (s->tag_size && maxtags)
            total += gen_below(g, 3) == 0 ? 0 : gen_below(g, gen_below(g, 8) ? maxtags / 8 + 1 : maxtags + 1);
    }
    t->tag_start[n] = total;
    t->tags = mem_alloc(total * s->tag_size + 1);
    assert_non_null(t->tags);
    for (uint64_t j = 0; j < total; j++)
        gen_fields(g, s, s->nrow, s->nfields, t->tags + j * s->tag_size);
}

void gen_free_tagsets(const st_schema *s, gen_tagsets *t)
{
    mem_free(t->rows, (size_t)t->n * s->row_size + 1);
    mem_free(t->tags, t->tag_start[t->n] * s->tag_size + 1);
    mem_free(t->tag_start, ((size_t)t->n + 1) * sizeof *t->tag_start);
}

uint32_t gen_ntags(const gen_tagsets *t, uint32_t i)
{
    return (uint32_t)(t->tag_start[i + 1] - t->tag_start[i]);
}

const unsigned char *gen_row(const st_schema *s, const gen_tagsets *t, uint32_t i)
{
    return t->rows + (size_t)i * s->row_size;
}

const unsigned char *gen_tags(const st_schema *s, const gen_tagsets *t, uint32_t i)
{
    return t->tags + t->tag_start[i] * s->tag_size;
}

uint32_t gen_check_batch(const st_schema *s, const gen_tagsets *t, uint32_t i0, const st_batch *b)
{
    uint32_t n = b->ntagsets - b->first;
    assert_true(i0 + n <= t->n);
    uint64_t tag0 = t->tag_start[i0], btag0 = b->tag_start ? b->tag_start[b->first] : 0;
    for (uint32_t c = 0; c < st_schema_ncols(s); c++) {
        if (!b->cols[c])
            continue;
        const unsigned char *col = b->cols[c];
        if (c < s->nrow) {
            const st_field *f = &s->fields[c];
            for (uint32_t i = 0; i < n; i++)
                if (memcmp(col + (size_t)(b->first + i) * f->width, gen_row(s, t, i0 + i) + f->offset,
                           f->width) != 0)
                    fail_msg("column %s, tagset %u differs", f->name, i0 + i);
        } else if (c == s->nfields) {
            for (uint32_t i = 0; i < n; i++)
                assert_int_equal(b->counts[b->first + i], gen_ntags(t, i0 + i));
        } else {
            const st_field *f = &s->fields[c];
            uint64_t ntags = t->tag_start[i0 + n] - tag0;
            assert_non_null(b->tag_start);
            assert_int_equal(b->tag_start[b->ntagsets] - btag0, ntags);
            for (uint64_t j = 0; j < ntags; j++)
                if (memcmp(col + (btag0 + j) * f->width, t->tags + (tag0 + j) * s->tag_size + f->offset,
                           f->width) != 0)
                    fail_msg("tag column %s, tag %llu differs", f->name, (unsigned long long)(tag0 + j));
        }
    }
    return i0 + n;
}

void gen_event_row(const st_schema *s, uint32_t i, uint32_t run, uint64_t event, uint64_t last,
                   unsigned char *row)
{
    char ref[37];
    snprintf(ref, sizeof ref, "%08x-0000-4000-8000-%012x", i / 50, i / 50 * 7);
    memcpy(row + s->fields[0].offset, &run, 4);
    memcpy(row + s->fields[1].offset, &event, 8);
    memcpy(row + s->fields[2].offset, ref, 36);
    memcpy(row + s->fields[3].offset, &last, s->fields[3].width);   /* little-endian: the low bytes */
}
