/* lib_string: string natives: sub, find, split, join, upper, lower, trim,
 * repeat, startswith, endswith, byte, char, and fmt/printf.
 *
 * Strings are bytes: every index counts bytes from 0, upper and lower touch
 * ASCII letters only, and NUL bytes are ordinary bytes everywhere. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "vm/lib.h"

#define FMT_MAX_WIDTH 10000     /* widths and precisions; bounds a result */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static Value str_val(VM *vm, const char *p, size_t n)
{
    return v_obj(vm_str_new(vm, p, n));
}

Value nat_sub(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    size_t from, to;
    lib_slice_range(vm, argc, argv, 1, s->len, &from, &to);
    if (from == 0 && to == s->len)
        return argv[0];
    return str_val(vm, s->data + from, to - from);
}

static Value find_in_array(VM *vm, int argc, Value *argv)
{
    VArray *a = AS_ARRAY(argv[0]);
    size_t from, to;
    lib_slice_range(vm, argc, argv, 2, a->len, &from, &to);
    for (size_t i = from; i < to; i++)
        if (v_equal(a->items[i], argv[1]))
            return v_int((int64_t)i);
    return v_nil();
}

Value nat_find(VM *vm, int argc, Value *argv)
{
    if (IS_ARRAY(argv[0]))
        return find_in_array(vm, argc, argv);
    if (!IS_STR(argv[0]))
        vm_arg_error(vm, 0, "a string or array", argv[0]);
    VStr *s = AS_STR(argv[0]), *needle = vm_arg_str(vm, argv, 1);
    size_t from, to;
    lib_slice_range(vm, argc, argv, 2, s->len, &from, &to);
    if (needle->len == 0)
        return v_int((int64_t)from);
    const char *p = memmem(s->data + from, to - from, needle->data, needle->len);
    return p ? v_int(p - s->data) : v_nil();
}

/* split(s): the runs of non-space bytes. */
static Value split_space(VM *vm, VStr *s)
{
    VArray *a = vm_array_new(vm, 0);
    const char *p = s->data, *end = p + s->len;
    for (;;) {
        while (p < end && is_space(*p))
            p++;
        if (p == end)
            return v_obj(a);
        const char *word = p;
        while (p < end && !is_space(*p))
            p++;
        vm_array_push(vm, a, str_val(vm, word, (size_t)(p - word)));
    }
}

Value nat_split(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    if (argc < 2)
        return split_space(vm, s);
    VStr *sep = vm_arg_str(vm, argv, 1);
    if (!sep->len)
        vm_error(vm, "the separator is empty");
    VArray *a = vm_array_new(vm, 0);
    const char *p = s->data, *end = p + s->len, *hit;
    while ((hit = memmem(p, (size_t)(end - p), sep->data, sep->len))) {
        vm_array_push(vm, a, str_val(vm, p, (size_t)(hit - p)));
        p = hit + sep->len;
    }
    vm_array_push(vm, a, str_val(vm, p, (size_t)(end - p)));
    return v_obj(a);
}

Value nat_join(VM *vm, int argc, Value *argv)
{
    VArray *a = vm_arg_array(vm, argv, 0);
    VStr *sep = argc > 1 ? vm_arg_str(vm, argv, 1) : NULL;
    VStrBuf sb;
    vm_sb_init(vm, &sb, a->len < 4096 ? 16 * a->len : 65536);   /* a guess; it grows */
    for (size_t i = 0; i < a->len; i++) {
        if (i && sep)
            vm_sb_add(vm, &sb, sep->data, sep->len);
        VStr *item = vm_tostring(vm, a->items[i]);
        vm_sb_add(vm, &sb, item->data, item->len);
    }
    return v_obj(vm_sb_done(vm, &sb));
}

/* s with every byte passed through map. */
static Value map_bytes(VM *vm, Value *argv, int (*map)(int c))
{
    VStr *s = vm_arg_str(vm, argv, 0);
    VStr *t = vm_str_alloc(vm, s->len);
    char *w = str_wbuf(t);
    for (size_t i = 0; i < s->len; i++)
        w[i] = (char)map((unsigned char)s->data[i]);
    return v_obj(t);
}

