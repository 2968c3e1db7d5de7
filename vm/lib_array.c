/* lib_array: array natives: sort (with an optional comparator), slice and
 * reverse.
 *
 * sort has two ways. An array of ints alone (the common, benchmarked case)
 * is copied to a plain int64 buffer, sorted by introsort and copied back.
 * Any other array is sorted stably by a merge sort, comparing numbers by
 * value (NaN last) and strings by bytes, or by calling the comparator. The merge sort
 * works on a private copy, so a comparator that raises or changes the array
 * midway can neither corrupt memory nor leave the array half sorted: the
 * array is written once, at the end, and an error leaves it as it was. */
#include "config.h"

#include <string.h>

#include "vm/lib.h"

#define INSERTION_MAX 16    /* runs this short are sorted by insertion */

/* ---- ints: introsort -------------------------------------------------- */

static void insertion_int(int64_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int64_t x = v[i];
        size_t j = i;
        for (; j > 0 && x < v[j - 1]; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static void sift_int(int64_t *v, size_t root, size_t n)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && v[child] < v[child + 1])
            child++;
        if (v[root] >= v[child])
            return;
        int64_t t = v[root];
        v[root] = v[child];
        v[child] = t;
    }
}

/* The fallback that bounds introsort's worst case at n log n. */
static void heapsort_int(int64_t *v, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_int(v, i, n);
    for (size_t end = n; end-- > 1;) {
        int64_t t = v[0];
        v[0] = v[end];
        v[end] = t;
        sift_int(v, 0, end);
    }
}

static int64_t median3(int64_t a, int64_t b, int64_t c)
{
    if (a < b)
        return b < c ? b : (a < c ? c : a);
    return a < c ? a : (b < c ? c : b);
}

static void introsort_int(int64_t *v, size_t n, int depth)
{
    while (n > INSERTION_MAX) {
        if (depth-- == 0) {
            heapsort_int(v, n);
            return;
        }
        int64_t pivot = median3(v[0], v[n / 2], v[n - 1]);
        size_t i = 0, j = n - 1;
        for (;;) {  /* Hoare partition: both scans stop at the pivot value */
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i >= j)
                break;
            int64_t t = v[i];
            v[i++] = v[j];
            v[j--] = t;
        }
        /* v[0..j] <= pivot <= v[j+1..n): recurse into the smaller side */
        size_t left = j + 1;
        if (left < n - left) {
            introsort_int(v, left, depth);
            v += left;
            n -= left;
        } else {
            introsort_int(v + left, n - left, depth);
            n = left;
        }
    }
    insertion_int(v, n);
}

static void sort_ints(VM *vm, VArray *a)
{
    size_t n = a->len;
    int64_t *v = vm_alloc(vm, n * sizeof *v);   /* nothing below can raise */
    for (size_t i = 0; i < n; i++)
        v[i] = a->items[i].as.i;
    int depth = 0;
    for (size_t m = n; m > 1; m >>= 1)
        depth += 2;
    introsort_int(v, n, depth);
    for (size_t i = 0; i < n; i++)
        a->items[i].as.i = v[i];
    vm_free_mem(vm, v, n * sizeof *v);
}

/* ---- everything else: a stable merge sort -------------------------- */

typedef struct Sorter {
    VM *vm;
    Value cmp;          /* the comparator, or nil */
    bool strings;       /* without a comparator: strings, else numbers */
} Sorter;

/* Whether a goes before b. */
static bool before(Sorter *s, Value a, Value b)
{
    if (IS_NIL(s->cmp)) {
        if (s->strings)
            return str_compare(AS_STR(a), AS_STR(b)) < 0;
        return v_order_num(a, b) < 0;
    }
    Value args[2] = {a, b};
    Value r = vm_call(s->vm, s->cmp, 2, args);
    if (!IS_BOOL(r))
        vm_error(s->vm, "the comparator must return a bool, got %s", v_type_name(r));
    return AS_BOOL(r);
}

/* Every pass reads one buffer and writes the other, so while the comparator
 * runs (and the collector may) each value is whole in the buffer read. */

/* dst[0..n) = src[0..n) sorted by insertion; equal items keep their order. */
static void insertion_copy(Sorter *s, const Value *src, Value *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 && before(s, src[i], dst[j - 1]); j--)
            dst[j] = dst[j - 1];
        dst[j] = src[i];
    }
}

/* Merges the sorted src[0..mid) and src[mid..n) into dst; ties keep the
 * left item first. */
