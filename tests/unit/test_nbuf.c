/* test_nbuf: n-buffered reads and writes, seeks, O_DIRECT, faults, temp files. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/nbuf.h"
#include "store/sysio.h"
#include "tests/unit/gen_store.h"

/* The byte at offset i of every test file. */
static unsigned char pattern(uint64_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13);
}

static const st_nbuf_opts small = {3, 4096, false, false};

/* Writes size bytes of the pattern in chunks of random size. */
static int write_file(const char *path, uint64_t size, const st_nbuf_opts *o, st_err *err)
{
    gen g = {size};
    st_nbuf_writer *w = st_nbuf_create(path, o, err);
    if (!w)
        return -1;
    unsigned char chunk[20000];
    uint64_t at = 0;
    while (at < size) {
        size_t n = 1 + (size_t)gen_below(&g, gen_below(&g, 2) ? 100 : sizeof chunk);
        if (n > size - at)
            n = (size_t)(size - at);
        for (size_t i = 0; i < n; i++)
            chunk[i] = pattern(at + i);
        if (st_nbuf_write(w, chunk, n, err) < 0) {
            st_nbuf_abort(w);
            return -1;
        }
        at += n;
        assert_int_equal(st_nbuf_tell(w), at);
    }
    return st_nbuf_commit(w, err);
}

static void check_file(const char *path, uint64_t size)
{
    size_t len;
    unsigned char *p = gen_slurp(path, &len);
    assert_non_null(p);
    assert_int_equal(len, size);
    for (size_t i = 0; i < len; i++)
        if (p[i] != pattern(i))
            fail_msg("%s: byte %zu differs", path, i);
    mem_free(p, len + 1);
}

static void check_range(const unsigned char *p, uint64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(off + i))
            fail_msg("byte %llu differs", (unsigned long long)(off + i));
}

static void writes_then_reads_sequentially(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("nbuf");
    char path[300];
    snprintf(path, sizeof path, "%s/seq", dir);
    st_err err = {0};
    uint64_t sizes[] = {0, 1, 4095, 4096, 4097, 12288, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t size = sizes[k];
        assert_int_equal(write_file(path, size, &small, &err), 0);
        check_file(path, size);
        assert_int_equal(gen_count_temps(dir), 0);
        st_nbuf_reader *r = st_nbuf_open(path, &small, &err);
        assert_non_null(r);
        assert_int_equal(st_nbuf_size(r), size);
        gen g = {k};
        unsigned char scratch[10000];
        int zero_copy = 0, copied = 0;
        for (uint64_t at = 0; at < size;) {
            size_t n = 1 + (size_t)gen_below(&g, sizeof scratch);
            if (n > size - at)
                n = (size_t)(size - at);
            const unsigned char *p = st_nbuf_get(r, at, n, scratch, &err);
            assert_non_null(p);
            check_range(p, at, n);
            zero_copy += p != scratch;
            copied += p == scratch;
            at += n;
        }
        st_nbuf_stats st;
        st_nbuf_stats_get(r, &st);
        assert_int_equal(st.bytes_read, size);
        assert_true(st.seeks <= 1); /* only the first get starts the stream */
        if (size > 3 * 4096)
            assert_true(zero_copy > 0 && copied > 0);
        st_nbuf_close(r);
    }
    gen_rmdir(dir);
}

static void seeks_anywhere(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("nbuf");
    char path[300];
    snprintf(path, sizeof path, "%s/seek", dir);
    st_err err = {0};
    uint64_t size = 300001;
    assert_int_equal(write_file(path, size, &small, &err), 0);
    st_nbuf_reader *r = st_nbuf_open(path, &small, &err);
    assert_non_null(r);
    gen g = {5};
    unsigned char scratch[30000];
    for (int i = 0; i < 2000; i++) {
        size_t n = (size_t)gen_below(&g, sizeof scratch);
        uint64_t off = gen_below(&g, size - n + 1);
        const unsigned char *p = st_nbuf_get(r, off, n, scratch, &err);
        assert_non_null(p);
        check_range(p, off, n);
    }
    unsigned char buf[5000];
    assert_int_equal(st_nbuf_pread(r, 123456, sizeof buf, buf, &err), 0);
    check_range(buf, 123456, sizeof buf);
    st_nbuf_stats st;
    st_nbuf_stats_get(r, &st);
    assert_true(st.seeks > 100);
    /* Past the end: an error, not a crash or a short read. */
    assert_null(st_nbuf_get(r, size - 10, 11, scratch, &err));
    assert_int_equal(err.code, ST_ECORRUPT);
    char want[400];
    snprintf(want, sizeof want, "%s: unexpected end of file: bytes 299991..300002 of a 300001-byte file",
             path);
    assert_string_equal(err.msg, want);
    assert_int_equal(st_nbuf_pread(r, UINT64_MAX - 2, 8, buf, &err), -1);
    assert_int_equal(err.code, ST_ECORRUPT);
    assert_non_null(st_nbuf_get(r, size, 0, scratch, &err));
    st_nbuf_close(r);
    gen_rmdir(dir);
}

