/* test_modcache: where compiled modules are kept and when they are used: a
 * hit after a put, beside the source or in the user's directory; a miss
 * for changed source, a damaged file, COMB_MODCACHE=off or refresh; a cache
 * that cannot be written is skipped in silence; `import` goes through it. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lang/load.h"
#include "lang/modcache.h"
#include "tests/unit/tmpdir.h"
#include "vm/chunkio.h"
#include "vm/vm.h"

typedef struct Fixture {
    VM *vm;
    char dir[PATH_MAX];
    char src[PATH_MAX + 16];     /* dir/mod.comb */
    char cache[PATH_MAX + 16];   /* dir/cache */
} Fixture;

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    Fixture *f = calloc(1, sizeof *f);
    f->vm = vm_new(NULL);
    lc_install_import(f->vm);
    tmp_make("cache", f->dir);
    snprintf(f->src, sizeof f->src, "%s/mod.comb", f->dir);
    snprintf(f->cache, sizeof f->cache, "%s/cache", f->dir);
    write_text(f->src, "fn twice(x) { return 2 * x }\nlet v = twice(21)\n");
    setenv("COMB_MODCACHE_DIR", f->cache, 1);
    unsetenv("COMB_MODCACHE");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    Fixture *f = *state;
    vm_free(f->vm);
    tmp_remove(f->dir);
    unsetenv("COMB_MODCACHE_DIR");
    unsetenv("COMB_MODCACHE");
    free(f);
    return 0;
}

typedef struct Job {
    const char *path;
    VModule *m;
    VProto *main;
} Job;

static void put_job(VM *vm, void *ud)
{
    Job *j = ud;
    FILE *fp = fopen(j->path, "rb");
    char src[4096];
    size_t n = fread(src, 1, sizeof src, fp);
    fclose(fp);
    j->m = lc_load_source(vm, src, n, j->path, stderr);
    lc_cache_put(vm, j->m, j->path, src, n);
}

static void get_job(VM *vm, void *ud)
{
    Job *j = ud;
    j->m = vm_module_new(vm, "mod", j->path);
    vm_push_root(vm, v_obj(j->m));
    j->main = lc_cache_get(vm, j->m, j->path);
    vm_pop_root(vm, 1);
}

static void put(Fixture *f)
{
    Job j = {.path = f->src};
    assert_int_equal(vm_protect(f->vm, put_job, &j), 0);
    assert_non_null(j.m);
}

/* A hit: the module from the cache, run, has v = 42. */
static bool hit(Fixture *f)
{
    Job j = {.path = f->src};
    assert_int_equal(vm_protect(f->vm, get_job, &j), 0);
    if (!j.main)
        return false;
    j.m->main = j.main;
    assert_int_equal(vm_run_module(f->vm, j.m), 0);
    Value *slot = vm_map_ref(j.m->symbols, v_obj(vm_str_cstr(f->vm, "v")));
    assert_non_null(slot);
    assert_int_equal(j.m->vars[slot->as.i].as.i, 42);
    return true;
}

/* The one file in dir, into path; false if none. */
static bool only_file(const char *dir, char *path, size_t size)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *e;
    bool found = false;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            assert_false(found);
            snprintf(path, size, "%s/%s", dir, e->d_name);
            found = true;
        }
    closedir(d);
    return found;
}

static void put_then_hit(void **state)
{
    Fixture *f = *state;
    assert_false(hit(f));
    put(f);
    char file[2 * PATH_MAX];
    assert_true(only_file(f->cache, file, sizeof file));
    assert_non_null(strstr(file, "/mod-"));
    assert_true(hit(f));
}

/* A hit leaves the functions' source positions in the cache file until an
 * error wants one: read from it they are the compiler's; from the file
 * cut short since, the function's own place, never a crash. */
