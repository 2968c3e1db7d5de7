/* show: the text form of values, as print() and str() write them. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/natives.h"
#include "vm/vm.h"

#define SHOW_DEPTH 32

/* The shortest %g form that reads back as the same double, with ".0" added
 * to integral values so a float never prints like an int. */
void vm_format_float(double f, char buf[32])
{
    if (isnan(f)) {
        strcpy(buf, "nan");
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, f);
        if (strtod(buf, NULL) == f)
            break;
    }
    if (!strpbrk(buf, ".eni"))
        strcat(buf, ".0");
}

/* Decimal digits of i, faster than printf: str(i) is common in loops. */
const char *vm_format_int(int64_t i, char buf[32])
{
    char *p = buf + 31;
    uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
    *p = '\0';
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (i < 0)
        *--p = '-';
    return p;
}

static void show_quoted(VM *vm, VStrBuf *sb, const VStr *s)
{
    vm_sb_add(vm, sb, "\"", 1);
    for (size_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->data[i];
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\t': esc = "\\t"; break;
        case '\r': esc = "\\r"; break;
        default: break;
        }
        if (esc)
            vm_sb_addc(vm, sb, esc);
        else if (c < 0x20 || c == 0x7f)
            vm_sb_printf(vm, sb, "\\x%02x", c);
        else
            vm_sb_add(vm, sb, (const char *)&c, 1);
    }
    vm_sb_add(vm, sb, "\"", 1);
}

/* The containers being shown, outermost first: one met again is a cycle. */
typedef struct Path {
    const Obj *o[SHOW_DEPTH];
    int depth;
} Path;

static void show(VM *vm, VStrBuf *sb, Value v, bool quote, Path *path);

static void show_array(VM *vm, VStrBuf *sb, VArray *a, Path *path)
{
    vm_sb_add(vm, sb, "[", 1);
    for (size_t i = 0; i < a->len; i++) {
        if (i)
            vm_sb_add(vm, sb, ", ", 2);
        show(vm, sb, a->items[i], true, path);
    }
    vm_sb_add(vm, sb, "]", 1);
}

static void show_map(VM *vm, VStrBuf *sb, VMap *m, Path *path)
{
    Value k, val;
    size_t pos = 0;
    bool first = true;
    vm_sb_add(vm, sb, "{", 1);
    while (vm_map_next(m, &pos, &k, &val)) {
        if (!first)
            vm_sb_add(vm, sb, ", ", 2);
        first = false;
        show(vm, sb, k, true, path);
        vm_sb_add(vm, sb, ": ", 2);
        show(vm, sb, val, true, path);
    }
    vm_sb_add(vm, sb, "}", 1);
}

static void show_named(VM *vm, VStrBuf *sb, const char *what, const VStr *name)
{
    vm_sb_printf(vm, sb, "<%s", what);
    if (name) {
        vm_sb_add(vm, sb, " ", 1);
        vm_sb_add(vm, sb, name->data, name->len);
    }
    vm_sb_add(vm, sb, ">", 1);
}

static bool enter(Path *path, const Obj *o)
{
    if (path->depth == SHOW_DEPTH)
        return false;
    for (int i = 0; i < path->depth; i++)
        if (path->o[i] == o)
            return false;
    path->o[path->depth++] = o;
    return true;
}

static void show(VM *vm, VStrBuf *sb, Value v, bool quote, Path *path)
{
    char buf[32];
    if ((IS_ARRAY(v) || IS_MAP(v)) && !enter(path, v.as.o)) {
        vm_sb_addc(vm, sb, IS_ARRAY(v) ? "[...]" : "{...}");
        return;
    }
    switch (v.type) {
    case VT_NIL:
        vm_sb_addc(vm, sb, "nil");
        break;
    case VT_BOOL:
        vm_sb_addc(vm, sb, v.as.b ? "true" : "false");
        break;
    case VT_INT:
        vm_sb_addc(vm, sb, vm_format_int(v.as.i, buf));
        break;
    case VT_FLOAT:
        vm_format_float(v.as.f, buf);
        vm_sb_addc(vm, sb, buf);
        break;
    case VT_STR:
        if (quote)
            show_quoted(vm, sb, AS_STR(v));
        else
            vm_sb_add(vm, sb, AS_STR(v)->data, AS_STR(v)->len);
        break;
    case VT_ARRAY:
        show_array(vm, sb, AS_ARRAY(v), path);
        path->depth--;
        break;
    case VT_MAP:
        show_map(vm, sb, AS_MAP(v), path);
        path->depth--;
        break;
    case VT_FUNC:
        show_named(vm, sb, "fn", AS_FUNC(v)->p->name);
        break;
    case VT_NATIVE:
        vm_sb_printf(vm, sb, "<native %s>", AS_NATIVE(v)->def->name);
        break;
    case VT_MODULE:
        show_named(vm, sb, "module", AS_MODULE(v)->name);
        break;
    case VT_HANDLE: {
        VHandle *h = AS_HANDLE(v);
        if (h->type->show)
            h->type->show(vm, h->data, sb);
        else
            vm_sb_printf(vm, sb, "<%s>", h->type->name);
        break;
    }
    default:
        vm_sb_addc(vm, sb, "<undefined>");
        break;
    }
}

void vm_show(VM *vm, VStrBuf *sb, Value v, bool quote)
{
    Path path = {.depth = 0};
    show(vm, sb, v, quote, &path);
}

VStr *vm_tostring(VM *vm, Value v)
{
    char buf[32];
    if (IS_STR(v))
        return AS_STR(v);
    if (IS_INT(v))
        return vm_str_cstr(vm, vm_format_int(v.as.i, buf));
    VStrBuf sb;
    vm_sb_init(vm, &sb, 16);
    vm_show(vm, &sb, v, false);
    return vm_sb_done(vm, &sb);
}
