/* field: comb values <-> the fixed-width fields of tagset and tag rows. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "store/fieldtext.h"
#include "store/mem.h"
#include "vm/lib_store.h"
#include "vm/natives.h"
#include "vm/suggest.h"

/* ---- decoding --------------------------------------------------------- */

/* The bytes of a char[width] value: up to its first NUL. */
static size_t char_len(const void *p, uint32_t width)
{
    const char *z = memchr(p, 0, width);
    return z ? (size_t)(z - (const char *)p) : width;
}

Value vm_field_value(VM *vm, const VSchema *vs, uint32_t f, const void *p)
{
    const st_field *fd = &vs->s->fields[f];
    union {
        uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64;
        int8_t i8; int16_t i16; int32_t i32; int64_t i64;
        float f32; double f64;
    } u;
    memcpy(&u, p, fd->width < sizeof u ? fd->width : sizeof u);
    switch (fd->type) {
    case ST_U8: return v_int(u.u8);
    case ST_U16: return v_int(u.u16);
    case ST_U32: return v_int(u.u32);
    case ST_U64:    /* above the ints: the nearest float, positive and ordered */
        return u.u64 > INT64_MAX ? v_float((double)u.u64) : v_int((int64_t)u.u64);
    case ST_I8: return v_int(u.i8);
    case ST_I16: return v_int(u.i16);
    case ST_I32: return v_int(u.i32);
    case ST_I64: case ST_TIME: return v_int(u.i64);
    case ST_F32: return v_float(u.f32);
    case ST_F64: return v_float(u.f64);
    case ST_BOOL: return v_bool(u.u8 != 0);
    case ST_ENUM:
        if (u.u8 < fd->nsyms)
            return v_obj(vs->syms[f][u.u8]);
        return v_int(u.u8);
    case ST_CHAR: return v_obj(vm_str_new(vm, p, char_len(p, fd->width)));
    }
    return v_nil();
}

static void put_fields(VM *vm, const VSchema *vs, VMap *m, uint32_t from, uint32_t to,
                       const unsigned char *row, const bool *fields)
{
    const st_schema *s = vs->s;
    for (uint32_t f = from; f < to; f++)
        if (!fields || fields[f])
            vm_map_set(vm, m, v_obj(vs->names[f]),
                       vm_field_value(vm, vs, f, row + s->fields[f].offset));
}

Value vm_field_shared(VM *vm, const VSchema *vs, uint32_t f, const unsigned char *p,
                      VStr **last, uint32_t i)
{
    const st_field *fd = &vs->s->fields[f];
    if (!last || fd->type != ST_CHAR)
        return vm_field_value(vm, vs, f, p);
    size_t len = char_len(p, fd->width);
    if (!last[i] || last[i]->len != len || memcmp(last[i]->data, p, len) != 0)
        last[i] = vm_str_new(vm, (const char *)p, len);
    return v_obj(last[i]);
}

Value vm_record_value(VM *vm, const VSchema *vs, const unsigned char *row,
                      const unsigned char *tags, uint32_t ntags, const VRowShape *shape, bool flat)
{
    const st_schema *s = vs->s;
    const bool *fields = shape ? shape->fields : NULL;
    uint32_t nrowf = shape ? shape->nrow : s->nrow;
    uint32_t ntagf = shape ? shape->ntag : s->nfields - s->nrow;
    /* sized to its fields: a row of a few is one allocation (vm_map_new_keyed) */
    VMap *m = vm_map_new_keyed(vm, nrowf + (flat ? ntagf : ntagf > 0));
    Value mv = v_obj(m);
    if (shape) {
        for (uint32_t i = 0; i < nrowf; i++) {
            uint32_t f = shape->row[i], w = s->fields[f].width;
            VStr *name = shape->names ? shape->names[i] : vs->names[f];
            vm_map_set(vm, m, v_obj(name), vm_field_shared(vm, vs, f, row, shape->last, i));
            row += w;
        }
    } else {
        put_fields(vm, vs, m, 0, s->nrow, row, NULL);
    }
    if (flat) {
        put_fields(vm, vs, m, s->nrow, s->nfields, tags, fields);
        return mv;
    }
    if (!ntagf)
        return mv;
    VArray *a = vm_array_new(vm, ntags);
    vm_map_set(vm, m, v_obj(vs->tags_name), v_obj(a));
    for (uint32_t i = 0; i < ntags; i++) {
        VMap *tm = vm_map_new_keyed(vm, ntagf);
        vm_array_push(vm, a, v_obj(tm));
        put_fields(vm, vs, tm, s->nrow, s->nfields, tags + (size_t)i * s->tag_size, fields);
    }
    return mv;
}