/* Memory per open file is N x buffer size, whatever the file's size. */
static void memory_is_bounded(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("nbuf");
    char path[300];
    snprintf(path, sizeof path, "%s/mem", dir);
    st_err err = {0};
    st_nbuf_opts o = {4, 8192, false, false};
    assert_int_equal(write_file(path, 1 << 20, &o, &err), 0);
    size_t base = mem_in_use();
    st_nbuf_reader *r = st_nbuf_open(path, &o, &err);
    unsigned char scratch[4096];
    size_t peak = 0;
    for (uint64_t at = 0; at < (1 << 20); at += 4096) {
        assert_non_null(st_nbuf_get(r, at, 4096, scratch, &err));
        size_t now = mem_in_use() - base;
        peak = now > peak ? now : peak;
    }
    assert_true(peak >= 4 * 8192);
    assert_true(peak <= 4 * 8192 + ST_NBUF_ALIGN + 1024);
    st_nbuf_close(r);
    assert_int_equal(mem_in_use(), base);
    gen_rmdir(dir);
}

static void direct_io_and_its_fallback(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("nbuf");
    char path[300];
    snprintf(path, sizeof path, "%s/direct", dir);
    st_err err = {0};
    st_nbuf_opts d = {3, 8192, true, false};
    for (int refuse = 0; refuse < 2; refuse++) {
        /* A filesystem that refuses O_DIRECT answers EINVAL; play one. */
        if (refuse)
            st_sys_fail_after(ST_SYS_WRITE, 1, EINVAL);
        assert_int_equal(write_file(path, 70001, &d, &err), 0);
        check_file(path, 70001);
        if (refuse)
            st_sys_fail_after(ST_SYS_READ, 1, EINVAL);
        st_nbuf_reader *r = st_nbuf_open(path, &d, &err);
        assert_non_null(r);
        st_nbuf_stats st;
        st_nbuf_stats_get(r, &st);
        if (refuse)
            assert_false(st.direct);
        unsigned char scratch[9000], buf[777];
        gen g = {3};
        for (int i = 0; i < 300; i++) {
            size_t n = (size_t)gen_below(&g, sizeof scratch);
            uint64_t off = gen_below(&g, 70001 - n + 1);
            const unsigned char *p = st_nbuf_get(r, off, n, scratch, &err);
            assert_non_null(p);
            check_range(p, off, n);
        }
        assert_int_equal(st_nbuf_pread(r, 69001, sizeof buf, buf, &err), 0);
        check_range(buf, 69001, sizeof buf);
        st_nbuf_close(r);
    }
    gen_rmdir(dir);
}

static void read_faults_are_reported(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("nbuf");
    char path[300];
    snprintf(path, sizeof path, "%s/rf", dir);
    st_err err = {0};
    assert_int_equal(write_file(path, 50000, &small, &err), 0);
    for (unsigned long nth = 1; nth <= 4; nth++) {
        st_nbuf_reader *r = st_nbuf_open(path, &small, &err);
        assert_non_null(r);
        st_sys_fail_after(ST_SYS_READ, nth, EIO);
        unsigned char scratch[1000];
        int failed = 0;
        for (uint64_t at = 0; at + 1000 <= 50000 && !failed; at += 1000) {
            const unsigned char *p = st_nbuf_get(r, at, 1000, scratch, &err);
            if (!p) {
                failed = 1;
                assert_int_equal(err.code, ST_EIO);
                assert_non_null(strstr(err.msg, "Input/output error"));
                assert_non_null(strstr(err.msg, path));
            } else {
                check_range(p, at, 1000);
            }
        }
        assert_true(failed);
        st_sys_fail_after(ST_SYS_READ, 0, 0);
        st_nbuf_close(r);
    }
    st_nbuf_reader *r = st_nbuf_open(path, &small, &err);
    unsigned char buf[10];
    st_sys_fail_after(ST_SYS_READ, 1, EIO);
    assert_int_equal(st_nbuf_pread(r, 0, sizeof buf, buf, &err), -1);
    char want[400];
    snprintf(want, sizeof want, "%s: read at offset 0: Input/output error", path);
    assert_string_equal(err.msg, want);
    st_nbuf_close(r);
    gen_rmdir(dir);
}

