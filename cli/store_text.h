/* store_text: the tab-separated record text `comb store load` reads.
 *
 * One record per line, values separated by tabs, in the schema's canonical
 * field order (as `comb store info` prints it): the key and tagset fields,
 * then the tag fields. A line with only the key and tagset fields is a
 * tagset without a tag (store/record.h's marker). Blank lines and lines
 * starting with '#' are skipped. Values are read as read_text reads them
 * (store/fieldtext.h); a char[N] value cannot hold a tab (there are no
 * escapes). With a header, the file's first line (after blank and '#'
 * lines) names its columns instead: tab-separated field names, each once,
 * in any order, every key field among them; every record then has those
 * columns, and is a tag when they name a tag field. Deliberately minimal: the language's read_text is the general
 * reader. docs/STORE.md has examples. */
#ifndef COMB_CLI_STORE_TEXT_H
#define COMB_CLI_STORE_TEXT_H

#include <stdbool.h>

#include "store/err.h"
#include "store/load.h"

/* Adds every record of the file at path ("-": standard input) to l, the
 * first line naming the columns when header. Errors name the file, line
 * and field. */
int store_text_load(st_load *l, const char *path, bool header, st_err *err);

#endif