/* ---- encoding --------------------------------------------------------- */

/* Whether f has no fraction, without libm: a double of 2^52 or more in
 * size (or an infinity) has none, NaN is not one, and the rest fit an
 * int64_t. */
static bool integral(double f)
{
    if (!(fabs(f) < 0x1p52))
        return f == f;
    return f == (double)(int64_t)f;
}

static const char *const type_names[] = {
    [ST_U8] = "u8", [ST_U16] = "u16", [ST_U32] = "u32", [ST_U64] = "u64",
    [ST_I8] = "i8", [ST_I16] = "i16", [ST_I32] = "i32", [ST_I64] = "i64",
    [ST_F32] = "f32", [ST_F64] = "f64", [ST_BOOL] = "bool", [ST_TIME] = "time",
    [ST_CHAR] = "char", [ST_ENUM] = "enum",
};

const char *vm_field_type_name(const st_field *f, char *buf, size_t n)
{
    if (f->type == ST_CHAR)
        snprintf(buf, n, "char[%u]", f->width);
    else
        snprintf(buf, n, "%s", type_names[f->type]);
    return buf;
}

_Noreturn static void bad_value(VM *vm, const char *what, const st_field *f, const char *why,
                                Value v)
{
    VStrBuf sb;
    vm_sb_init(vm, &sb, 16);
    vm_show(vm, &sb, v, true);
    VStr *s = vm_sb_done(vm, &sb);
    vm_error(vm, "%s: field '%s' (%s): %s, got %s %.*s", what, f->name, type_names[f->type], why,
             v_type_name(v), s->len > 40 ? 40 : (int)s->len, s->data);
}

