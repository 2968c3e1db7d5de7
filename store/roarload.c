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
    X(bool, roaring_advance_uint32_iterator, (roaring_uint32_iterator_t *it), (it))            \
    X(void, roaring_bitmap_and_inplace, (roaring_bitmap_t *x, const roaring_bitmap_t *y), (x, y)) \
    X(roaring_bitmap_t *, roaring_bitmap_create, (void), ())                                   \
    X(void, roaring_bitmap_flip_inplace, (roaring_bitmap_t *x, uint64_t lo, uint64_t hi), (x, lo, hi)) \
    X(void, roaring_bitmap_free, (const roaring_bitmap_t *r), (r))                             \
    X(uint64_t, roaring_bitmap_get_cardinality, (const roaring_bitmap_t *r), (r))              \
    X(bool, roaring_bitmap_is_empty, (const roaring_bitmap_t *r), (r))                         \
    X(uint32_t, roaring_bitmap_maximum, (const roaring_bitmap_t *r), (r))                      \
    X(roaring_bitmap_t *, roaring_bitmap_of_ptr, (size_t n, const uint32_t *v), (n, v))        \
    X(void, roaring_bitmap_or_inplace, (roaring_bitmap_t *x, const roaring_bitmap_t *y), (x, y)) \
    X(roaring_bitmap_t *, roaring_bitmap_portable_deserialize_safe, (const char *b, size_t n), (b, n)) \
    X(size_t, roaring_bitmap_portable_serialize, (const roaring_bitmap_t *r, char *b), (r, b)) \
    X(size_t, roaring_bitmap_portable_size_in_bytes, (const roaring_bitmap_t *r), (r))         \
    X(uint64_t, roaring_bitmap_range_cardinality, (const roaring_bitmap_t *r, uint64_t lo, uint64_t hi), (r, lo, hi)) \
    X(bool, roaring_bitmap_run_optimize, (roaring_bitmap_t *r), (r))                           \
    X(roaring_uint32_iterator_t *, roaring_create_iterator, (const roaring_bitmap_t *r), (r))  \
    X(void, roaring_free_uint32_iterator, (roaring_uint32_iterator_t *it), (it))               \
    X(bool, roaring_move_uint32_iterator_equalorlarger, (roaring_uint32_iterator_t *it, uint32_t v), (it, v))

ST_DYN_LIB(ROAR_FUNCS, ROARING_SONAME, "the bitmap index library")

#define FORWARD(ret, name, params, args)                                       \
    ret name params                                                            \
    {                                                                          \
        load_once();                                                           \
        return lib.name args;                                                  \
    }
ROAR_FUNCS(FORWARD)