static int ascii_upper(int c)
{
    return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

static int ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

Value nat_upper(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return map_bytes(vm, argv, ascii_upper);
}

Value nat_lower(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return map_bytes(vm, argv, ascii_lower);
}

Value nat_trim(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VStr *s = vm_arg_str(vm, argv, 0);
    size_t from = 0, to = s->len;
    while (from < to && is_space(s->data[from]))
        from++;
    while (to > from && is_space(s->data[to - 1]))
        to--;
    return to - from == s->len ? argv[0] : str_val(vm, s->data + from, to - from);
}

Value nat_repeat(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t n = vm_arg_int(vm, argv, 1);
    if (n < 0)
        vm_error(vm, "the count must not be negative, got %lld", (long long)n);
    size_t total;
    if (__builtin_mul_overflow(s->len, (uint64_t)n, &total))
        vm_error(vm, "the result is too long");
    VStr *t = vm_str_alloc(vm, total);
    char *w = str_wbuf(t);
    if (total) {    /* one copy, then doubling what is written */
        memcpy(w, s->data, s->len);
        for (size_t done = s->len; done < total; done *= 2)
            memcpy(w + done, w, done < total - done ? done : total - done);
    }
    return v_obj(t);
}

/* Does s hold affix at its start (or its end)? */
static Value has_affix(VM *vm, Value *argv, bool at_end)
{
    VStr *s = vm_arg_str(vm, argv, 0), *a = vm_arg_str(vm, argv, 1);
    if (a->len > s->len)
        return v_bool(false);
    return v_bool(!memcmp(s->data + (at_end ? s->len - a->len : 0), a->data, a->len));
}

Value nat_startswith(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return has_affix(vm, argv, false);
}

Value nat_endswith(VM *vm, int argc, Value *argv)
{
    (void)argc;
    return has_affix(vm, argv, true);
}

Value nat_byte(VM *vm, int argc, Value *argv)
{
    VStr *s = vm_arg_str(vm, argv, 0);
    size_t i = lib_index(vm, argc > 1 ? vm_arg_int(vm, argv, 1) : 0, s->len);
    return v_int((unsigned char)s->data[i]);
}

/* argv[i] as a byte value, 0 to 255. */
static char byte_arg(VM *vm, Value *argv, int i)
{
    int64_t n = vm_arg_int(vm, argv, i);
    if (n < 0 || n > 255)
        vm_error(vm, "argument %d must be a byte (0 to 255), got %lld", i + 1, (long long)n);
    return (char)n;
}

Value nat_char(VM *vm, int argc, Value *argv)
{
    VStr *t = vm_str_alloc(vm, (size_t)argc);
    for (int i = 0; i < argc; i++)
        str_wbuf(t)[i] = byte_arg(vm, argv, i);
    return v_obj(t);
}

/* ---- fmt -------------------------------------------------------------- */

/* One conversion of a format: %[flags][width][.precision]conv. */
typedef struct Spec {
    char flags[6];      /* as written, each once, NUL-terminated */
    int width, prec;    /* -1 when absent */
    char conv;
} Spec;

/* The flags each conversion takes (C leaves the others undefined). */
static const char *spec_flags(char conv)
{
    switch (conv) {
    case 'd': case 'i': return "-+ 0";
    case 'x': case 'X': case 'o': return "-0#";
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': return "-+ 0#";
    case 's': case 'c': return "-";
    default: return NULL;
    }
}

static int spec_number(VM *vm, const VStr *f, size_t *pos)
{
    int n = 0;
    while (*pos < f->len && f->data[*pos] >= '0' && f->data[*pos] <= '9') {
        n = 10 * n + (f->data[(*pos)++] - '0');
        if (n > FMT_MAX_WIDTH)
            vm_error(vm, "a width or precision in the format is over %d", FMT_MAX_WIDTH);
    }
    return n;
}

/* Parses the conversion whose '%' is at f[*pos - 1]; raises if it is bad. */
static void parse_spec(VM *vm, const VStr *f, size_t *pos, Spec *sp)
{
    size_t nflags = 0;
    const char *p;
    while (*pos < f->len && (p = strchr("-+ 0#", f->data[*pos])) && *p) {
        if (!memchr(sp->flags, *p, nflags))
            sp->flags[nflags++] = *p;
        (*pos)++;
    }
    sp->flags[nflags] = '\0';
    sp->width = *pos < f->len && f->data[*pos] >= '1' && f->data[*pos] <= '9'
                    ? spec_number(vm, f, pos) : -1;
    sp->prec = -1;
    if (*pos < f->len && f->data[*pos] == '.') {
        (*pos)++;
        sp->prec = spec_number(vm, f, pos);
    }
    if (*pos == f->len)
        vm_error(vm, "the format ends inside a conversion");
    sp->conv = f->data[(*pos)++];
    const char *ok = spec_flags(sp->conv);
    if (!ok) {
        unsigned char c = (unsigned char)sp->conv;
        if (c >= 0x20 && c < 0x7f)
            vm_error(vm, "unknown conversion '%%%c' in the format", c);
        vm_error(vm, "unknown conversion byte 0x%02x in the format", c);
    }
    for (size_t i = 0; i < nflags; i++)
        if (!strchr(ok, sp->flags[i]))
            vm_error(vm, "flag '%c' does not apply to '%%%c'", sp->flags[i], sp->conv);
}

/* n bytes at p, padded with spaces to the spec's width. */
static void add_padded(VM *vm, VStrBuf *sb, const Spec *sp, const char *p, size_t n)
{
    size_t pad = sp->width > 0 && (size_t)sp->width > n ? (size_t)sp->width - n : 0;
    bool left = strchr(sp->flags, '-') != NULL;
    if (left)
        vm_sb_add(vm, sb, p, n);
    for (size_t i = 0; i < pad; i++)
        vm_sb_add(vm, sb, " ", 1);
    if (!left)
        vm_sb_add(vm, sb, p, n);
}

/* The C format for sp with length modifier len ("ll" or ""). */
static void c_format(const Spec *sp, const char *len, char out[32])
{
    char *w = out;
    w += sprintf(w, "%%%s", sp->flags);
    if (sp->width >= 0)
        w += sprintf(w, "%d", sp->width);
    if (sp->prec >= 0)
        w += sprintf(w, ".%d", sp->prec);
    sprintf(w, "%s%c", len, sp->conv);
}

/* An integer argument for %d and the like: an int, or a float with an
 * integral value in range. */
static int64_t int_for(VM *vm, Value *argv, int i)
{
    Value v = argv[i];
    int64_t n;
    if (IS_FLOAT(v) && ops_float_int(AS_FLOAT(v), &n))
        return n;
    return vm_arg_int(vm, argv, i);
}

/* The spec was checked against C's rules, so the format is sound. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void add_number(VM *vm, VStrBuf *sb, const Spec *sp, Value *argv, int i)
{
    char cf[32];
    switch (sp->conv) {
    case 'd': case 'i':
        c_format(sp, "ll", cf);
        vm_sb_printf(vm, sb, cf, (long long)int_for(vm, argv, i));
        break;
    case 'x': case 'X': case 'o':   /* negative ints show their two's complement */
        c_format(sp, "ll", cf);
        vm_sb_printf(vm, sb, cf, (unsigned long long)int_for(vm, argv, i));
        break;
    default:
        c_format(sp, "", cf);
        vm_sb_printf(vm, sb, cf, vm_arg_num(vm, argv, i));
        break;
    }
}
#pragma GCC diagnostic pop

