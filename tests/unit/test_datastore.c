/* test_datastore: create/open/info, placement, snapshots that outlive commits,
 * writer locks, commits that fail or are killed midway, damaged manifests. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/datastore.h"
#include "store/mem.h"
#include "store/sysio.h"
#include "store/tagfile.h"
#include "tests/unit/tmpdir.h"

#define VOLS 4
#define PARTS 3
static const char schema[] = "schema calls {\n  key onum: u64\n  tag sys: char[4]\n}\n";

static char tmp[PATH_MAX], dir[PATH_MAX + 16];

static st_store_meta meta(void)
{
    return (st_store_meta){.name = "test calls", .partkey = "onum", .volumes = VOLS,
                           .partitions = PARTS, .schema = schema,
                           .schema_len = sizeof schema - 1};
}

static int setup(void **state)
{
    (void)state;
    tmp_make("ds", tmp);
    snprintf(dir, sizeof dir, "%s/store", tmp);
    st_err err;
    st_store_meta m = meta();
    if (st_store_create(dir, &m, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tmp_reset(tmp);
    return 0;
}

/* ---- helpers ------------------------------------------------------------ */

/* What a test writes into a staged file: enough to tell which file it is. */
static void content_for(char *buf, size_t n, uint32_t v, uint32_t p, st_kind k, uint64_t gen)
{
    snprintf(buf, n, "v%u p%u %s gen %llu\n", v, p, st_kind_names[k], (unsigned long long)gen);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static int file_equals(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* Stages (v, p, k) in t and writes its test content; returns the path. */
static const char *stage_write(st_txn *t, uint32_t v, uint32_t p, st_kind k)
{
    const char *path;
    st_err err;
    if (st_store_stage(t, v, p, k, &path, &err) < 0)
        fail_msg("%s", err.msg);
    const char *dot = strrchr(path, '.');
    char text[128];
    content_for(text, sizeof text, v, p, k, strtoull(dot + 1, NULL, 10));
    write_file(path, text);
    return path;
}

/* Checks every file a snapshot names: its content says it is that file. */
static int check_file(const st_file *f, void *ctx)
{
    char text[128];
    content_for(text, sizeof text, f->vol, f->part, f->kind, f->gen);
    assert_true(file_equals(f->path, text));
    assert_int_equal(f->size, strlen(text));
    ++*(int *)ctx;
    return 0;
}

/* Opens dir, checks it whole, returns its generation (and file count). */
static uint64_t check_store(int *nfiles)
{
    st_err err;
    st_store *s = st_store_open(dir, &err);
    if (!s)
        fail_msg("%s", err.msg);
    int n = 0;
    assert_int_equal(st_store_files(s, check_file, &n), 0);
    st_storeinfo info;
    st_store_info(s, &info);
    assert_int_equal(info.files[ST_TAGS] + info.files[ST_ADDS] + info.files[ST_DELS], n);
    st_store_close(s);
    if (nfiles)
        *nfiles = n;
    return info.generation;
}

/* Files under the partition directories. */
static int partition_files(void)
{
    int n = 0;
    char vdir[PATH_MAX + 32];
    for (int v = 0; v < VOLS; v++) {
        snprintf(vdir, sizeof vdir, "%s/v%03d", dir, v);
        n += tmp_count(vdir, NULL);
    }
    return n;
}

/* A begin and abort cleans the whole store; then only named files remain. */
static void assert_no_garbage(void)
{
    st_err err;
    st_store *s = st_store_open(dir, &err);
    assert_non_null(s);
    st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    if (!t)
        fail_msg("%s", err.msg);
    st_store_abort(t);
    st_store_close(s);
    int named;
    check_store(&named);
    assert_int_equal(partition_files(), named);
}

/* ---- tests -------------------------------------------------------------- */

static void create_open_info(void **state)
{
    (void)state;
    st_err err;
    st_store *s = st_store_open(dir, &err);
    assert_non_null(s);
    st_storeinfo info;
    st_store_info(s, &info);
    assert_string_equal(info.name, "test calls");
    assert_string_equal(info.partkey, "onum");
    assert_int_equal(info.volumes, VOLS);
    assert_int_equal(info.partitions, PARTS);
    assert_int_equal(info.schema_len, sizeof schema - 1);
    assert_memory_equal(info.schema, schema, sizeof schema - 1);
    assert_int_equal(info.generation, 0);
    assert_string_equal(info.label, "");
    for (int k = 0; k < ST_NKINDS; k++)
        assert_int_equal(info.files[k], 0);
    st_store_close(s);
    int ndirs;
    assert_int_equal(tmp_count(dir, &ndirs), 5); /* STORE MANIFEST LOCK READERS COMMITS */
    assert_int_equal(ndirs, VOLS * (PARTS + 1));

    st_store_meta m = meta();
    assert_int_equal(st_store_create(dir, &m, &err), -1);
    assert_non_null(strstr(err.msg, "already exists"));
    assert_non_null(strstr(err.msg, dir));
}

static void bad_metadata_is_refused(void **state)
{
    (void)state;
    char other[PATH_MAX + 16];
    snprintf(other, sizeof other, "%s/other", tmp);
    st_store_meta bad[5];
    for (int i = 0; i < 5; i++)
        bad[i] = meta();
    bad[0].volumes = 0;
    bad[1].partitions = ST_MAX_PARTITIONS + 1;
    bad[2].name = "two\nlines";
    bad[3].partkey = "on um";
    bad[4].name = "";
    for (int i = 0; i < 5; i++) {
        st_err err;
        assert_int_equal(st_store_create(other, &bad[i], &err), -1);
        assert_int_equal(err.code, ST_EINPUT);
        assert_false(exists(other));
    }
}

static void failed_create_leaves_nothing(void **state)
{
    (void)state;
    char other[PATH_MAX + 16];
    snprintf(other, sizeof other, "%s/other", tmp);
    const st_sys_op ops[] = {ST_SYS_OPEN, ST_SYS_WRITE, ST_SYS_FSYNC, ST_SYS_RENAME};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        for (unsigned long nth = 1;; nth++) {
            st_err err;
            st_store_meta m = meta();
            st_sys_fail_after(ops[i], nth, EIO);
            int rc = st_store_create(other, &m, &err);
            st_sys_fail_reset();
            if (rc == 0)
                break;
            assert_non_null(strstr(err.msg, "Input/output error"));
            /* Only syncing the parent directory (open, fsync) comes after
             * the rename: then the store exists, complete. */
            if (exists(other)) {
                assert_true(ops[i] == ST_SYS_OPEN || ops[i] == ST_SYS_FSYNC);
                assert_int_equal(tmp_count(other, NULL), 5);
                tmp_remove(other);
            }
            assert_int_equal(tmp_count(tmp, NULL), 5); /* just the store of setup */
        }
        tmp_remove(other);
    }
}

static void placement_is_fixed_and_uniform(void **state)
{
    (void)state;
    /* Placement is part of the format: this value must never change. */
    assert_int_equal(st_partition_of("7325551212", 10, 4836), 3726);
    uint32_t v, p;
    st_partition_split(3726, 52, &v, &p);
    assert_int_equal(v, 71);
    assert_int_equal(p, 34);
    st_partition_split(4835, 52, &v, &p);
    assert_int_equal(v, 92);
    assert_int_equal(p, 51);

    enum { N = 1000000, P = 4836 };
    static unsigned counts[P];
    for (uint64_t i = 0; i < N; i++) {
        uint64_t onum = 7320000000ULL + i * 7919;
        uint32_t g = st_partition_of(&onum, sizeof onum, P);
        assert_true(g < P);
        assert_int_equal(g, XXH3_64bits(&onum, sizeof onum) % P);
        counts[g]++;
    }
    /* Chi-square with P - 1 degrees of freedom: mean 4835, sd ~98. */
    double expect = (double)N / P, chi = 0;
    for (int g = 0; g < P; g++)
        chi += (counts[g] - expect) * (counts[g] - expect) / expect;
    assert_true(chi > 4835 - 6 * 98 && chi < 4835 + 6 * 98);

    st_err err;
    st_store *s = st_store_open(dir, &err);
    uint64_t onum = 7325551212ULL;
    st_store_place(s, &onum, sizeof onum, &v, &p);
    assert_int_equal(v * PARTS + p, st_partition_of(&onum, sizeof onum, VOLS * PARTS));
    st_store_close(s);
}

/* A store placed by time windows: window floor(t / bucket) goes to
 * partition window mod V x P (negative times too), its STORE says so in a
 * version 2 file, and a store placed by hash still writes, byte for byte,
 * the version 1 STORE the code before windows wrote (here as that code
 * wrote it), which this code reads. */
static void time_windows_place_consecutive_partitions(void **state)
{
    (void)state;
    /* Part of the format: these values must never change. */
    assert_int_equal(st_partition_of_time(0, 86400, 8), 0);
    assert_int_equal(st_partition_of_time(86399, 86400, 8), 0);
    assert_int_equal(st_partition_of_time(86400, 86400, 8), 1);
    assert_int_equal(st_partition_of_time(7 * 86400 + 5, 86400, 8), 7);
    assert_int_equal(st_partition_of_time(8 * 86400, 86400, 8), 0);
    assert_int_equal(st_partition_of_time(-1, 86400, 8), 7);
    assert_int_equal(st_partition_of_time(-86400, 86400, 8), 7);
    assert_int_equal(st_partition_of_time(-86401, 86400, 8), 6);
    assert_int_equal(st_partition_of_time(INT64_MIN, 1, 3), 1);   /* -2^63 mod 3 = 1 */
    assert_int_equal(st_partition_of_time(1796083200, 21600, 28), (1796083200 / 21600) % 28);

    st_field t = {(char *)"ts", ST_TIME, ST_KEY, 8, 0, 0, NULL, false, false, false};
    st_field u = {(char *)"dnum", ST_CHAR, ST_KEY, 8, 0, 0, NULL, false, false, false};
    st_err err;
    assert_int_equal(st_partition_check_bucket(&t, 86400, &err), 0);
    assert_null(st_partition_keytype(&t));
    assert_int_equal(st_partition_check_bucket(&u, 0, &err), 0);
    assert_int_equal(st_partition_check_bucket(&u, 86400, &err), -1);
    assert_string_equal(err.msg, "a partition bucket needs an integer or time partition key; "
                                 "'dnum' is not one");

    char other[PATH_MAX + 16], path[PATH_MAX + 32];
    snprintf(other, sizeof other, "%s/windows", tmp);
    st_store_meta m = meta();
    m.partkey = "ts";
    m.bucket = 86400;
    assert_int_equal(st_store_create(other, &m, &err), 0);
    st_store *s = st_store_open(other, &err);
    assert_non_null(s);
    st_storeinfo info;
    st_store_info(s, &info);
    assert_int_equal(info.bucket, 86400);
    uint32_t v, p;
    int64_t when = 1796083200 + 3 * 86400;
    st_store_place(s, &when, sizeof when, &v, &p);
    assert_int_equal(v * PARTS + p, (1796083200 / 86400 + 3) % (VOLS * PARTS));
    st_store_close(s);
    st_meta sm;
    snprintf(path, sizeof path, "%s/STORE", other);
    assert_int_equal(st_meta_load(&sm, path, &err), 0);
    assert_int_equal(sm.bucket, 86400);
    st_meta_free(&sm);
    char *text;
    size_t n;
    assert_int_equal(st_sys_slurp(path, 1 << 16, &text, &n, &err), 0);
    assert_true(n > 24 && !memcmp(text, "comb-store 2\n", 13));
    assert_non_null(strstr(text, "\npartkey ts\npartbucket 86400\nschema "));
    mem_free(text, n + 1);
    tmp_remove(other);

    /* version 1, as comb wrote it before windows (comb store create oldst
     * --schema old.schema --partition-key ts --partitions 4 --name old) */
    static const char old[] = "comb-store 1\nname old\nvolumes 1\npartitions 4\npartkey ts\n"
                              "schema 40\nkey ts: time\nkey onum: u64\ntag dur: u32\n\n"
                              "xxh3 904965b0de4c0d61\n";
    snprintf(path, sizeof path, "%s/STORE.old", tmp);
    write_file(path, old);
    assert_int_equal(st_meta_load(&sm, path, &err), 0);
    assert_string_equal(sm.name, "old");
    assert_string_equal(sm.partkey, "ts");
    assert_int_equal(sm.partitions, 4);
    assert_int_equal(sm.bucket, 0);
    assert_int_equal(st_meta_format(&sm, &text, &n, &err), 0);
    assert_int_equal(n, sizeof old - 1);
    assert_memory_equal(text, old, n);
    mem_free(text, n + 1);
    st_meta_free(&sm);
    remove(path);
}

/* Range partitioning: a store placed by windows of another integer key
 * (an event store's run) names the key's type in a version 3 STORE, reads
 * it as that type (unsigned past 2^63, signed below zero), and a range of
 * the key maps to the partitions of the windows it spans. */
static void integer_windows_place_ranges(void **state)
{
    (void)state;
    char path[PATH_MAX + 32], other[PATH_MAX + 16];
    st_err err;
    st_store_meta m = meta();
    m.bucket = 10;
    m.keytype = "u64";
    snprintf(other, sizeof other, "%s/ranges", tmp);
    assert_int_equal(st_store_create(other, &m, &err), 0);
    snprintf(path, sizeof path, "%s/STORE", other);
    char *text;
    size_t n;
    assert_int_equal(st_sys_slurp(path, 1 << 16, &text, &n, &err), 0);
    assert_true(n > 24 && !memcmp(text, "comb-store 3\n", 13));
    assert_non_null(strstr(text, "\npartkey onum\npartbucket 10\npartkeytype u64\nschema "));
    mem_free(text, n + 1);
    st_store *s = st_store_open(other, &err);
    assert_non_null(s);
    st_storeinfo info;
    st_store_info(s, &info);
    assert_string_equal(info.keytype, "u64");
    uint32_t v, p, g[VOLS * PARTS], ng;
    uint64_t big = (1ULL << 63) + 25, lo = 25, hi = 44, zero = 0;
    st_store_place(s, &big, sizeof big, &v, &p);
    assert_int_equal(v * PARTS + p, (big / 10) % (VOLS * PARTS));
    assert_true(st_store_place_range(s, &lo, &hi, 8, g, &ng));
    assert_int_equal(ng, 3);
    assert_int_equal(g[0], 2);
    assert_int_equal(g[2], 4);
    assert_true(st_store_place_range(s, &hi, &lo, 8, g, &ng));
    assert_int_equal(ng, 0);
    assert_true(st_store_place_range(s, &zero, NULL, 8, g, &ng));
    assert_int_equal(ng, VOLS * PARTS);
    assert_true(st_store_place_range(s, &big, NULL, 8, g, &ng));   /* windows up to 2^64 / 10 */
    assert_int_equal(ng, VOLS * PARTS);
    st_store_close(s);
    tmp_remove(other);

    m.keytype = "i32";  /* a signed narrower key: -1 is in window -1 */
    assert_int_equal(st_store_create(other, &m, &err), 0);
    s = st_store_open(other, &err);
    assert_non_null(s);
    int32_t neg = -1, lo32 = -25, hi32 = -11;
    st_store_place(s, &neg, sizeof neg, &v, &p);
    assert_int_equal(v * PARTS + p, VOLS * PARTS - 1);
    assert_true(st_store_place_range(s, &lo32, &hi32, 4, g, &ng));
    assert_int_equal(ng, 2);    /* windows -3 and -2 */
    assert_int_equal(g[0], VOLS * PARTS - 3);
    assert_int_equal(g[1], VOLS * PARTS - 2);
    assert_true(st_store_place_range(s, NULL, &hi32, 4, g, &ng));
    assert_int_equal(ng, VOLS * PARTS);
    st_store_close(s);
    tmp_remove(other);

    /* placed by hash: a range says nothing */
    s = st_store_open(dir, &err);
    assert_false(st_store_place_range(s, &lo, &hi, 8, g, &ng));
    st_store_close(s);

    /* a STORE naming a type that is no integer is refused */
    st_meta sm = {.volumes = 1, .partitions = 1, .bucket = 1, .schema = (char *)"", .schema_len = 0};
    strcpy(sm.name, "x");
    strcpy(sm.partkey, "k");
    strcpy(sm.keytype, "f64");
    assert_int_equal(st_meta_format(&sm, &text, &n, &err), 0);
    snprintf(path, sizeof path, "%s/STORE.bad", tmp);
    write_file(path, text);
    mem_free(text, n + 1);
    assert_int_equal(st_meta_load(&sm, path, &err), -1);
    assert_non_null(strstr(err.msg, "partkeytype f64 is not an integer type"));
    remove(path);
}

static void commits_show_new_files_while_snapshots_keep_old(void **state)
{
    (void)state;
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    assert_non_null(t);
    stage_write(t, 0, 0, ST_TAGS);
    stage_write(t, 1, 2, ST_ADDS);
    assert_int_equal(st_store_set_label(t, "cycle 2024-01-01", &err), 0);
    assert_int_equal(st_store_commit(t, &err), 0);
    st_storeinfo info;
    st_store_info(s, &info);
    assert_int_equal(info.generation, 1);
    assert_string_equal(info.label, "cycle 2024-01-01");
    assert_int_equal(info.files[ST_TAGS], 1);
    assert_int_equal(info.files[ST_ADDS], 1);

    st_store *r1 = st_store_open(dir, &err);
    st_file f1;
    assert_int_equal(st_store_file(r1, 0, 0, ST_TAGS, &f1, &err), 1);
    assert_int_equal(f1.gen, 1);
    assert_int_equal(st_store_file(r1, 0, 0, ST_DELS, &f1, &err), 0);
    assert_int_equal(st_store_file(r1, 0, 0, ST_TAGS, &f1, &err), 1);

    /* A volume writer replaces tags in 0/0 and drops adds elsewhere later. */
    t = st_store_begin(s, 0, &err);
    assert_non_null(t);
    stage_write(t, 0, 0, ST_TAGS);
    assert_int_equal(st_store_commit(t, &err), 0);
    t = st_store_begin(s, 1, &err);
    assert_int_equal(st_store_drop(t, 1, 2, ST_ADDS, &err), 0);
    stage_write(t, 1, 2, ST_DELS);
    assert_int_equal(st_store_commit(t, &err), 0);
    st_store_info(s, &info);
    assert_int_equal(info.generation, 3);
    assert_string_equal(info.label, "cycle 2024-01-01"); /* kept until set */

    /* r1 still reads its generation's files; a new reader sees the new ones. */
    assert_true(exists(f1.path));
    int n;
    assert_int_equal(st_store_files(r1, check_file, &(int){0}), 0);
    st_store *r2 = st_store_open(dir, &err);
    st_file f2;
    assert_int_equal(st_store_file(r2, 0, 0, ST_TAGS, &f2, &err), 1);
    assert_int_equal(f2.gen, 2);
    assert_int_equal(st_store_file(r2, 1, 2, ST_ADDS, &f2, &err), 0);
    assert_int_equal(st_store_file(r2, 1, 2, ST_DELS, &f2, &err), 1);
    assert_int_equal(f2.gen, 3);
    check_store(&n);
    assert_int_equal(n, 2);

    /* A begin while r1 pins generation 1 keeps its files ... */
    t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    st_store_abort(t);
    assert_true(exists(f1.path));
    /* ... and the next begin after r1 closes removes them. */
    st_store_close(r1);
    t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    st_store_abort(t);
    assert_false(exists(f1.path));
    assert_int_equal(partition_files(), 2);
    st_store_close(r2);
    st_store_close(s);
}

/* A reader pinned at an old generation keeps only the files of its own
 * generation: those commits made and superseded since go at once, at the
 * commit that supersedes them or at the next begin. */
static void a_pin_keeps_only_its_own_files(void **state)
{
    (void)state;
    st_err err;
    st_store *s = st_store_open(dir, &err), *r1 = NULL;
    char paths[5][PATH_MAX];
    for (int g = 1; g <= 4; g++) {
        st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
        assert_non_null(t);
        snprintf(paths[g], sizeof paths[g], "%s", stage_write(t, 0, 0, ST_TAGS));
        if (g == 2)
            stage_write(t, 1, 1, ST_ADDS);
        if (g == 3)
            assert_int_equal(st_store_drop(t, 1, 1, ST_ADDS, &err), 0);
        assert_int_equal(st_store_commit(t, &err), 0);
        if (g == 1)
            assert_non_null(r1 = st_store_open(dir, &err));  /* pins generation 1 */
    }
    assert_true(exists(paths[1]));     /* the pinned generation's */
    assert_false(exists(paths[2]));    /* superseded at 3, no pin in [2, 3) */
    assert_false(exists(paths[3]));
    assert_true(exists(paths[4]));
    /* adds.2 of 1/1, dropped at 3: a begin removes it (no pin in [2, 3)) */
    st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    st_store_abort(t);
    assert_int_equal(partition_files(), 2);
    st_store_close(r1);
    t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    st_store_abort(t);
    assert_false(exists(paths[1]));
    assert_int_equal(partition_files(), 1);
    st_store_close(s);
}

/* A snapshot shared by st_store_ref stays pinned until its last holder
 * closes it: the next writer keeps its files until then. */
static void shared_snapshots_pin_until_the_last_close(void **state)
{
    (void)state;
    st_err err;
    st_store *w = st_store_open(dir, &err);
    st_txn *t = st_store_begin(w, ST_ALL_VOLUMES, &err);
    stage_write(t, 0, 0, ST_TAGS);
    assert_int_equal(st_store_commit(t, &err), 0);
    st_store *r = st_store_open(dir, &err);
    assert_false(st_store_shared(r));
    assert_ptr_equal(st_store_ref(r), r);
    assert_true(st_store_shared(r));
    st_file f;
    assert_int_equal(st_store_file(r, 0, 0, ST_TAGS, &f, &err), 1);
    t = st_store_begin(w, ST_ALL_VOLUMES, &err);
    stage_write(t, 0, 0, ST_TAGS);
    assert_int_equal(st_store_commit(t, &err), 0);
    st_store_close(r);      /* one holder left: still pinned */
    assert_false(st_store_shared(r));
    st_store_abort(st_store_begin(w, ST_ALL_VOLUMES, &err));
    assert_true(exists(f.path));
    assert_int_equal(st_store_files(r, check_file, &(int){0}), 0);
    st_store_close(r);      /* the last: the next writer cleans its files */
    st_store_abort(st_store_begin(w, ST_ALL_VOLUMES, &err));
    assert_false(exists(f.path));
    st_store_close(w);
}

/* A writer builds on the files it replaces: begin moves an old handle to
 * the generation current under the lock, so a later writer of the volume
 * sees (and would merge into) what an earlier one committed. */
static void begin_moves_the_snapshot_to_the_current_generation(void **state)
{
    (void)state;
    st_err err;
    st_store *old = st_store_open(dir, &err), *s2 = st_store_open(dir, &err);
    assert_non_null(old);
    st_txn *t = st_store_begin(s2, 1, &err);
    assert_non_null(t);
    stage_write(t, 1, 0, ST_TAGS);
    assert_int_equal(st_store_commit(t, &err), 0);
    st_store_close(s2);
    st_file f;
    assert_int_equal(st_store_file(old, 1, 0, ST_TAGS, &f, &err), 0); /* a reader keeps its view */
    t = st_store_begin(old, 1, &err);
    assert_non_null(t);
    assert_int_equal(st_store_file(old, 1, 0, ST_TAGS, &f, &err), 1);
    assert_int_equal(f.gen, 1);
    assert_true(exists(f.path));
    stage_write(t, 1, 1, ST_TAGS);
    assert_int_equal(st_store_commit(t, &err), 0);
    /* The begin moved the handle's pin too: nothing holds generation 0 back. */
    st_storeinfo info;
    st_store_info(old, &info);
    assert_int_equal(info.generation, 2);
    assert_int_equal(info.files[ST_TAGS], 2);
    t = st_store_begin(old, 1, &err); /* already current: the pin stays */
    assert_non_null(t);
    st_store_abort(t);
    st_store *r = st_store_open(dir, &err);
    assert_non_null(r);
    assert_int_equal(st_store_files(r, check_file, &(int){0}), 0);
    st_store_close(r);
    st_store_close(old);
}

static void writers_exclude_each_other_by_scope(void **state)
{
    (void)state;
    st_err err;
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    st_store *s = st_store_open(dir, &err), *s2 = st_store_open(dir, &err);
    st_txn *t0 = st_store_begin(s, 0, &err);
    assert_non_null(t0);
    assert_null(st_store_begin(s2, 0, &err));
    assert_non_null(strstr(err.msg, "volume 0 is being written by"));
    assert_non_null(strstr(err.msg, pid));
    assert_null(st_store_begin(s2, ST_ALL_VOLUMES, &err));
    assert_non_null(strstr(err.msg, "volume 0 is being written by"));
    /* Another volume proceeds in parallel; both commits land. */
    st_txn *t1 = st_store_begin(s2, 1, &err);
    assert_non_null(t1);
    stage_write(t1, 1, 0, ST_TAGS);
    stage_write(t0, 0, 1, ST_TAGS);
    assert_int_equal(st_store_stage(t0, 1, 1, ST_TAGS, &(const char *){0}, &err), -1);
    assert_non_null(strstr(err.msg, "holds volume 0, not volume 1"));
    assert_int_equal(st_store_commit(t1, &err), 0);
    assert_int_equal(st_store_commit(t0, &err), 0);
    int n;
    assert_int_equal(check_store(&n), 2);
    assert_int_equal(n, 2);

    st_txn *all = st_store_begin(s, ST_ALL_VOLUMES, &err);
    assert_non_null(all);
    assert_null(st_store_begin(s2, 3, &err));
    assert_non_null(strstr(err.msg, "the store is being written by"));
    assert_non_null(strstr(err.msg, pid));
    st_store_abort(all);
    st_store_close(s);
    st_store_close(s2);
}

static void a_writer_in_another_process_is_named(void **state)
{
    (void)state;
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        st_err err;
        st_store *s = st_store_open(dir, &err);
        st_txn *t = s ? st_store_begin(s, ST_ALL_VOLUMES, &err) : NULL;
        char c = t ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(2);
        _exit(t ? 0 : 1); /* exits holding the lock: the kernel drops it */
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    st_err err;
    st_store *s = st_store_open(dir, &err);
    assert_null(st_store_begin(s, 2, &err));
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)child);
    assert_non_null(strstr(err.msg, pid));
    assert_non_null(strstr(err.msg, "/LOCK"));
    assert_int_equal(write(go[1], "x", 1), 1);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_int_equal(WEXITSTATUS(status), 0);
    st_txn *t = st_store_begin(s, 2, &err);
    assert_non_null(t);
    st_store_abort(t);
    st_store_close(s);
    close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
}

