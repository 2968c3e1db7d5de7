/* cmd_store: `comb store create|info|verify|load|gen`, the datastore's command line. */
#include "config.h"
#include "cli/cmd_store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/store_text.h"
#include "store/datastore.h"
#include "cli/demogen.h"
#include "store/load.h"
#include "store/mem.h"
#include "store/sysio.h"
#include "store/tagfile.h"
#include "store/update.h"

#define UNSET UINT64_MAX
#define FLAG (UINT64_MAX - 2)
#define PARCEL_MB_DEFAULT 256 /* the sort's memory: far below its 1 GiB default, for shared hosts */

enum { C_CREATE = 1, C_INFO = 2, C_VERIFY = 4, C_LOAD = 8, C_GEN = 16 };

typedef struct args {
    unsigned cmd;
    const char *dir;
    const char *schema, *partkey, *name, *label;
    uint64_t volumes, partitions, tagsets, seed, parcel, header, replace, bucket;
    char **files;
    int nfiles;
} args;

/* Options: which commands take them, and where their value goes. */
typedef struct optdef {
    const char *name;
    unsigned cmds;
    size_t off;
    uint64_t max; /* 0: a string; FLAG: no value (sets 1); else a number 0..max (1..max for sizes) */
} optdef;

static const optdef optdefs[] = {
    {"--schema", C_CREATE, offsetof(args, schema), 0},
    {"--partition-key", C_CREATE, offsetof(args, partkey), 0},
    {"--partition-bucket", C_CREATE, offsetof(args, bucket), INT64_MAX},
    {"--name", C_CREATE | C_GEN, offsetof(args, name), 0},
    {"--label", C_LOAD | C_GEN, offsetof(args, label), 0},
    {"--volumes", C_CREATE | C_GEN, offsetof(args, volumes), ST_MAX_VOLUMES},
    {"--partitions", C_CREATE | C_GEN, offsetof(args, partitions), ST_MAX_PARTITIONS},
    {"--parcel", C_LOAD | C_GEN, offsetof(args, parcel), 1u << 20},
    {"--header", C_LOAD, offsetof(args, header), FLAG},
    {"--replace", C_LOAD, offsetof(args, replace), FLAG},
    {"--tagsets", C_GEN, offsetof(args, tagsets), UNSET - 1},
    {"--seed", C_GEN, offsetof(args, seed), UNSET - 1},
};
#define NOPTS (sizeof optdefs / sizeof optdefs[0])

static const struct {
    const char *name;
    unsigned cmd;
} commands[] = {
    {"create", C_CREATE}, {"info", C_INFO}, {"verify", C_VERIFY}, {"load", C_LOAD}, {"gen", C_GEN},
};

