/* dynlib: a shared library opened when first needed; see store/dynlib.h. */
#include "config.h"
#include "store/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void st_dyn_bind(const char *soname, const char *what, const char *const *names, void **fns,
                 size_t n)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "comb: cannot load %s (%s): %s\n", what, soname, dlerror());
        exit(127);
    }
    for (size_t i = 0; i < n; i++) {
        if (!(fns[i] = dlsym(h, names[i]))) {
            fprintf(stderr, "comb: cannot load %s (%s): no %s\n", what, soname, names[i]);
            exit(127);
        }
    }
}
