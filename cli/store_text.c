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
        if (st_fieldtext_parse(f, v, strlen(v), (i < s->nrow ? row : tag) + f->offset, vm_suggest,
                               err) < 0)
            return -1;
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