static void usage(FILE *out)
{
    fputs("usage: comb store create DIR --schema FILE --partition-key FIELD\n"
          "                         [--volumes V] [--partitions P] [--name NAME]\n"
          "                         [--partition-bucket B]\n"
          "       comb store info DIR\n"
          "       comb store verify DIR\n"
          "       comb store load DIR [--label L] [--parcel MB] [--header] [--replace] FILE...\n"
          "       comb store gen DIR --tagsets N [--seed S] [--volumes V] [--partitions P]\n"
          "                      [--name NAME] [--label L] [--parcel MB]\n"
          "\n"
          "Creates, describes, checks and fills datastores (docs/STORE.md).\n"
          "Exit status: 0 done, 1 failed (verify: damage found), 2 usage error.\n",
          out);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("comb store: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    usage(stderr);
    return 2;
}

static int fail(const st_err *err)
{
    fprintf(stderr, "comb store: %s\n", err->msg);
    return 1;
}

/* ---- arguments ------------------------------------------------------------ */

static int set_option(args *a, const optdef *d, const char *val)
{
    if (!d->max) {
        *(const char **)((char *)a + d->off) = val;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    bool size = d->max != UNSET - 1;
    if (errno || end == val || *end || val[0] == '-' || v > d->max || (size && v == 0)) {
        fprintf(stderr, "comb store: %s wants a number from %d to %" PRIu64 ", not '%s'\n",
                d->name, size ? 1 : 0, d->max, val);
        usage(stderr);
        return 2;
    }
    *(uint64_t *)((char *)a + d->off) = v;
    return 0;
}

/* One option at argv[*i] ("--name VALUE" or "--name=VALUE"). */
static int take_option(args *a, int argc, char **argv, int *i)
{
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    for (size_t k = 0; k < NOPTS; k++) {
        const optdef *d = &optdefs[k];
        if (strlen(d->name) != len || strncmp(d->name, arg, len) != 0)
            continue;
        if (!(d->cmds & a->cmd))
            return usage_error("option %s does not apply to this command", d->name);
        if (d->max == FLAG && eq)
            return usage_error("option %s takes no value", d->name);
        if (d->max == FLAG)
            return *(uint64_t *)((char *)a + d->off) = 1, 0;
        if (!eq && *i + 1 >= argc)
            return usage_error("option %s needs a value", d->name);
        return set_option(a, d, eq ? eq + 1 : argv[++*i]);
    }
    return usage_error("unknown option '%s'", arg);
}

static int parse_args(args *a, int argc, char **argv)
{
    *a = (args){.volumes = UNSET, .partitions = UNSET, .tagsets = UNSET, .seed = UNSET,
                .parcel = PARCEL_MB_DEFAULT};
    if (argc < 2)
        return usage_error("a command is needed");
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (!strcmp(argv[1], commands[k].name))
            a->cmd = commands[k].cmd;
    if (!a->cmd)
        return usage_error("unknown command '%s'", argv[1]);
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            int rc = take_option(a, argc, argv, &i);
            if (rc)
                return rc;
        } else if (!a->dir) {
            a->dir = argv[i];
        } else if (a->cmd == C_LOAD) {
            if (!a->files)
                a->files = &argv[i];
            a->nfiles++;
            /* files stay contiguous: options after the first file are refused */
            if (a->files + a->nfiles - 1 != &argv[i])
                return usage_error("options go before the files");
        } else {
            return usage_error("unexpected argument '%s'", argv[i]);
        }
    }
    if (!a->dir)
        return usage_error("the store directory is missing");
    if (a->cmd == C_LOAD && !a->nfiles)
        return usage_error("load needs at least one file");
    return 0;
}

/* The last path component of dir, for a default store name. */
static void base_name(const char *dir, char *out, size_t n)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    snprintf(out, n, "%.*s", (int)(len - start), dir + start);
}

/* ---- create ---------------------------------------------------------------- */

/* The partition key must be a key field, so a tagset has one partition
 * (and an integer or time one to place by windows). */
static int check_partkey(const st_schema *s, const char *partkey, uint64_t bucket,
                         const char *where, st_err *err)
{
    int i = st_schema_find(s, partkey, strlen(partkey));
    if (i >= 0 && (uint32_t)i < s->nkeys) {
        int rc = st_partition_check_bucket(&s->fields[i], bucket, err);
        if (rc < 0)
            st_err_prefix(err, "%s: ", where);
        return rc;
    }
    char keys[512] = "";
    for (uint32_t k = 0; k < s->nkeys; k++)
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", k ? ", " : "",
                 s->fields[k].name);
    return st_err_set(err, ST_EINPUT, "%s: the partition key '%s' must be a key field (%s)",
                      where, partkey, keys);
}

