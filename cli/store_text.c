/* store_text: reads tab-separated records for `comb store load`. */
#include "config.h"
#include "cli/store_text.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store/fieldtext.h"
#include "store/mem.h"
#include "store/sysio.h"
#include "vm/suggest.h"

#define LINE_BYTES (1u << 20) /* the longest line read */

/* The columns of a file: with a header, the field of each (cols[i]), else
 * the schema's canonical order (cols NULL). */
typedef struct columns {
    int cols[ST_MAX_FIELDS];
    uint32_t n;
    bool named, tagged; /* a header named them; one of them is a tag field */
} columns;

/* Splits a line (no newline) at tabs into the row and tag; returns the
 * number of values, or -1 with err set. */
static int parse_line(const st_schema *s, const columns *c, char *line, unsigned char *row,
                      unsigned char *tag, st_err *err)
{
    memset(row, 0, s->row_size);
    memset(tag, 0, s->tag_size);
    uint32_t i = 0, most = c->named ? c->n : s->nfields;
    for (char *v = line, *tab;; v = tab + 1, i++) {
        tab = strchr(v, '\t');
        if (tab)
            *tab = '\0';
        if (i >= most)
            return st_err_set(err, ST_EINPUT, "more than the %s %u values",
                              c->named ? "header's" : "schema's", most);
        uint32_t fi = c->named ? (uint32_t)c->cols[i] : i;
        const st_field *f = &s->fields[fi];
        if (st_fieldtext_parse(f, v, strlen(v), (fi < s->nrow ? row : tag) + f->offset, vm_suggest,
                               err) < 0)
            return -1;
        if (!tab)
            return (int)i + 1;
    }
}

/* The header line: tab-separated field names, each once, every key field
 * among them. */
static int read_header(const st_schema *s, char *line, columns *c, st_err *err)
{
    const char *names[ST_MAX_FIELDS];
    bool seen[ST_MAX_FIELDS] = {0};
    for (uint32_t f = 0; f < s->nfields; f++)
        names[f] = s->fields[f].name;
    *c = (columns){.named = true};
    for (char *v = line, *tab;; v = tab + 1) {
        tab = strchr(v, '\t');
        if (tab)
            *tab = '\0';
        int f = st_schema_find(s, v, strlen(v));
        if (f < 0) {
            const char *hint = vm_suggest(v, strlen(v), names, s->nfields);
            return st_err_set(err, ST_EINPUT, "header: '%s' is not a field of the schema%s%s%s",
                              v, hint ? " (did you mean '" : "", hint ? hint : "",
                              hint ? "'?)" : "");
        }
        if (seen[f])
            return st_err_set(err, ST_EINPUT, "header: '%s' is named twice", v);
        seen[f] = true;
        c->tagged |= (uint32_t)f >= s->nrow;
        c->cols[c->n++] = f;
        if (!tab)
            break;
    }
    for (uint32_t f = 0; f < s->nkeys; f++)
        if (!seen[f])
            return st_err_set(err, ST_EINPUT, "header: the key field '%s' is missing", names[f]);
    return 0;
}

static int load_lines(st_load *l, FILE *in, const char *path, bool header, char *line, st_err *err)
{
    const st_schema *s = st_load_schema(l);
    unsigned char *row = mem_alloc(s->row_size), *tag = mem_alloc(s->tag_size + 1u);
    columns *c = mem_alloc(sizeof *c);
    int rc = row && tag && c ? 0 : st_err_nomem(err, path);
    if (c)
        *c = (columns){0};
    for (unsigned long n = 1; rc == 0 && fgets(line, LINE_BYTES, in); n++) {
        size_t len = strlen(line);
        if (len == LINE_BYTES - 1 && line[len - 1] != '\n')
            rc = st_err_set(err, ST_EINPUT, "the line is longer than %u bytes", LINE_BYTES - 2);
        while (rc == 0 && len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (rc == 0 && (len == 0 || line[0] == '#'))
            continue;
        if (rc == 0 && header && !c->named) {
            rc = read_header(s, line, c, err);
        } else {
            int nv = rc == 0 ? parse_line(s, c, line, row, tag, err) : -1;
            if (nv >= 0 && c->named && (uint32_t)nv != c->n)
                nv = st_err_set(err, ST_EINPUT, "%d values: the header names %u", nv, c->n);
            else if (nv >= 0 && !c->named && (uint32_t)nv != s->nrow && (uint32_t)nv != s->nfields)
                nv = st_err_set(err, ST_EINPUT, "%d values: a record has %u (a tagset without a "
                                "tag) or %u", nv, s->nrow, s->nfields);
            bool tagged = c->named ? c->tagged : (uint32_t)nv > s->nrow;
            rc = nv < 0 ? -1 : st_load_add(l, row, tagged ? tag : NULL, err);
        }
        if (rc < 0)
            st_err_prefix(err, "%s:%lu: ", path, n);
    }
    if (rc == 0 && ferror(in))
        rc = st_sys_err(err, errno, "read %s", path);
    mem_free(row, s->row_size);
    mem_free(tag, s->tag_size + 1u);
    mem_free(c, sizeof *c);
    return rc;
}

int store_text_load(st_load *l, const char *path, bool header, st_err *err)
{
    bool std_in = !strcmp(path, "-");
    FILE *in = std_in ? stdin : fopen(path, "r");
    if (!in)
        return st_sys_err(err, errno, "open %s", path);
    char *line = mem_alloc(LINE_BYTES);
    int rc = line ? load_lines(l, in, std_in ? "(stdin)" : path, header, line, err)
                  : st_err_nomem(err, path);
    mem_free(line, LINE_BYTES);
    if (!std_in)
        fclose(in);
    return rc;
}