static void positions_are_read_from_the_file(void **state)
{
    Fixture *f = *state;
    Job made = {.path = f->src}, got = {.path = f->src};
    assert_int_equal(vm_protect(f->vm, put_job, &made), 0);
    vm_push_root(f->vm, v_obj(made.m));
    assert_int_equal(vm_protect(f->vm, get_job, &got), 0);
    vm_push_root(f->vm, v_obj(got.m));
    assert_non_null(got.main);
    assert_true(got.m->posfd >= 0);
    const VProto *want[] = {made.m->main, made.m->main->protos[0]};
    const VProto *have[] = {got.main, got.main->protos[0]};
    for (int k = 0; k < 2; k++) {
        assert_null(have[k]->pos);
        assert_int_equal(have[k]->ncode, want[k]->ncode);
        for (size_t i = 0; i < want[k]->ncode; i++) {
            VmPos a = vm_chunk_pos(want[k], i), b = vm_chunk_pos(have[k], i);
            assert_int_equal(a.line, b.line);
            assert_int_equal(a.col, b.col);
        }
    }
    char file[2 * PATH_MAX];
    assert_true(only_file(f->cache, file, sizeof file));
    assert_int_equal(truncate(file, 30), 0);
    for (int k = 0; k < 2; k++) {
        VmPos b = vm_chunk_pos(have[k], have[k]->ncode - 1);
        assert_int_equal(b.line, have[k]->line);
        assert_int_equal(b.col, have[k]->col);
    }
    vm_pop_root(f->vm, 2);
}

static void changed_source_misses(void **state)
{
    Fixture *f = *state;
    put(f);
    write_text(f->src, "fn twice(x) { return 2 * x }\nlet v = twice(20)\n");
    assert_false(hit(f));
}

static void damaged_file_misses_then_is_rewritten(void **state)
{
    Fixture *f = *state;
    put(f);
    char file[2 * PATH_MAX];
    assert_true(only_file(f->cache, file, sizeof file));
    FILE *fp = fopen(file, "r+b");
    fseek(fp, 40, SEEK_SET);
    fputc('!', fp);
    fclose(fp);
    assert_false(hit(f));
    truncate(file, 30);
    assert_false(hit(f));
    write_text(file, "");
    assert_false(hit(f));
    put(f);
    assert_true(hit(f));
}

static void beside_the_source_is_read(void **state)
{
    Fixture *f = *state;
    put(f);
    char file[2 * PATH_MAX], beside[2 * PATH_MAX];
    assert_true(only_file(f->cache, file, sizeof file));
    snprintf(beside, sizeof beside, "%sc", f->src);
    assert_int_equal(rename(file, beside), 0);
    assert_true(hit(f));
}

static void off_and_refresh(void **state)
{
    Fixture *f = *state;
    setenv("COMB_MODCACHE", "off", 1);
    put(f);
    char file[2 * PATH_MAX];
    assert_false(only_file(f->cache, file, sizeof file));
    setenv("COMB_MODCACHE", "refresh", 1);
    put(f);
    assert_true(only_file(f->cache, file, sizeof file));
    assert_false(hit(f));
    unsetenv("COMB_MODCACHE");
    assert_true(hit(f));
}

static void unwritable_cache_is_skipped(void **state)
{
    Fixture *f = *state;
    char blocked[PATH_MAX + 32];
    snprintf(blocked, sizeof blocked, "%s/mod.comb/sub", f->dir);   /* under a file */
    setenv("COMB_MODCACHE_DIR", blocked, 1);
    put(f);
    assert_false(hit(f));
    assert_int_equal(tmp_count(f->dir, NULL), 1);   /* mod.comb alone, no stray .tmp */
}

static void import_uses_it(void **state)
{
    Fixture *f = *state;
    char prog[2 * PATH_MAX];
    snprintf(prog, sizeof prog, "import \"%s\"\nlet out = mod.v\n", f->src);
    for (int round = 0; round < 2; round++) {
        VM *vm = vm_new(NULL);
        lc_install_import(vm);
        VModule *m = lc_load_source(vm, prog, strlen(prog), "<test>", stderr);
        assert_non_null(m);
        assert_int_equal(vm_run_module(vm, m), 0);
        Value *slot = vm_map_ref(m->symbols, v_obj(vm_str_cstr(vm, "out")));
        assert_int_equal(m->vars[slot->as.i].as.i, 42);
        vm_free(vm);
        char file[2 * PATH_MAX];
        assert_true(only_file(f->cache, file, sizeof file));   /* written by round 0 */
    }
    assert_true(hit(f));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(put_then_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(positions_are_read_from_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(changed_source_misses, setup, teardown),
        cmocka_unit_test_setup_teardown(damaged_file_misses_then_is_rewritten, setup, teardown),
        cmocka_unit_test_setup_teardown(beside_the_source_is_read, setup, teardown),
        cmocka_unit_test_setup_teardown(off_and_refresh, setup, teardown),
        cmocka_unit_test_setup_teardown(unwritable_cache_is_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(import_uses_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