/* Creates dir with the schema s (its canonical text goes into STORE). */
static int create_store(const args *a, const st_schema *s, const char *partkey, st_err *err)
{
    char name[ST_TEXT_MAX + 1];
    base_name(a->dir, name, sizeof name);
    size_t len;
    char *text = st_schema_format(s, &len);
    if (!text)
        return st_err_nomem(err, "schema text");
    st_store_meta meta = {.name = a->name ? a->name : name, .partkey = partkey,
                          .volumes = a->volumes == UNSET ? 1 : (uint32_t)a->volumes,
                          .partitions = a->partitions == UNSET ? 8 : (uint32_t)a->partitions,
                          .bucket = a->bucket,
                          .keytype = st_partition_keytype(
                              &s->fields[st_schema_find(s, partkey, strlen(partkey))]),
                          .schema = text, .schema_len = len};
    int rc = st_store_create(a->dir, &meta, err);
    mem_free(text, len + 1);
    if (rc == 0)
        printf("%s: created, %u volumes x %u partitions, partition key %s\n", a->dir,
               meta.volumes, meta.partitions, partkey);
    return rc;
}

static int do_create(const args *a)
{
    if (!a->schema || !a->partkey)
        return usage_error("create needs --schema FILE and --partition-key FIELD");
    st_err err;
    char *text;
    size_t n;
    if (st_sys_slurp(a->schema, ST_SCHEMA_MAX, &text, &n, &err) < 0)
        return fail(&err);
    st_schema *s = st_update_schema(text, n, &err);
    mem_free(text, n + 1);
    if (!s)
        st_err_prefix(&err, "%s:", a->schema);
    int rc = !s || check_partkey(s, a->partkey, a->bucket, a->schema, &err) < 0 ||
             create_store(a, s, a->partkey, &err) < 0;
    st_schema_free(s);
    return rc ? fail(&err) : 0;
}

/* ---- info ---------------------------------------------------------------------- */

typedef struct totals {
    uint64_t tagsets[ST_NKINDS], tags[ST_NKINDS], bytes[ST_NKINDS];
    int unreadable;
} totals;

static int add_file(const st_file *f, void *ctx)
{
    totals *t = ctx;
    st_err err;
    st_reader *r = st_reader_open(f->path, NULL, &err);
    if (!r) {
        fprintf(stderr, "comb store: %s\n", err.msg);
        t->unreadable++;
        return 0;
    }
    st_file_info fi;
    st_reader_info(r, &fi);
    t->tagsets[f->kind] += fi.ntagsets;
    t->tags[f->kind] += fi.ntags;
    t->bytes[f->kind] += fi.size;
    st_reader_close(r);
    return 0;
}

static int do_info(const args *a)
{
    st_err err;
    st_store *s = st_store_open(a->dir, &err);
    if (!s)
        return fail(&err);
    st_storeinfo in;
    st_store_info(s, &in);
    totals t = {0};
    st_store_files(s, add_file, &t);
    printf("name: %s\nlayout: %u volumes x %u partitions\npartition key: %s\n", in.name,
           in.volumes, in.partitions, in.partkey);
    if (in.bucket && in.keytype[0])
        printf("partition bucket: %" PRIu64 " (placed by ranges of %s)\n", in.bucket, in.partkey);
    else if (in.bucket)
        printf("partition bucket: %" PRIu64 " seconds (placed by time windows)\n", in.bucket);
    printf("generation: %" PRIu64 "\nlabel: %s\n", in.generation, in.label);
    for (int k = 0; k < ST_NKINDS; k++)
        printf("%s: %" PRIu64 " files, %" PRIu64 " tagsets, %" PRIu64 " tags, %" PRIu64
               " bytes\n", st_kind_names[k], in.files[k], t.tagsets[k], t.tags[k], t.bytes[k]);
    printf("schema:\n");
    for (const char *p = in.schema, *end = p + in.schema_len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        printf("    %.*s\n", (int)len, p);
        p += len + 1;
    }
    st_store_close(s);
    return t.unreadable ? 1 : 0;
}

/* ---- verify ---------------------------------------------------------------- */

typedef struct check {
    const st_schema *schema;
    int partkey;    /* the partition key's field */
    uint64_t files, blocks, bad;
} check;