/* One commit of two replaced files and one new one, with a fault injected. */
static int faulty_commit(st_sys_op op, unsigned long nth, const char **paths, st_err *err)
{
    st_store *s = st_store_open(dir, err);
    assert_non_null(s);
    st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, err);
    assert_non_null(t);
    paths[0] = stage_write(t, 0, 0, ST_TAGS);
    paths[1] = stage_write(t, 3, 2, ST_TAGS);
    paths[2] = stage_write(t, 2, 1, ST_DELS);
    st_sys_fail_after(op, nth, ENOSPC);
    int rc = st_store_commit(t, err);
    st_sys_fail_reset();
    st_store_close(s);
    return rc;
}

static void failed_commits_leave_the_previous_generation(void **state)
{
    (void)state;
    const char *paths[3];
    st_err err;
    assert_int_equal(faulty_commit(ST_SYS_OPEN, 0, paths, &err), 0);
    const st_sys_op ops[] = {ST_SYS_OPEN, ST_SYS_WRITE, ST_SYS_FSYNC, ST_SYS_RENAME};
    int failures = 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        for (unsigned long nth = 1;; nth++) {
            uint64_t before = check_store(NULL);
            int rc = faulty_commit(ops[i], nth, paths, &err);
            if (rc == 0)
                break;
            failures++;
            assert_non_null(strstr(err.msg, "No space left on device"));
            uint64_t after = check_store(NULL);
            if (rc == -1) {
                /* Not committed: the old generation stands, staged files gone. */
                assert_int_equal(after, before);
                for (int f = 0; f < 3; f++)
                    assert_false(exists(paths[f]));
            } else {
                /* Only the directory fsync after the rename failed. */
                assert_int_equal(rc, -2);
                assert_int_equal(after, before + 1);
                assert_non_null(strstr(err.msg, "is committed"));
            }
        }
    }
    assert_true(failures >= 8);
    assert_no_garbage();
}

