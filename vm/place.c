/* place: an error's place shown as its source line with a caret under the
 * column, for syntax errors (lang/diag.c) and runtime errors
 * (vm_print_error). */
#include "config.h"
#include "vm/place.h"

#include <string.h>

#include "store/mem.h"
#include "vm/object.h"

/* How much of a long line shows around the column (a generated program's
 * 60,000-byte line is not written whole). */
#define WINDOW 80

void vm_show_place(FILE *out, const char *src, size_t len, int first_line, uint32_t line, uint32_t col)
{
    if (!src || line < (uint32_t)first_line || col == 0)
        return;
    const char *p = src, *end = src + len;
    for (uint32_t l = (uint32_t)first_line; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return;
        p = nl + 1;
    }
    if (p == end)
        return;     /* the end of the input, past its last line: nothing to show */
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
    if (n && p[n - 1] == '\r')
        n--;
    size_t at = col - 1 <= n ? col - 1 : n;     /* the end of the line: an error at it */
    size_t from = at > WINDOW ? at - WINDOW : 0, to = n - at > WINDOW ? at + WINDOW : n;
    while (from > 0 && (p[from] & 0xC0) == 0x80)
        from--;     /* not inside a character */
    while (to < n && (p[to] & 0xC0) == 0x80)
        to++;
    const char *more = from ? "..." : "";
    fprintf(out, "%5u | %s%.*s%s\n      | %s", line, more, (int)(to - from), p + from, to < n ? "..." : "",
            from ? "   " : "");
    for (size_t i = from; i < at; i++)
        if ((p[i] & 0xC0) != 0x80)
            fputc(p[i] == '\t' ? '\t' : ' ', out);  /* a tab keeps the caret under its column */
    fputs("^\n", out);
}

static void set_source(VProto *p, VArray *source)
{
    p->source = source;
    for (size_t i = 0; i < p->nprotos; i++)
        set_source(p->protos[i], source);
}

void vm_keep_source(VM *vm, VModule *m, VProto *main, const char *src, size_t len, int first_line)
{
    vm_push_root(vm, v_obj(main));     /* only the caller's C variable holds it */
    VArray *chunk = vm_array_new(vm, 2);
    vm_push_root(vm, v_obj(chunk));
    vm_array_push(vm, chunk, v_int(first_line));
    vm_array_push(vm, chunk, v_obj(vm_str_new(vm, src, len)));
    set_source(main, chunk);
    m->source = chunk;
    vm_pop_root(vm, 2);
}

void vm_show_source_place(FILE *out, const VArray *source, const VModule *m, uint32_t line, uint32_t col)
{
    if (source) {
        VStr *s = AS_STR(source->items[1]);
        vm_show_place(out, s->data, s->len, (int)source->items[0].as.i, line, col);
        return;
    }
    FILE *f = m->path->data[0] == '<' ? NULL : fopen(m->path->data, "rb");
    if (!f)
        return;
    size_t cap = 1 << 16, n = 0;
    char *buf = mem_alloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *more = mem_realloc(buf, cap, cap * 2);
            if (!more)
                break;
            buf = more;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        vm_show_place(out, buf, n, 1, line, col);
    mem_free(buf, cap);
}