static void report_bad(void *ctx, const char *path, uint64_t block, const char *msg)
{
    (void)path, (void)block; /* msg already reads "FILE: block N: reason" */
    printf("%s\n", msg);
    ((check *)ctx)->bad++;
}

/* The file's size against the manifest's record of it. */
static int check_size(const st_file *f, st_err *err)
{
    struct stat sb;
    if (stat(f->path, &sb) < 0)
        return st_sys_err(err, errno, "%s", f->path);
    if ((uint64_t)sb.st_size != f->size)
        return st_err_set(err, ST_ECORRUPT, "%s: %" PRIu64 " bytes, but the manifest says %" PRIu64,
                          f->path, (uint64_t)sb.st_size, f->size);
    return 0;
}

/* The range of the partition key the manifest records for a tags file
 * against the file's zone maps (which st_reader_verify checks against its
 * values): a query skips the file by it. */
static int check_keys(const check *c, st_reader *r, const st_file *f, st_err *err)
{
    st_zone z;
    if (f->keys.state == ST_KEYS_UNKNOWN || c->partkey < 0)
        return 0;
    if (st_reader_zone(r, (uint32_t)c->partkey, &z, err) < 0)
        return -1;
    if (st_mkeys_match(&f->keys, z.min, z.max))
        return 0;
    return st_err_set(err, ST_ECORRUPT, "%s: the manifest's range of the partition key is not "
                      "the file's (a query would skip rows it holds, or read it for none)", f->path);
}

/* The file's schema against the store's, and its keys against the
 * manifest's; counts its blocks. */
static int check_schema(check *c, const st_file *f, st_err *err)
{
    st_reader *r = st_reader_open(f->path, NULL, err);
    if (!r)
        return -1;
    int rc = 0;
    if (!st_schema_equal(st_reader_schema(r), c->schema))
        rc = st_err_set(err, ST_ECORRUPT, "%s: its schema differs from the store's", f->path);
    else
        rc = check_keys(c, r, f, err);
    st_file_info fi;
    st_reader_info(r, &fi);
    c->blocks += fi.nblocks;
    st_reader_close(r);
    return rc;
}

static void report(check *c, const st_err *err)
{
    printf("%s\n", err->msg);
    c->bad++;
}

static int verify_file(const st_file *f, void *ctx)
{
    check *c = ctx;
    st_err err;
    c->files++;
    if (check_size(f, &err) < 0)
        report(c, &err);
    if (check_schema(c, f, &err) < 0 || st_reader_verify(f->path, NULL, report_bad, c, &err) < 0) {
        if (err.code == ST_ENOMEM)
            return fail(&err);
        report(c, &err);
    }
    return 0;
}

static int do_verify(const args *a)
{
    st_err err;
    st_store *s = st_store_open(a->dir, &err);
    if (!s)
        return fail(&err);
    st_schema *schema = st_update_store_schema(s, &err);
    st_storeinfo info;
    st_store_info(s, &info);
    check c = {.schema = schema, .partkey = schema ? st_schema_find(schema, info.partkey,
                                                                   strlen(info.partkey)) : -1};
    int rc = schema ? st_store_files(s, verify_file, &c) : fail(&err);
    st_schema_free(schema);
    st_store_close(s);
    if (rc)
        return 1;
    printf("%s: %" PRIu64 " files, %" PRIu64 " blocks: %s\n", a->dir, c.files, c.blocks,
           c.bad ? "DAMAGED" : "ok");
    return c.bad ? 1 : 0;
}

/* ---- load and gen ---------------------------------------------------------------- */

static void load_opts(const args *a, const char *label, st_load_opts *o)
{
    st_load_opts_default(o);
    o->update.write.label = label;
    o->sort.parcel_bytes = (size_t)a->parcel << 20;
    o->update.mode = a->replace ? ST_UPDATE_REPLACE : ST_UPDATE_COMBINE;
}