/* Every write or fsync failure leaves the old file whole and no temp file. */
static void write_faults_keep_the_old_file(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("nbuf");
    char path[300];
    snprintf(path, sizeof path, "%s/wf", dir);
    st_err err = {0};
    assert_int_equal(write_file(path, 30000, &small, &err), 0);
    size_t oldlen;
    unsigned char *old = gen_slurp(path, &oldlen);
    int errs[] = {EIO, ENOSPC};
    for (int k = 0; k < 2; k++) {
        for (unsigned long nth = 1;; nth++) {
            st_sys_fail_after(ST_SYS_WRITE, nth, errs[k]);
            int rc = write_file(path, 60000, &small, &err);
            st_sys_fail_after(ST_SYS_WRITE, 0, 0);
            if (rc == 0) {
                assert_true(nth > 14); /* 60000 bytes = 15 buffers */
                break;
            }
            assert_int_equal(err.code, ST_EIO);
            assert_non_null(strstr(err.msg, strerror(errs[k])));
            size_t len;
            unsigned char *now = gen_slurp(path, &len);
            assert_int_equal(len, oldlen);
            assert_memory_equal(now, old, len);
            mem_free(now, len + 1);
            assert_int_equal(gen_count_temps(dir), 0);
        }
        /* The successful run replaced the file; put the old one back. */
        assert_int_equal(write_file(path, 30000, &small, &err), 0);
    }
    st_sys_fail_after(ST_SYS_FSYNC, 1, EIO);
    assert_int_equal(write_file(path, 60000, &small, &err), -1);
    char want[400];
    snprintf(want, sizeof want, "%s: fsync: Input/output error", path);
    assert_string_equal(err.msg, want);
    check_file(path, 30000);
    assert_int_equal(gen_count_temps(dir), 0);
    /* The second fsync is the directory's, after the rename: the new file stands. */
    st_sys_fail_after(ST_SYS_FSYNC, 2, EIO);
    assert_int_equal(write_file(path, 60000, &small, &err), -1);
    assert_non_null(strstr(err.msg, "fsync of its directory: Input/output error (the file is complete)"));
    check_file(path, 60000);
    assert_int_equal(gen_count_temps(dir), 0);
    mem_free(old, oldlen + 1);
    gen_rmdir(dir);
}

static void abort_and_bad_paths(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("nbuf");
    char path[300];
    snprintf(path, sizeof path, "%s/ab", dir);
    st_err err = {0};
    assert_int_equal(write_file(path, 5000, &small, &err), 0);
    st_nbuf_writer *w = st_nbuf_create(path, &small, &err);
    unsigned char junk[50000] = {1};
    assert_int_equal(st_nbuf_write(w, junk, sizeof junk, &err), 0);
    assert_int_equal(gen_count_temps(dir), 1);
    st_nbuf_abort(w);
    assert_int_equal(gen_count_temps(dir), 0);
    check_file(path, 5000);

    char bad[400];
    snprintf(bad, sizeof bad, "%s/no/such/dir/f", dir);
    assert_null(st_nbuf_create(bad, &small, &err));
    assert_int_equal(err.code, ST_EIO);
    assert_non_null(strstr(err.msg, "cannot create"));
    assert_non_null(strstr(err.msg, "No such file or directory"));
    assert_null(st_nbuf_open(bad, &small, &err));
    char want[500];
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", bad);
    assert_string_equal(err.msg, want);
    gen_rmdir(dir);
}

static void allocation_failures_clean_up(void **state)
{
    (void)state;
    const char *dir = gen_tmpdir("nbuf");
    char path[300];
    snprintf(path, sizeof path, "%s/oom", dir);
    st_err err = {0};
    assert_int_equal(write_file(path, 20000, &small, &err), 0);
    size_t base = mem_in_use();
    for (unsigned long nth = 1; nth < 8; nth++) {
        mem_fail_after(nth);
        int rc = write_file(path, 9000, &small, &err);
        mem_fail_after(0);
        if (rc < 0) {
            assert_int_equal(err.code, ST_ENOMEM);
            check_file(path, 20000);
        } else {
            check_file(path, 9000);
            assert_int_equal(write_file(path, 20000, &small, &err), 0);
        }
        assert_int_equal(gen_count_temps(dir), 0);
        assert_int_equal(mem_in_use(), base);
    }
    unsigned char scratch[100];
    for (unsigned long nth = 1; nth < 6; nth++) {
        mem_fail_after(nth);
        st_nbuf_reader *r = st_nbuf_open(path, &small, &err);
        const void *p = r ? st_nbuf_get(r, 0, sizeof scratch, scratch, &err) : NULL;
        mem_fail_after(0);
        if (!p)
            assert_int_equal(err.code, ST_ENOMEM);
        else
            check_range(p, 0, sizeof scratch);
        /* After a failed start the reader still works. */
        if (r) {
            assert_non_null(p = st_nbuf_get(r, 100, sizeof scratch, scratch, &err));
            check_range(p, 100, sizeof scratch);
        }
        st_nbuf_close(r);
        assert_int_equal(mem_in_use(), base);
    }
    gen_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writes_then_reads_sequentially),
        cmocka_unit_test(seeks_anywhere),
        cmocka_unit_test(memory_is_bounded),
        cmocka_unit_test(direct_io_and_its_fallback),
        cmocka_unit_test(read_faults_are_reported),
        cmocka_unit_test(write_faults_keep_the_old_file),
        cmocka_unit_test(abort_and_bad_paths),
        cmocka_unit_test(allocation_failures_clean_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
