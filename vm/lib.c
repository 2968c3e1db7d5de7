/* lib: helpers the library natives (vm/lib_*.c) share: sequence indices and
 * slices as sub, slice, byte and find read them, C strings from arguments,
 * command statuses, and megabyte budgets from the environment. */
#include "config.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vm/lib.h"
#include "vm/suggest.h"

/* An index argument made absolute: negative ones count from the end. */
static int64_t absolute(VM *vm, Value *argv, int i, size_t len)
{
    int64_t n = vm_arg_int(vm, argv, i);
    return n < 0 ? n + (int64_t)len : n;
}

static size_t clamp(int64_t n, size_t len)
{
    if (n < 0)
        return 0;
    return (uint64_t)n > len ? len : (size_t)n;
}

void lib_slice_range(VM *vm, int argc, Value *argv, int i, size_t len, size_t *from, size_t *to)
{
    *from = i < argc ? clamp(absolute(vm, argv, i, len), len) : 0;
    *to = i + 1 < argc ? clamp(absolute(vm, argv, i + 1, len), len) : len;
    if (*to < *from)
        *to = *from;
}

size_t lib_index(VM *vm, int64_t n, size_t len)
{
    int64_t i = n < 0 ? n + (int64_t)len : n;
    if (i < 0 || (uint64_t)i >= len)
        vm_error(vm, "index %lld out of range (length %zu)", (long long)n, len);
    return (size_t)i;
}

VStr *lib_cstr_arg(VM *vm, Value *argv, int i)
{
    VStr *s = vm_arg_str(vm, argv, i);
    if (memchr(s->data, '\0', s->len))
        vm_error(vm, "argument %d holds a NUL byte", i + 1);
    return s->data[s->len] == '\0' ? s : vm_str_new(vm, s->data, s->len);
}

int64_t lib_exit_status(int ws)
{
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
        return 128 + WTERMSIG(ws);
    return -1;
}

long long lib_env_megabytes(const char *name, long long dflt)
{
    static atomic_llong machine;
    long long most = atomic_load(&machine);
    if (!most) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        most = pages > 0 && page > 0 ? (long long)pages / 1024 * (page / 1024)
                                     : (long long)(SIZE_MAX >> 21);
        atomic_store(&machine, most);
    }
    const char *env = getenv(name);
    long long mb = env && *env ? atoll(env) : dflt;
    return mb > most ? most : mb;
}

void lib_check_opts(VM *vm, VMap *m, const char *const *known)
{
    size_t pos = 0, n = 0;
    Value k, v;
    while (known[n])
        n++;
    while (m && vm_map_next(m, &pos, &k, &v)) {
        size_t i = 0;
        while (known[i] && !(IS_STR(k) && str_eq_cstr(AS_STR(k), known[i])))
            i++;
        if (!known[i]) {
            VStr *ks = vm_tostring(vm, k);
            const char *hint = vm_suggest(ks->data, ks->len, known, n);
            vm_error(vm, "unknown option '%s'%s%s%s", ks->data, hint ? " (did you mean '" : "",
                     hint ? hint : "", hint ? "'?)" : "");
        }
    }
}

void lib_put(VM *vm, VMap *m, const char *key, Value v)
{
    vm_map_set(vm, m, v_obj(vm_str_cstr(vm, key)), v);
}