static int finish_load(const args *a, st_store *s, st_load *l, st_err *err)
{
    st_update_stats st;
    uint64_t n = st_load_count(l);
    if (st_load_commit(l, &st, err) != 0)
        return -1; /* -2: committed, but the message says it may not survive a crash */
    st_storeinfo in;
    st_store_info(s, &in);
    printf("%s: loaded %" PRIu64 " records into %" PRIu64 " partitions: %" PRIu64
           " tagsets, %" PRIu64 " tags now there; generation %" PRIu64 "\n",
           a->dir, n, st.partitions, st.out_tagsets, st.out_tags, in.generation);
    return 0;
}

static int do_load(const args *a)
{
    st_err err;
    st_store *s = st_store_open(a->dir, &err);
    if (!s)
        return fail(&err);
    st_load_opts o;
    load_opts(a, a->label, &o);
    st_load *l = st_load_new(s, &o, &err);
    int rc = -1;
    for (int i = 0; l && i < a->nfiles; i++)
        if (store_text_load(l, a->files[i], a->header != 0, &err) < 0)
            goto done;
    rc = l ? finish_load(a, s, l, &err) : -1;
    l = NULL; /* the commit ended it */
done:
    st_load_free(l);
    st_store_close(s);
    return rc ? fail(&err) : 0;
}

/* Feeds n generated calls to the loader: one record per tag, a marker for a call without. */
static int gen_calls(st_load *l, uint64_t n, uint64_t seed, st_err *err)
{
    const st_schema *s = st_load_schema(l);
    demo_gen g;
    if (demo_init(&g, s, seed, err) < 0)
        return -1;
    unsigned char *row = mem_alloc(s->row_size), *tags = mem_alloc(ST_GEN_MAX_TAGS * s->tag_size);
    int rc = row && tags ? 0 : st_err_nomem(err, "gen");
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        uint32_t k = demo_next(&g, row, tags);
        if (k == 0)
            rc = st_load_add(l, row, NULL, err);
        for (uint32_t j = 0; j < k && rc == 0; j++)
            rc = st_load_add(l, row, tags + (size_t)j * s->tag_size, err);
    }
    mem_free(row, s->row_size);
    mem_free(tags, ST_GEN_MAX_TAGS * s->tag_size);
    return rc;
}

static int do_gen(const args *a)
{
    if (a->tagsets == UNSET)
        return usage_error("gen needs --tagsets N");
    struct stat sb;
    st_err err;
    if (stat(a->dir, &sb) == 0 && (a->volumes != UNSET || a->partitions != UNSET || a->name))
        return usage_error("%s exists: --volumes, --partitions and --name are for a new store",
                           a->dir);
    if (stat(a->dir, &sb) < 0) {
        st_schema *s = st_schema_parse(demo_schema, strlen(demo_schema), 1, 1, &err);
        int rc = s ? create_store(a, s, ST_GEN_PARTKEY, &err) : -1;
        st_schema_free(s);
        if (rc < 0)
            return fail(&err);
    }
    uint64_t seed = a->seed == UNSET ? 1 : a->seed;
    char label[64];
    snprintf(label, sizeof label, "gen seed %" PRIu64, seed);
    st_store *s = st_store_open(a->dir, &err);
    if (!s)
        return fail(&err);
    st_load_opts o;
    load_opts(a, a->label ? a->label : label, &o);
    st_load *l = st_load_new(s, &o, &err);
    int rc = -1;
    if (l && gen_calls(l, a->tagsets, seed, &err) < 0)
        st_load_free(l);
    else if (l)
        rc = finish_load(a, s, l, &err); /* ends l */
    st_store_close(s);
    return rc ? fail(&err) : 0;
}

int cmd_store(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)   /* `comb store gen --help` too */
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc;
    switch (a.cmd) {
    case C_CREATE: return do_create(&a);
    case C_INFO: return do_info(&a);
    case C_VERIFY: return do_verify(&a);
    case C_LOAD: return do_load(&a);
    default: return do_gen(&a);
    }
}