/* The child commits generation after generation until it is killed. */
static void commit_forever(void)
{
    st_err err;
    st_store *s = st_store_open(dir, &err);
    if (!s)
        _exit(3);
    for (unsigned i = 0;; i++) {
        st_txn *t = st_store_begin(s, i % 2 ? 1 : ST_ALL_VOLUMES, &err);
        if (!t)
            _exit(4);
        for (uint32_t p = 0; p < PARTS; p++) {
            stage_write(t, 1, p, ST_TAGS);
            stage_write(t, 1, p, i % 3 ? ST_ADDS : ST_DELS);
        }
        if (st_store_commit(t, &err) < 0)
            _exit(5);
    }
}

/* The current generation, as a new reader sees it. */
static uint64_t generation_now(void)
{
    st_err err;
    st_store *s = st_store_open(dir, &err);
    if (!s)
        fail_msg("%s", err.msg);
    st_storeinfo info;
    st_store_info(s, &info);
    st_store_close(s);
    return info.generation;
}

static void killed_writers_leave_old_or_new_never_half(void **state)
{
    (void)state;
    uint64_t last = 0;
    srand(12345);
    for (int round = 0; round < 25; round++) {
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0)
            commit_forever();
        /* Once it has committed, kill it at a random point of what follows. */
        for (int ms = 0; generation_now() == last && ms < 20000; ms++)
            usleep(1000);
        usleep((useconds_t)(rand() % 10000));
        kill(child, SIGKILL);
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFSIGNALED(status)); /* it was still committing */
        uint64_t gen = check_store(NULL);
        assert_true(gen > last);
        last = gen;
    }
    assert_no_garbage();
}