static void merge(Sorter *s, const Value *src, Value *dst, size_t mid, size_t n)
{
    size_t i = 0, j = mid, k = 0;
    if (!before(s, src[mid], src[mid - 1])) {   /* already in order */
        memcpy(dst, src, n * sizeof *src);
        return;
    }
    while (i < mid && j < n)
        dst[k++] = before(s, src[j], src[i]) ? src[j++] : src[i++];
    while (i < mid)
        dst[k++] = src[i++];
    while (j < n)
        dst[k++] = src[j++];
}

/* Sorts the n values of x, using tmp (as large); returns the one of the
 * two that holds the result. */
static Value *merge_sort(Sorter *s, Value *x, Value *tmp, size_t n)
{
    for (size_t lo = 0; lo < n; lo += INSERTION_MAX)
        insertion_copy(s, x + lo, tmp + lo, n - lo < INSERTION_MAX ? n - lo : INSERTION_MAX);
    for (size_t width = INSERTION_MAX; width < n; width *= 2) {
        Value *t = x;
        x = tmp;
        tmp = t;
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t len = n - lo < 2 * width ? n - lo : 2 * width;
            if (len > width)
                merge(s, x + lo, tmp + lo, width, len);
            else
                memcpy(tmp + lo, x + lo, len * sizeof *x);
        }
    }
    return tmp;
}

/* A rooted array of n values: a copy of a's items, or nils. */
static VArray *buffer(VM *vm, const VArray *a, size_t n)
{
    VArray *b = vm_array_new(vm, n);
    for (size_t i = 0; i < n; i++)
        b->items[i] = a ? a->items[i] : v_nil();
    b->len = n;
    vm_push_root(vm, v_obj(b));
    return b;
}

static void sort_general(VM *vm, VArray *a, Value cmp, bool strings)
{
    size_t n = a->len;
    /* Sorted in buffers the collector owns, so an error in the comparator
     * leaks nothing, and copied back whole at the end. */
    VArray *x = buffer(vm, a, n), *tmp = buffer(vm, NULL, n);
    Sorter s = {vm, cmp, strings};
    Value *sorted = merge_sort(&s, x->items, tmp->items, n);
    vm_array_reserve(vm, a, n);     /* the comparator may have shrunk it */
    memcpy(a->items, sorted, n * sizeof *sorted);
    a->len = n;
    vm_pop_root(vm, 2);
}

/* Without a comparator: which way the items sort, or an error naming what
 * cannot be compared. 0: ints, 1: numbers, 2: strings. */
static int natural_kind(VM *vm, const VArray *a)
{
    bool ints = true, nums = true, strs = true;
    for (size_t i = 0; i < a->len; i++) {
        Value v = a->items[i];
        ints &= IS_INT(v);
        nums &= IS_NUM(v);
        strs &= IS_STR(v);
        if (!nums && !strs) {
            Value first = a->items[0];
            if (IS_NUM(v) || IS_STR(v))
                vm_error(vm, "cannot compare %s and %s", v_type_name(first), v_type_name(v));
            vm_error(vm, "cannot order %s values without a comparator", v_type_name(v));
        }
    }
    return ints ? 0 : nums ? 1 : 2;
}

Value nat_sort(VM *vm, int argc, Value *argv)
{
    VArray *a = vm_arg_array(vm, argv, 0);
    Value cmp = argc > 1 ? argv[1] : v_nil();
    if (!IS_NIL(cmp) && !IS_FUNC(cmp) && cmp.type != VT_NATIVE)
        vm_arg_error(vm, 1, "a function", cmp);
    if (a->len < 2)
        return argv[0];
    if (!IS_NIL(cmp)) {
        sort_general(vm, a, cmp, false);
        return argv[0];
    }
    int kind = natural_kind(vm, a);
    if (kind == 0)
        sort_ints(vm, a);
    else
        sort_general(vm, a, cmp, kind == 2);
    return argv[0];
}

/* ---- slices ----------------------------------------------------------- */

Value nat_slice(VM *vm, int argc, Value *argv)
{
    VArray *a = vm_arg_array(vm, argv, 0);
    size_t from, to;
    lib_slice_range(vm, argc, argv, 1, a->len, &from, &to);
    VArray *b = vm_array_new(vm, to - from);
    for (size_t i = from; i < to; i++)
        b->items[b->len++] = a->items[i];
    return v_obj(b);
}

Value nat_reverse(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VArray *a = vm_arg_array(vm, argv, 0);
    for (size_t i = 0, j = a->len; i + 1 < j; i++, j--) {
        Value t = a->items[i];
        a->items[i] = a->items[j - 1];
        a->items[j - 1] = t;
    }
    return argv[0];
}
