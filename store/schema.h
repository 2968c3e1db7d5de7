/* schema: field types, the schema text syntax, and fixed record layouts.
 *
 * A schema names fields of fixed width. Each is a key field (the sort order,
 * in declaration order), a tagset field (one value per tagset) or a tag field
 * (one value per tag). The text form, one field per line or separated by ';',
 * '#' starting a comment:
 *
 *     key onum: u64
 *     key ts: time
 *     tagset state: enum(open, billed, closed)
 *     tag sys: enum(RICS, BILL, SWITCH)
 *     tag dnum: char[16]
 *
 * Fields are kept in canonical order: key fields, then tagset fields, then tag
 * fields, each group in declaration order; st_schema_format prints that order,
 * and st_schema_parse of its output gives an equal schema.
 *
 * Records are packed without padding (read fields with memcpy):
 *   tagset row = key fields then tagset fields (fields[0 .. nrow))
 *   tag row    = tag fields                   (fields[nrow .. nfields))
 * A bare key (nkeys fields, key_size bytes) is the prefix of a tagset row.
 * Values are host (little-endian) integers and IEEE floats; bool is a u8 0/1;
 * time is i64 seconds since 1970 UTC; char[N] is N bytes, NUL-padded (a value
 * of exactly N bytes has no NUL); enum is a u8 index into the symbol list.
 *
 * Columns, as files store and readers return them: column i < nfields is
 * field i; if the schema has tag fields, column nfields is the per-tagset tag
 * count (u32). st_schema_ncols counts them.
 *
 * Ownership: st_schema_parse returns a schema the caller frees with
 * st_schema_free; a schema is immutable after parsing and may be shared by
 * threads. st_schema_format returns text the caller frees with mem_free(p,
 * len + 1). */
#ifndef COMB_STORE_SCHEMA_H
#define COMB_STORE_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/err.h"

typedef enum st_type {
    ST_U8, ST_U16, ST_U32, ST_U64,
    ST_I8, ST_I16, ST_I32, ST_I64,
    ST_F32, ST_F64, ST_BOOL, ST_TIME, ST_CHAR, ST_ENUM,
} st_type;

typedef enum st_role { ST_KEY, ST_TAGSET, ST_TAG } st_role;

#define ST_MAX_FIELDS 1024  /* fields per schema */
#define ST_MAX_CHAR 4096    /* N in char[N] */
#define ST_MAX_SYMS 255     /* symbols per enum */
#define ST_MAX_NAME 64      /* bytes in a field or symbol name */

typedef struct st_field {
    char *name;
    st_type type;
    st_role role;
    uint32_t width;  /* bytes in a row */
    uint32_t offset; /* byte offset in its row (tagset row or tag row) */
    uint32_t nsyms;  /* enum only */
    char **syms;     /* enum only: symbol names, index = stored value */
    bool index;      /* declared `index`: its blocks carry a bitmap index (store/bindex.h) */
    bool proj;       /* declared `projection` (a tag field): files carry their tags in its
                      * order beside them (store/proj.h) */
    bool carried;    /* a tag field the projection carries (it too) */
} st_field;

typedef struct st_schema {
    st_field *fields;  /* canonical order: keys, tagset fields, tag fields */
    uint32_t nfields;
    uint32_t nkeys;    /* fields[0 .. nkeys) are the key */
    uint32_t nrow;     /* fields[0 .. nrow) make the tagset row */
    uint32_t key_size; /* bytes of the key prefix of a tagset row */
    uint32_t row_size; /* bytes of a tagset row */
    uint32_t tag_size; /* bytes of a tag row (0 when there are no tag fields) */
    uint32_t nindex;   /* fields declared `index` */
} st_schema;

/* Parses schema text text[0 .. len). line and col give the position of
 * text[0] in its source, so errors read "5:12: expected ':' after 'ts'". */
st_schema *st_schema_parse(const char *text, size_t len, int line, int col, st_err *err);
void st_schema_free(st_schema *s);
/* The canonical text, one field per line; NULL when out of memory. */
char *st_schema_format(const st_schema *s, size_t *len);
bool st_schema_equal(const st_schema *a, const st_schema *b);

/* The number among the indexed fields of field f (declared `index`, in
 * canonical order), or -1 when it has no index. */
int st_schema_index_of(const st_schema *s, uint32_t f);
/* Whether a tag field is declared `index` (an order index: format version 4). */
bool st_schema_tag_index(const st_schema *s);

/* The tag field declared `projection` (format version 5), or -1. */
int st_schema_proj(const st_schema *s);

/* Field index by name, or -1. */
int st_schema_find(const st_schema *s, const char *name, size_t len);
/* Columns in a file of this schema: nfields, plus 1 for the tag count when
 * there are tag fields. */
uint32_t st_schema_ncols(const st_schema *s);
/* Column c's field; for the tag count column a u32 field named "#tags". */
const st_field *st_schema_col(const st_schema *s, uint32_t c);
/* True when column c holds one value per tag rather than per tagset. */
bool st_schema_col_is_tag(const st_schema *s, uint32_t c);

/* Compares the keys of two tagset rows (or bare keys): <0, 0, >0. Fields are
 * compared in order: integers and time numerically, floats in the total
 * order of st_field_order, bool and enum by stored value, char[N] bytewise. */
int st_schema_key_cmp(const st_schema *s, const void *a, const void *b);
/* Checks the bool and enum values of a tagset row (tag = false) or tag row. */
int st_schema_check_row(const st_schema *s, const void *row, bool tag, st_err *err);
/* Prints the key of a tagset row as "(onum=7325551212, ts=2026-12-02T13:05:00Z)". */
void st_schema_format_key(const st_schema *s, const void *row, char *buf, size_t size);

/* An order-preserving image of a value: a < b implies order(a) <= order(b).
 * Exact for integers, bool, enum and time; floats with -0 = +0 and NaN above
 * +inf; char[N] by its first 8 bytes. Zone maps store these. */
uint64_t st_field_order(const st_field *f, const void *val);
/* Prints a value (ISO-8601 UTC for time, the symbol for enum); returns the
 * length snprintf would. Enum values out of range print as "?N". */
int st_field_format(const st_field *f, const void *val, char *buf, size_t size);
/* "u8", "f64", "time"...: a scalar type's name in schema text; NULL for
 * char and enum, whose text names their width or symbols. */
const char *st_type_name(st_type t);
/* The enum symbol's index, or -1. */
int st_field_enum_find(const st_field *f, const char *sym, size_t len);

/* time: i64 seconds -> "2026-12-02T13:05:00Z". Years outside 0000..9999
 * print with a sign ("+292277026596-12-04T15:30:07Z"). st_fieldtext_time
 * (store/fieldtext.h) reads this back, and the shorter forms. */
int st_time_format(int64_t t, char *buf, size_t size);

#endif
