/* gen_store: helpers for the store's unit tests: random schemas and tagsets,
 * scratch directories.
 *
 * A seeded generator (splitmix64) so a failing case can be replayed from its
 * seed. Texts and rows are allocated with mem_alloc; the caller frees them. */
#ifndef COMB_TESTS_GEN_STORE_H
#define COMB_TESTS_GEN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "store/block.h"
#include "store/schema.h"

typedef struct gen {
    uint64_t s;
} gen;

uint64_t gen_u64(gen *g);
/* A value in [0, n). */
uint64_t gen_below(gen *g, uint64_t n);

/* Random schema text: 1..nmax fields of every type and role (at least one
 * key; no tag fields when tags == 0), in shuffled declaration order, with
 * comments and ';' separators mixed in. Returns a NUL-terminated text. */
char *gen_schema_text(gen *g, unsigned nmax, int tags);
/* Parses gen_schema_text's output; fails the test on error. */
st_schema *gen_schema(gen *g, unsigned nmax, int tags);

/* Fills the fields [from, to) of a row with random values of each type,
 * biased toward extremes: 0, -1, INT64_MIN/MAX, NaN, +-inf, -0, empty and
 * full-width strings. Bool and enum values stay valid. */
void gen_fields(gen *g, const st_schema *s, uint32_t from, uint32_t to, unsigned char *row);

/* Tagsets as a test model: rows[i * row_size] with tags
 * tags[tag_start[i] * tag_size .. tag_start[i + 1] * tag_size). */
typedef struct gen_tagsets {
    uint32_t n;
    unsigned char *rows;
    uint64_t *tag_start; /* n + 1 */
    unsigned char *tags;
} gen_tagsets;

/* n random tagsets, sorted by key when sorted is set; each has up to
 * maxtags tags (none when the schema has no tag fields), often zero. */
void gen_make_tagsets(gen *g, const st_schema *s, uint32_t n, uint32_t maxtags, int sorted,
                      gen_tagsets *t);
void gen_free_tagsets(const st_schema *s, gen_tagsets *t);
uint32_t gen_ntags(const gen_tagsets *t, uint32_t i);
const unsigned char *gen_row(const st_schema *s, const gen_tagsets *t, uint32_t i);
const unsigned char *gen_tags(const st_schema *s, const gen_tagsets *t, uint32_t i);
/* Fields 0 .. 3 of row i of an event-like schema (key run: u32, key event:
 * u64, a char[36] reference, then a field of 8 bytes or fewer): run, event,
 * a reference the same for 50 consecutive i, and last's low bytes. */
void gen_event_row(const st_schema *s, uint32_t i, uint32_t run, uint64_t event, uint64_t last,
                   unsigned char *row);
/* Checks batch rows [b->first .. ntagsets) against model tagsets from i0 on,
 * for every column the batch decoded; returns the model index after them. */
uint32_t gen_check_batch(const st_schema *s, const gen_tagsets *t, uint32_t i0, const st_batch *b);

/* A fresh directory under tests/tmp/ of the build tree; gen_rmdir removes it
 * and the files in it. gen_count_temps counts writer temp files
 * ("*.tmp-*") left in it. Paths are static buffers. */
const char *gen_tmpdir(const char *name);
/* A store made in path (1 x 1 partitions; key onum: u64, tagset dur: u32),
 * and a commit of nothing to a store: a new generation, its counter moved. */
void gen_store_tiny(const char *path);
void gen_store_commit(const char *path);
void gen_rmdir(const char *dir);
int gen_count_temps(const char *dir);
/* A file's bytes (free with mem_free(p, *len + 1)), or NULL if it does not exist. */
unsigned char *gen_slurp(const char *path, size_t *len);

#endif
