/* table: results as text: rows (an array of maps) as an aligned table, TSV,
 * CSV or JSON; the prompt's .mode and the batch CLI's --format. */
#ifndef COMB_TABLE_H
#define COMB_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include "vm/vm.h"

/* LINE: each row as `name = value` lines (sqlite3's .mode line, psql's \x). */
typedef enum { TABLE_ALIGNED, TABLE_TSV, TABLE_CSV, TABLE_JSON, TABLE_LINE } TableFormat;

/* The format called name ("table", "tsv", "csv", "json"), or -1. */
int table_format_parse(const char *name);
const char *table_format_name(TableFormat f);

/* The names, for messages and completion: "table|tsv|csv|json|line". */
extern const char *const table_format_names[];

/* Whether v is rows: a non-empty array whose items are all maps. */
bool table_is_rows(Value v);

/* Appends v to sb in format f. Rows get a header of the keys (in the order
 * they first appear) and one line per row; any other value is its text (as
 * a literal in the aligned format, plain in TSV and CSV) or its JSON.
 * bold: the aligned header in bold (a terminal with colour).
 * Raises in the VM (out of memory, a value nested too deeply for JSON):
 * call it protected. */
void table_render(VM *vm, VStrBuf *sb, Value v, TableFormat f, bool bold);

/* table_render into a new string, run protected: the text, or NULL with
 * the error in the VM (vm_print_error). */
VStr *table_text(VM *vm, Value v, TableFormat f, bool bold);

/* Writes v to out in format f as table_text would, but the rows of a query
 * that streams (vm_query_streams) in TSV, CSV or JSON as they come, a line
 * at a time (the aligned table needs every row to lay them out): the
 * header is the first row's keys (a scan's rows all have them). Run
 * protected: false with the error in the VM; what was written stays. */
bool table_stream(VM *vm, Value v, TableFormat f, FILE *out);

/* Lets `| write(path)` write .tsv, .csv and .json files in these formats
 * (vm_text_writer). */
void table_register(void);

/* The columns text takes on a terminal: UTF-8 code points, each one column
 * (wide and combining characters are not told apart). */
size_t table_text_width(const char *s, size_t len);

#endif