static void add_conversion(VM *vm, VStrBuf *sb, const Spec *sp, Value *argv, int i)
{
    if (sp->conv == 's') {
        VStr *s = vm_tostring(vm, argv[i]);
        size_t n = sp->prec >= 0 && (size_t)sp->prec < s->len ? (size_t)sp->prec : s->len;
        add_padded(vm, sb, sp, s->data, n);
    } else if (sp->conv == 'c') {
        char c = byte_arg(vm, argv, i);
        add_padded(vm, sb, sp, &c, 1);
    } else {
        add_number(vm, sb, sp, argv, i);
    }
}

/* The text of the format argv[0] applied to argv[1..argc). */
static VStr *format(VM *vm, int argc, Value *argv)
{
    VStr *f = vm_arg_str(vm, argv, 0);
    VStrBuf sb;
    vm_sb_init(vm, &sb, f->len + 16);
    size_t pos = 0;
    int next = 1;
    while (pos < f->len) {
        const char *pct = memchr(f->data + pos, '%', f->len - pos);
        size_t n = pct ? (size_t)(pct - f->data) - pos : f->len - pos;
        vm_sb_add(vm, &sb, f->data + pos, n);
        pos += n;
        if (!pct)
            break;
        pos++;
        if (pos < f->len && f->data[pos] == '%') {
            vm_sb_add(vm, &sb, "%", 1);
            pos++;
            continue;
        }
        Spec sp;
        parse_spec(vm, f, &pos, &sp);
        if (next >= argc)
            vm_error(vm, "no argument for '%%%c' (conversion %d)", sp.conv, next);
        add_conversion(vm, &sb, &sp, argv, next++);
    }
    if (next < argc)
        vm_error(vm, "%d value%s given, but the format uses %d", argc - 1,
                 argc == 2 ? "" : "s", next - 1);
    return vm_sb_done(vm, &sb);
}

Value nat_fmt(VM *vm, int argc, Value *argv)
{
    return v_obj(format(vm, argc, argv));
}

Value nat_printf(VM *vm, int argc, Value *argv)
{
    VStr *s = format(vm, argc, argv);
    fwrite(s->data, 1, s->len, stdout);
    return v_nil();
}
