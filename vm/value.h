/* value: the tagged union every comb value is, and the header of heap objects.
 *
 * Ownership rule, the one rule for values: a Value is a small struct copied
 * freely and never owns anything. Every heap object (string, array, map,
 * function, native handle, module) belongs to the VM's garbage collector,
 * which frees it once it is unreachable from the roots: the VM stack, module
 * variables, the constants of live functions, a pending error, and the
 * temporary roots pushed with vm_push_root. The collector runs only at safe
 * points of the VM loop, never inside an allocation, so C code may keep
 * objects in locals until it returns to the VM or calls back into it
 * (vm_call); across such a call it must root them.
 */
#ifndef COMB_VALUE_H
#define COMB_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Object types come after the immediate ones so IS_OBJ is one range test. */
typedef enum {
    VT_NIL,
    VT_BOOL,
    VT_INT,
    VT_FLOAT,
    VT_UNDEF,   /* internal: a module variable read before its definition */
    VT_STR,
    VT_ARRAY,
    VT_MAP,
    VT_FUNC,    /* a comb closure */
    VT_NATIVE,  /* a C function from the natives table */
    VT_HANDLE,  /* a native handle: file, store, query, matcher, regex... */
    VT_MODULE,
    VT_PROTO,   /* internal objects below: never inside a Value */
    VT_UPVAL,
} VType;

typedef struct Obj {
    struct Obj *next;   /* every object, on the collector's list */
    uint8_t type;       /* VType */
    uint8_t marked;
    uint16_t flags;     /* per type */
    uint32_t hash;      /* strings: cached hash, 0 until computed */
} Obj;

typedef struct Value {
    uint8_t type;
    union {
        bool b;
        int64_t i;
        double f;
        Obj *o;
    } as;
} Value;

#define IS_NIL(v)    ((v).type == VT_NIL)
#define IS_BOOL(v)   ((v).type == VT_BOOL)
#define IS_INT(v)    ((v).type == VT_INT)
#define IS_FLOAT(v)  ((v).type == VT_FLOAT)
#define IS_NUM(v)    ((v).type == VT_INT || (v).type == VT_FLOAT)
#define IS_STR(v)    ((v).type == VT_STR)
#define IS_ARRAY(v)  ((v).type == VT_ARRAY)
#define IS_MAP(v)    ((v).type == VT_MAP)
#define IS_FUNC(v)   ((v).type == VT_FUNC)
#define IS_HANDLE(v) ((v).type == VT_HANDLE)
#define IS_OBJ(v)    ((v).type >= VT_STR && (v).type <= VT_MODULE)

#define AS_BOOL(v)   ((v).as.b)
#define AS_INT(v)    ((v).as.i)
#define AS_FLOAT(v)  ((v).as.f)
#define AS_OBJ(v)    ((v).as.o)
#define AS_STR(v)    ((struct VStr *)(v).as.o)
#define AS_ARRAY(v)  v_as_array(v)
#define AS_MAP(v)    ((struct VMap *)(v).as.o)
#define AS_FUNC(v)   ((struct VFunc *)(v).as.o)
#define AS_NATIVE(v) ((struct VNative *)(v).as.o)
#define AS_HANDLE(v) ((struct VHandle *)(v).as.o)
#define AS_MODULE(v) ((struct VModule *)(v).as.o)

static inline Value v_nil(void) { Value v; v.type = VT_NIL; v.as.i = 0; return v; }
static inline Value v_undef(void) { Value v; v.type = VT_UNDEF; v.as.i = 0; return v; }
static inline Value v_bool(bool b) { Value v; v.type = VT_BOOL; v.as.i = 0; v.as.b = b; return v; }
static inline Value v_int(int64_t i) { Value v; v.type = VT_INT; v.as.i = i; return v; }
static inline Value v_float(double f) { Value v; v.type = VT_FLOAT; v.as.f = f; return v; }
static inline Value v_obj(void *o)
{
    Value v;
    v.type = ((Obj *)o)->type;
    v.as.o = o;
    return v;
}

/* An array held as columns (ARRAY_COLUMNS, object.h) made into its rows:
 * AS_ARRAY does it first, so that no reader sees the columns. */
void vm_array_force(Obj *o);
static inline struct VArray *v_as_array(Value v)
{
    if (v.type == VT_ARRAY && (v.as.o->flags & 1u))     /* ARRAY_COLUMNS */
        vm_array_force(v.as.o);
    return (struct VArray *)v.as.o;
}

/* nil and false are false; everything else, 0 and "" included, is true. */
static inline bool v_truthy(Value v)
{
    return v.type > VT_BOOL || (v.type == VT_BOOL && v.as.b);
}

/* Equality as `==` sees it: numbers by value (1 == 1.0), strings by bytes,
 * everything else by identity; values of different kinds are unequal. */
bool v_equal(Value a, Value b);
/* Two numbers in the total order of sorts, group keys and distinct: by
 * value, NaN after every number and equal to NaN (the scan's key bytes
 * order floats so). -1, 0 or 1. `<` and `==` still find NaN unordered. */
int v_order_num(Value a, Value b);

/* A sum for sum(), avg() and stat's mean that no order of the values
 * changes: the ints exactly, in 128 bits (2^64 int64s cannot overflow it),
 * and the floats apart. Zeroed is empty. */
typedef struct VSum {
    __int128 i;
    double f;
    bool floats;    /* a float was added: the sum is a float */
} VSum;

static inline void v_sum_int(VSum *s, __int128 x) { s->i += x; }
static inline void v_sum_float(VSum *s, double x)
{
    s->f += x;
    s->floats = true;
}
static inline void v_sum_merge(VSum *into, const VSum *from)
{
    into->i += from->i;
    into->f += from->f;
    into->floats |= from->floats;
}
/* The sum as a value: a float when a float was added, else the int; false
 * when that int does not fit in one (the caller raises the overflow). */
bool v_sum_value(const VSum *s, Value *out);
/* The mean of the n (> 0) values summed in s, from the exact sum. */
double v_sum_mean(const VSum *s, uint64_t n);

/* The name of v's type as `type(v)` returns it ("int", "map", "regex"...). */
const char *v_type_name(Value v);

#endif
