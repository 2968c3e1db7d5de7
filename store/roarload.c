/* roarload: CRoaring, loaded when a bitmap index is first used, not at
 * start. Linked, its mapping and binding cost each run of comb about a
 * tenth of `comb gre`'s start-up (docs/BENCH.md, gre's start-up row), and
 * most runs never touch an index. These definitions stand for the
 * library's functions that comb calls (their names are the library's, so
 * its header declares them); each forwards to the library's own. */
#include "config.h"

#include <roaring/roaring.h>

#include "store/dynlib.h"

/* return type, name, parameters, arguments */
#define ROAR_FUNCS(X)                                                                          \
    X(void, roaring_bitmap_free, (const roaring_bitmap_t *r), (r))                             \
    X(roaring_bitmap_t *, roaring_bitmap_of_ptr, (size_t n, const uint32_t *v), (n, v))        \
    X(size_t, roaring_bitmap_portable_serialize, (const roaring_bitmap_t *r, char *b), (r, b)) \
    X(size_t, roaring_bitmap_portable_size_in_bytes, (const roaring_bitmap_t *r), (r))         \
    X(bool, roaring_bitmap_run_optimize, (roaring_bitmap_t *r), (r))

ST_DYN_LIB(ROAR_FUNCS, ROARING_SONAME, "the bitmap index library")

#define FORWARD(ret, name, params, args)                                       \
    ret name params                                                            \
    {                                                                          \
        load_once();                                                           \
        return lib.name args;                                                  \
    }
ROAR_FUNCS(FORWARD)