void vm_int_range(const st_field *f, int64_t *lo, int64_t *hi)
{
    switch (f->type) {
    case ST_U8: *lo = 0; *hi = UINT8_MAX; break;
    case ST_BOOL: *lo = 0; *hi = 1; break;
    case ST_U16: *lo = 0; *hi = UINT16_MAX; break;
    case ST_U32: *lo = 0; *hi = UINT32_MAX; break;
    case ST_U64: *lo = 0; *hi = INT64_MAX; break;
    case ST_I8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case ST_I16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case ST_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

static void put_int(VM *vm, const st_field *f, Value v, void *dst, const char *what)
{
    int64_t lo, hi, x;
    if (f->type == ST_U64 && IS_FLOAT(v) && integral(v.as.f) && v.as.f >= 0x1p63 &&
        v.as.f < 0x1p64) {  /* a u64 above comb's ints reads as such a float: it goes back */
        uint64_t u = (uint64_t)v.as.f;
        memcpy(dst, &u, 8);
        return;
    }
    if (IS_FLOAT(v) && integral(v.as.f) && fabs(v.as.f) < 9.2e18)
        v = v_int((int64_t)v.as.f);
    if (!IS_INT(v))
        bad_value(vm, what, f, "expected an int", v);
    x = v.as.i;
    vm_int_range(f, &lo, &hi);
    if (x < lo || x > hi)
        bad_value(vm, what, f, "out of range", v);
    /* Little-endian hosts: the low bytes of the i64 are the narrower value. */
    memcpy(dst, &x, f->width);
}

void vm_field_store(VM *vm, const VSchema *vs, uint32_t fi, Value v, void *dst, const char *what)
{
    const st_field *f = &vs->s->fields[fi];
    switch (f->type) {
    case ST_F32:
    case ST_F64: {
        if (!IS_NUM(v))
            bad_value(vm, what, f, "expected a number", v);
        double d = IS_INT(v) ? (double)v.as.i : v.as.f;
        if (f->type == ST_F32) {
            float x = (float)d;
            memcpy(dst, &x, 4);
        } else {
            memcpy(dst, &d, 8);
        }
        return;
    }
    case ST_BOOL:
        if (IS_INT(v) && (v.as.i == 0 || v.as.i == 1))
            v = v_bool(v.as.i);
        if (!IS_BOOL(v))
            bad_value(vm, what, f, "expected a bool", v);
        *(uint8_t *)dst = v.as.b;
        return;
    case ST_TIME:
        if (IS_STR(v)) {
            int64_t t;
            if (st_fieldtext_time(AS_STR(v)->data, AS_STR(v)->len, &t) != 0)
                bad_value(vm, what, f, "expected a time like 2026-12-02T13:05:00Z", v);
            memcpy(dst, &t, 8);
            return;
        }
        put_int(vm, f, v, dst, what);
        return;
    case ST_CHAR: {
        if (!IS_STR(v))
            bad_value(vm, what, f, "expected a string", v);
        VStr *s = AS_STR(v);
        if (s->len > f->width)
            vm_error(vm, "%s: field '%s' (char[%u]): string of %zu bytes is too long", what,
                     f->name, f->width, s->len);
        if (memchr(s->data, 0, s->len))
            bad_value(vm, what, f, "a NUL byte cannot be stored", v);
        memcpy(dst, s->data, s->len);
        memset((char *)dst + s->len, 0, f->width - s->len);
        return;
    }
    case ST_ENUM: {
        int k = -1;
        if (IS_STR(v))
            k = st_field_enum_find(f, AS_STR(v)->data, AS_STR(v)->len);
        else if (IS_INT(v) && v.as.i >= 0 && v.as.i < f->nsyms)
            k = (int)v.as.i;
        if (k < 0 && IS_STR(v)) {
            const char *hint = vm_suggest(AS_STR(v)->data, AS_STR(v)->len,
                                          (const char *const *)f->syms, f->nsyms);
            vm_error(vm, "%s: field '%s' has no symbol '%.*s'%s%s%s", what, f->name,
                     (int)AS_STR(v)->len, AS_STR(v)->data, hint ? " (did you mean '" : "",
                     hint ? hint : "", hint ? "'?)" : "");
        }
        if (k < 0)
            bad_value(vm, what, f, "expected one of its symbols", v);
        *(uint8_t *)dst = (uint8_t)k;
        return;
    }
    default:
        put_int(vm, f, v, dst, what);
        return;
    }
}

void vm_rowbuf_free(VM *vm, VRowBuf *b)
{
    vm_free_mem(vm, b->row, b->row_cap);
    vm_free_mem(vm, b->tags, b->tags_cap);
    memset(b, 0, sizeof *b);
}

void *vm_grow(VM *vm, unsigned char **p, size_t *cap, size_t need)
{
    if (need > *cap) {
        size_t n = need < 64 ? 64 : need * 2;
        *p = vm_realloc(vm, *p, *cap, n);
        *cap = n;
    }
    return *p;
}

_Noreturn static void unknown_field(VM *vm, const st_schema *s, uint32_t from, uint32_t to,
                                    Value k, const char *what)
{
    const char *names[ST_MAX_FIELDS + 1];
    uint32_t n = 0;
    for (uint32_t f = from; f < to; f++)
        names[n++] = s->fields[f].name;
    if (from == 0 && s->tag_size)
        names[n++] = "tags";
    VStr *ks = vm_tostring(vm, k);
    const char *hint = vm_suggest(ks->data, ks->len, names, n);
    int f = IS_STR(k) ? st_schema_find(s, ks->data, ks->len) : -1;
    if (f >= 0 && from == 0)
        vm_error(vm, "%s: '%s' is a tag field: put it in the tagset's tags", what, ks->data);
    if (f >= 0)
        vm_error(vm, "%s: '%s' is not a tag field", what, ks->data);
    vm_error(vm, "%s: the schema has no field '%.*s'%s%s%s", what, (int)ks->len, ks->data,
             hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
}

/* Fields [from, to) of map m: tagset fields into row, tag fields into tag. */
static void encode_fields(VM *vm, const VSchema *vs, VMap *m, uint32_t from, uint32_t to,
                          unsigned char *row, unsigned char *tag, Value *tags, const char *what)
{
    const st_schema *s = vs->s;
    size_t pos = 0;
    Value k, v;
    bool seen[ST_MAX_FIELDS] = {false};
    while (vm_map_next(m, &pos, &k, &v)) {
        if (tags && IS_STR(k) && str_equal(AS_STR(k), vs->tags_name) && s->tag_size) {
            *tags = v;
            continue;
        }
        int f = IS_STR(k) ? st_schema_find(s, AS_STR(k)->data, AS_STR(k)->len) : -1;
        if (f < (int)from || f >= (int)to)
            unknown_field(vm, s, from, to, k, what);
        vm_field_store(vm, vs, (uint32_t)f, v,
                       (f < (int)s->nrow ? row : tag) + s->fields[f].offset, what);
        seen[f] = true;
    }
    for (uint32_t f = from; f < s->nkeys; f++)
        if (!seen[f])
            vm_error(vm, "%s: key field '%s' is missing", what, s->fields[f].name);
}

void vm_tagset_encode(VM *vm, const VSchema *vs, Value ts, VRowBuf *b, const char *what)
{
    const st_schema *s = vs->s;
    if (!IS_MAP(ts))
        vm_error(vm, "%s: a tagset must be a map, got %s", what, v_type_name(ts));
    vm_grow(vm, &b->row, &b->row_cap, s->row_size);
    memset(b->row, 0, s->row_size);
    Value tags = v_nil();
    encode_fields(vm, vs, AS_MAP(ts), 0, s->nrow, b->row, NULL, &tags, what);
    b->ntags = 0;
    if (IS_NIL(tags))
        return;
    if (!IS_ARRAY(tags))
        vm_error(vm, "%s: tags must be an array of maps, got %s", what, v_type_name(tags));
    VArray *a = AS_ARRAY(tags);
    if (a->len > UINT32_MAX / (s->tag_size ? s->tag_size : 1))
        vm_error(vm, "%s: too many tags", what);
    vm_grow(vm, &b->tags, &b->tags_cap, a->len * s->tag_size);
    if (a->len)
        memset(b->tags, 0, a->len * s->tag_size);
    for (size_t i = 0; i < a->len; i++) {
        char tw[96];
        snprintf(tw, sizeof tw, "%s: tag %zu", what, i + 1);
        if (!IS_MAP(a->items[i]))
            vm_error(vm, "%s: a tag must be a map, got %s", tw, v_type_name(a->items[i]));
        encode_fields(vm, vs, AS_MAP(a->items[i]), s->nrow, s->nfields, NULL,
                      b->tags + i * s->tag_size, NULL, tw);
    }
    b->ntags = (uint32_t)a->len;
}

void vm_flat_encode(VM *vm, const VSchema *vs, VMap *m, VRowBuf *b, const char *what)
{
    const st_schema *s = vs->s;
    vm_grow(vm, &b->row, &b->row_cap, s->row_size);
    vm_grow(vm, &b->tags, &b->tags_cap, s->tag_size);
    memset(b->row, 0, s->row_size);
    memset(b->tags, 0, s->tag_size);
    encode_fields(vm, vs, m, 0, s->nfields, b->row, b->tags, NULL, what);
    b->ntags = 1;
}
