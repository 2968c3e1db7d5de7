/* store_text: reads tab-separated records for `comb store load`. */
#include "config.h"
#include "cli/store_text.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/mem.h"
#include "store/sysio.h"

#define LINE_BYTES (1u << 20) /* the longest line read */

/* An integer of the field's width into dst (little-endian, as stored). */
static bool parse_int(const st_field *f, const char *v, bool is_signed, unsigned char *dst)
{
    char *end;
    unsigned bits = 8 * f->width;
    uint64_t u;
    errno = 0;
    if (is_signed) {
        long long x = strtoll(v, &end, 10);
        long long lim = bits == 64 ? 0 : 1ll << (bits - 1);
        if (bits < 64 && (x < -lim || x >= lim))
            return false;
        u = (uint64_t)x;
    } else {
        u = strtoull(v, &end, 10);
        if (v[0] == '-' || (bits < 64 && u >> bits))
            return false;
    }
    if (errno || end == v || *end)
        return false;
    memcpy(dst, &u, f->width);
    return true;
}

static bool parse_value(const st_field *f, const char *v, unsigned char *dst)
{
    size_t len = strlen(v);
    char *end = NULL;
    int64_t t;
    switch (f->type) {
    case ST_U8: case ST_U16: case ST_U32: case ST_U64:
        return parse_int(f, v, false, dst);
    case ST_I8: case ST_I16: case ST_I32: case ST_I64:
        return parse_int(f, v, true, dst);
    case ST_TIME:
        if (st_time_parse(v, len, &t) < 0)
            return parse_int(f, v, true, dst);
        memcpy(dst, &t, 8);
        return true;
    case ST_F32: {
        float x = strtof(v, &end);
        memcpy(dst, &x, 4);
        return end != v && !*end;
    }
    case ST_F64: {
        double x = strtod(v, &end);
        memcpy(dst, &x, 8);
        return end != v && !*end;
    }
    case ST_BOOL:
        dst[0] = !strcmp(v, "true") || !strcmp(v, "1");
        return dst[0] || !strcmp(v, "false") || !strcmp(v, "0");
    case ST_CHAR:
        memcpy(dst, v, len <= f->width ? len : 0);
        return len <= f->width;
    case ST_ENUM: {
        int k = st_field_enum_find(f, v, len);
        dst[0] = (unsigned char)k;
        return k >= 0;
    }
    }
    return false;
}

/* Splits a line (no newline) at tabs into the row and tag; returns the
 * number of values, or -1 with err set. */
static int parse_line(const st_schema *s, char *line, unsigned char *row, unsigned char *tag,
                      st_err *err)
{
    memset(row, 0, s->row_size);
    memset(tag, 0, s->tag_size);
    uint32_t i = 0;
    for (char *v = line, *tab;; v = tab + 1, i++) {
        tab = strchr(v, '\t');
        if (tab)
            *tab = '\0';
        if (i >= s->nfields)
            return st_err_set(err, ST_EINPUT, "more than the schema's %u values", s->nfields);
        const st_field *f = &s->fields[i];
        if (!parse_value(f, v, (i < s->nrow ? row : tag) + f->offset))
            return st_err_set(err, ST_EINPUT, "field '%s': '%.40s' is not %s", f->name, v,
                              f->type == ST_ENUM ? "one of its symbols" : "a value of its type");
        if (!tab)
            return (int)i + 1;
    }
}

static int load_lines(st_load *l, FILE *in, const char *path, char *line, st_err *err)
{
    const st_schema *s = st_load_schema(l);
    unsigned char *row = mem_alloc(s->row_size), *tag = mem_alloc(s->tag_size + 1u);
    int rc = row && tag ? 0 : st_err_nomem(err, path);
    for (unsigned long n = 1; rc == 0 && fgets(line, LINE_BYTES, in); n++) {
        size_t len = strlen(line);
        if (len == LINE_BYTES - 1 && line[len - 1] != '\n')
            rc = st_err_set(err, ST_EINPUT, "the line is longer than %u bytes", LINE_BYTES - 2);
        while (rc == 0 && len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (rc == 0 && (len == 0 || line[0] == '#'))
            continue;
        int nv = rc == 0 ? parse_line(s, line, row, tag, err) : -1;
        if (nv >= 0 && (uint32_t)nv != s->nrow && (uint32_t)nv != s->nfields)
            nv = st_err_set(err, ST_EINPUT, "%d values: a record has %u (a tagset without a "
                            "tag) or %u", nv, s->nrow, s->nfields);
        rc = nv < 0 ? -1 : st_load_add(l, row, (uint32_t)nv > s->nrow ? tag : NULL, err);
        if (rc < 0)
            st_err_prefix(err, "%s:%lu: ", path, n);
    }
    if (rc == 0 && ferror(in))
        rc = st_sys_err(err, errno, "read %s", path);
    mem_free(row, s->row_size);
    mem_free(tag, s->tag_size + 1u);
    return rc;
}

int store_text_load(st_load *l, const char *path, st_err *err)
{
    bool std_in = !strcmp(path, "-");
    FILE *in = std_in ? stdin : fopen(path, "r");
    if (!in)
        return st_sys_err(err, errno, "open %s", path);
    char *line = mem_alloc(LINE_BYTES);
    int rc = line ? load_lines(l, in, std_in ? "(stdin)" : path, line, err)
                  : st_err_nomem(err, path);
    mem_free(line, LINE_BYTES);
    if (!std_in)
        fclose(in);
    return rc;
}