static void crashed_writer_garbage_is_cleaned_in_scope(void **state)
{
    (void)state;
    pid_t child = fork();
    if (child == 0) {
        st_err err;
        st_store *s = st_store_open(dir, &err);
        st_txn *t = st_store_begin(s, 2, &err);
        const char *path = stage_write(t, 2, 1, ST_TAGS);
        char tmpname[PATH_MAX + 16];
        snprintf(tmpname, sizeof tmpname, "%s.tmp-99-1", path);
        write_file(tmpname, "half a file");
        t = st_store_begin(s, 3, &err);
        stage_write(t, 3, 0, ST_ADDS);
        _exit(0); /* no commit */
    }
    int status;
    waitpid(child, &status, 0);
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(partition_files(), 3);
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_txn *t = st_store_begin(s, 2, &err); /* cleans volume 2 only */
    assert_int_equal(partition_files(), 1);
    st_store_abort(t);
    st_store_close(s);
    assert_no_garbage();
}

static void damaged_manifests_are_detected(void **state)
{
    (void)state;
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    stage_write(t, 1, 1, ST_TAGS);
    assert_int_equal(st_store_commit(t, &err), 0);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    char *good;
    size_t n;
    assert_int_equal(st_sys_slurp(path, 1 << 20, &good, &n, &err), 0);

    struct {
        const char *find, *replace; /* edit of the good manifest */
        int fix_sum;                /* recompute the checksum after the edit */
        int code;
        const char *msg;
    } cases[] = {
        {"generation 1", "generation 7", 0, ST_ECORRUPT, "checksum mismatch"},
        {"p 1 1", "p 1 2", 0, ST_ECORRUPT, "checksum mismatch"},
        {"comb-manifest 1", "comb-manifest 3", 0, ST_EVERSION, "format version 3"},
        {"comb-manifest", "something-else", 0, ST_ECORRUPT, "not a comb MANIFEST"},
        {"xxh3 ", "xxh4 ", 0, ST_ECORRUPT, "checksum line is missing"},
        {"p 1 1 1:", "p 1 1 9:", 1, ST_ECORRUPT, "line 7: 9 is out of range"},
        {"p 1 1", "p 1 7", 1, ST_ECORRUPT, "line 7: 7 is out of range"},
        {"kinds tags adds dels", "kinds tags adds", 1, ST_EVERSION, "file kinds"},
        {"volumes 4", "volumes 5", 1, ST_ECORRUPT, "5 x 3 partitions, but STORE says 4 x 3"},
        {"\nlabel", "\nlabel \x01", 1, ST_ECORRUPT, "control character"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[4096];
        const char *at = strstr(good, cases[i].find);
        assert_non_null(at);
        size_t pre = (size_t)(at - good), fl = strlen(cases[i].find);
        int len = snprintf(text, sizeof text, "%.*s%s%s", (int)pre, good, cases[i].replace,
                           at + fl);
        if (cases[i].fix_sum) {
            len -= 22;
            len += snprintf(text + len, sizeof text - (size_t)len, "xxh3 %016llx\n",
                            (unsigned long long)XXH3_64bits(text, (size_t)len));
        }
        FILE *f = fopen(path, "w");
        fwrite(text, 1, (size_t)len, f);
        fclose(f);
        assert_null(st_store_open(dir, &err));
        assert_int_equal(err.code, cases[i].code);
        assert_non_null(strstr(err.msg, path));
        if (!strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: %s", i, err.msg);
        assert_null(st_store_begin(s, ST_ALL_VOLUMES, &err));
    }
    /* Truncated to nothing, and a damaged STORE. */
    write_file(path, "");
    assert_null(st_store_open(dir, &err));
    assert_non_null(strstr(err.msg, "not a comb MANIFEST"));
    write_file(path, good);
    assert_int_equal(check_store(NULL), 1);
    snprintf(path, sizeof path, "%s/STORE", dir);
    FILE *f = fopen(path, "r+");
    fseek(f, 20, SEEK_SET);
    fputc('#', f);
    fclose(f);
    assert_null(st_store_open(dir, &err));
    assert_int_equal(err.code, ST_ECORRUPT);
    assert_non_null(strstr(err.msg, "STORE: checksum mismatch"));
    mem_free(good, n + 1);
    st_store_close(s);
}

static void misuse_is_refused_and_loses_nothing(void **state)
{
    (void)state;
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_file f;
    assert_int_equal(st_store_file(s, VOLS, 0, ST_TAGS, &f, &err), -1);
    assert_non_null(strstr(err.msg, "no volume 4"));
    assert_null(st_store_begin(s, VOLS, &err));
    st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    const char *path;
    assert_int_equal(st_store_stage(t, 0, PARTS, ST_TAGS, &path, &err), -1);
    assert_int_equal(st_store_stage(t, 0, 0, ST_TAGS, &path, &err), 0);
    assert_int_equal(st_store_stage(t, 0, 0, ST_TAGS, &path, &err), -1);
    assert_non_null(strstr(err.msg, "already staged"));
    assert_int_equal(st_store_drop(t, 0, 0, ST_TAGS, &err), -1);
    assert_int_equal(st_store_set_label(t, "a\nb", &err), -1);
    /* The staged file was never written: the commit refuses. */
    assert_int_equal(st_store_commit(t, &err), -1);
    assert_int_equal(err.code, ST_EINPUT);
    assert_non_null(strstr(err.msg, "was staged but never written"));
    assert_int_equal(check_store(NULL), 0);
    char vdir[8];
    assert_int_equal(st_store_volume_dir(s, 3, vdir, sizeof vdir, &err), -1);
    char vbuf[PATH_MAX];
    assert_int_equal(st_store_volume_dir(s, 3, vbuf, sizeof vbuf, &err), 0);
    assert_non_null(strstr(vbuf, "/store/v003"));
    st_store_close(s);
    assert_null(st_store_open(tmp, &err));
    assert_non_null(strstr(err.msg, "/STORE"));
}

static void allocation_failures_are_clean(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    int ok = 0;
    for (unsigned long nth = 1; !ok; nth++) {
        st_err err;
        mem_fail_after(nth);
        st_store *s = st_store_open(dir, &err);
        st_txn *t = s ? st_store_begin(s, 1, &err) : NULL;
        const char *path;
        int rc = t ? st_store_stage(t, 1, 1, ST_TAGS, &path, &err) : -1;
        mem_fail_after(0);
        if (rc == 0)
            write_file(path, "x");
        mem_fail_after(nth);
        if (rc == 0)
            rc = st_store_commit(t, &err);
        else
            st_store_abort(t);
        mem_fail_after(0);
        if (rc < 0)
            assert_int_equal(err.code, ST_ENOMEM);
        ok = rc == 0;
        st_store_close(s);
        assert_int_equal(mem_in_use(), base);
    }
    st_err err;
    st_store *s = st_store_open(dir, &err);
    st_file f;
    assert_int_equal(st_store_file(s, 1, 1, ST_TAGS, &f, &err), 1);
    assert_true(file_equals(f.path, "x"));
    st_store_close(s);
}

/* ---- key ranges ---------------------------------------------------------- */

static const char run_schema[] = "key run: i32\nkey event: u32\n";

/* Stages and writes partition p's tags file holding the runs given, and
 * hands the commit its range of run, as the writer saw it. */
static void stage_runs(st_txn *t, uint32_t p, const int32_t *runs, size_t n)
{
    st_err err;
    const char *path;
    st_schema *s = st_schema_parse(run_schema, sizeof run_schema - 1, 1, 1, &err);
    if (!s)
        fail_msg("%s", err.msg);
    assert_int_equal(st_store_stage(t, 0, p, ST_TAGS, &path, &err), 0);
    st_write_opts o;
    st_write_opts_default(&o);
    st_writer *w = st_writer_create(path, s, &o, &err);
    assert_non_null(w);
    for (size_t i = 0; i < n; i++) {
        unsigned char row[8];
        uint32_t e = (uint32_t)i;
        memcpy(row, &runs[i], 4);
        memcpy(row + 4, &e, 4);
        if (st_writer_append(w, row, NULL, 0, &err) < 0)
            fail_msg("%s", err.msg);
    }
    st_zone z;
    assert_int_equal(st_writer_commit_zone(w, 0, &z, &err), 0);
    assert_int_equal(st_store_stage_keys(t, 0, p, &z, &err), 0);
    st_schema_free(s);
}

static void assert_keys(st_store *s, uint32_t p, st_keys_state state, int32_t lo, int32_t hi)
{
    st_file f;
    st_err err;
    assert_int_equal(st_store_file(s, 0, p, ST_TAGS, &f, &err), 1);
    assert_int_equal(f.keys.state, state);
    if (state == ST_KEYS_RANGE) {   /* order images of an i32: the value, sign bit flipped */
        assert_true(f.keys.lo == ((uint64_t)(int64_t)lo ^ (UINT64_C(1) << 63)));
        assert_true(f.keys.hi == ((uint64_t)(int64_t)hi ^ (UINT64_C(1) << 63)));
    }
}

/* Rewrites the store's MANIFEST as comb wrote it before key ranges:
 * version 1, none recorded. */
static void write_old_manifest(void)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    st_manifest m;
    st_err err;
    char *text;
    size_t n;
    assert_int_equal(st_manifest_load(&m, -1, path, &err), 0);
    assert_non_null(m.keys);
    mem_free(m.keys, (size_t)m.volumes * m.partitions * sizeof *m.keys);
    m.keys = NULL;
    m.keysign = 0;
    assert_int_equal(st_manifest_format(&m, &text, &n, &err), 0);
    assert_true(!strncmp(text, "comb-manifest 1\n", 16));
    assert_null(strstr(text, "keys"));
    assert_int_equal(st_sys_replace(path, text, n, &err), 0);
    mem_free(text, n + 1);
    st_manifest_free(&m);
}

/* A store placed by windows records at each commit the range of the
 * partition key its staged tags files hold (none for an empty one); a
 * manifest from before key ranges reads (every range unknown, so queries
 * read every file) and the next commit of the scope records them. A store
 * placed by hash records none and stays version 1. */
static void commits_record_key_ranges(void **state)
{
    (void)state;
    char other[PATH_MAX + 16];
    snprintf(other, sizeof other, "%s/runs", tmp);
    st_store_meta m = {.name = "runs", .partkey = "run", .bucket = 10, .keytype = "i32",
                       .volumes = 1, .partitions = 3, .schema = run_schema,
                       .schema_len = sizeof run_schema - 1};
    st_err err;
    assert_int_equal(st_store_create(other, &m, &err), 0);
    snprintf(dir, sizeof dir, "%s", other);
    st_store *s = st_store_open(dir, &err);
    assert_non_null(s);
    st_txn *t = st_store_begin(s, ST_ALL_VOLUMES, &err);
    static const int32_t p0[] = {-30, -29, 0, 9, 30}, p1[] = {-20, 11};
    stage_runs(t, 0, p0, 5);
    stage_runs(t, 1, p1, 2);
    stage_runs(t, 2, NULL, 0);
    assert_int_equal(st_store_commit(t, &err), 0);
    assert_keys(s, 0, ST_KEYS_RANGE, -30, 30);
    assert_keys(s, 1, ST_KEYS_RANGE, -20, 11);
    assert_keys(s, 2, ST_KEYS_NONE, 0, 0);
    /* a replacement narrows its partition's range; the others stay */
    t = st_store_begin(s, 0, &err);
    stage_runs(t, 0, p0 + 2, 2);
    assert_int_equal(st_store_commit(t, &err), 0);
    assert_keys(s, 0, ST_KEYS_RANGE, 0, 9);
    assert_keys(s, 1, ST_KEYS_RANGE, -20, 11);
    st_store_close(s);

    write_old_manifest();
    s = st_store_open(dir, &err);
    assert_non_null(s);
    assert_keys(s, 0, ST_KEYS_UNKNOWN, 0, 0);
    assert_keys(s, 2, ST_KEYS_UNKNOWN, 0, 0);
    t = st_store_begin(s, 0, &err);    /* a commit of the volume, of nothing */
    assert_int_equal(st_store_commit(t, &err), 0);
    st_store_close(s);
    s = st_store_open(dir, &err);
    assert_keys(s, 0, ST_KEYS_RANGE, 0, 9);
    assert_keys(s, 1, ST_KEYS_RANGE, -20, 11);
    assert_keys(s, 2, ST_KEYS_NONE, 0, 0);
    st_store_close(s);

    /* a staged tags file whose writer gave no range: the commit fails,
     * nothing changes; and a range only for a tags file staged */
    s = st_store_open(dir, &err);
    t = st_store_begin(s, 0, &err);
    stage_write(t, 0, 1, ST_TAGS);
    assert_int_equal(st_store_commit(t, &err), -1);
    assert_non_null(strstr(err.msg, "gave no range of the partition key"));
    assert_keys(s, 1, ST_KEYS_RANGE, -20, 11);
    t = st_store_begin(s, 0, &err);
    st_zone z = {5, 4};
    assert_int_equal(st_store_stage_keys(t, 0, 1, &z, &err), -1);
    assert_int_equal(st_store_drop(t, 0, 1, ST_TAGS, &err), 0);
    assert_int_equal(st_store_stage_keys(t, 0, 1, &z, &err), -1);
    assert_int_equal(st_store_stage_keys(t, 0, 3, &z, &err), -1);
    st_store_abort(t);
    /* the commit records the range given, and opens no staged file for
     * it: one that is no tagset file commits */
    t = st_store_begin(s, 0, &err);
    stage_write(t, 0, 1, ST_TAGS);
    z = (st_zone){(uint64_t)(int64_t)-3 ^ (UINT64_C(1) << 63), UINT64_C(8) ^ (UINT64_C(1) << 63)};
    assert_int_equal(st_store_stage_keys(t, 0, 1, &z, &err), 0);
    assert_int_equal(st_store_commit(t, &err), 0);
    assert_keys(s, 1, ST_KEYS_RANGE, -3, 8);
    st_store_close(s);

    /* a manifest with key ranges on a store placed by hash is refused */
    char mpath[PATH_MAX + 32], hpath[PATH_MAX + 32];
    snprintf(mpath, sizeof mpath, "%s/MANIFEST", dir);
    snprintf(hpath, sizeof hpath, "%s/store/MANIFEST", tmp);
    char *text;
    size_t n;
    assert_int_equal(st_sys_slurp(mpath, 1 << 16, &text, &n, &err), 0);
    snprintf(dir, sizeof dir, "%s/store", tmp);
    s = st_store_open(dir, &err);
    assert_non_null(s);     /* as it was */
    st_store_close(s);
    assert_int_equal(st_sys_replace(hpath, text, n, &err), 0);
    mem_free(text, n + 1);
    assert_null(st_store_open(dir, &err));
    assert_int_equal(err.code, ST_ECORRUPT);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(create_open_info),
        T(bad_metadata_is_refused),
        T(failed_create_leaves_nothing),
        T(placement_is_fixed_and_uniform),
        T(time_windows_place_consecutive_partitions),
        T(integer_windows_place_ranges),
        T(commits_record_key_ranges),
        T(commits_show_new_files_while_snapshots_keep_old),
        T(a_pin_keeps_only_its_own_files),
        T(shared_snapshots_pin_until_the_last_close),
        T(begin_moves_the_snapshot_to_the_current_generation),
        T(writers_exclude_each_other_by_scope),
        T(a_writer_in_another_process_is_named),
        T(failed_commits_leave_the_previous_generation),
        T(killed_writers_leave_old_or_new_never_half),
        T(crashed_writer_garbage_is_cleaned_in_scope),
        T(damaged_manifests_are_detected),
        T(misuse_is_refused_and_loses_nothing),
        T(allocation_failures_are_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
