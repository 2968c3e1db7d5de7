/* demogen: synthetic Gecko-like calls for demos and benchmarks, deterministic
 * for a seed.
 *
 * A call is a tagset of the schema demo_schema: key (onum, ts, cid),
 * tagset state, and one tag per system that saw it:
 *   onum   the calling number: 60% from the 732-555 exchange (7325551212
 *          is the busiest line, later lines ever rarer), the rest from six
 *          area codes, any exchange 200..999;
 *   ts     a week from 2026-12-01T00:00:00Z, busier by day than by night;
 *   cid    a random call id;
 *   tags   SWITCH, then MEDIATE 90%, RATE 80% of those, BILL 75% of rated
 *          calls, INVOICE 60% of billed ones; RICS (15%) and AUDIT (5%) on
 *          the side; 1% of calls have no tags yet; at most ST_GEN_MAX_TAGS;
 *   bsid   the line's billing system (1..64) on 85% of tags, else 1..1000;
 *   dnum   the dialled number, ten digits (30% start 20155), on every tag;
 *   status 0 on 92% of tags, 1 on 5%, 2..9 on the rest;
 *   dur    the call's seconds (0 when unanswered, 10%; else about
 *          exponential, mean 180, at most 4 h), on every tag;
 *   state  closed or billed when invoiced (70/30), billed when billed,
 *          else open.
 * The numbers come from splitmix64 and integer arithmetic only, so a seed
 * gives the same calls on every host. */
#ifndef COMB_CLI_DEMOGEN_H
#define COMB_CLI_DEMOGEN_H

#include <stdint.h>

#include "store/err.h"
#include "store/schema.h"

#define ST_GEN_MAX_TAGS 7

extern const char demo_schema[];
#define ST_GEN_PARTKEY "onum"

typedef struct demo_gen {
    uint64_t state;
    int64_t t0;
    /* Field offsets in the schema the rows are built for. */
    uint32_t onum, ts, cid, state_f, sys, bsid, dnum, status, dur;
    uint32_t row_size, tag_size;
    uint8_t sysv[7], statev[3]; /* enum values of the systems and states */
} demo_gen;

/* Starts a generator for rows of schema s, which must have demo_schema's
 * fields with their types (in any order, with other fields zeroed). */
int demo_init(demo_gen *g, const st_schema *s, uint64_t seed, st_err *err);
/* The next call: its tagset row (row_size bytes) and tag rows (room for
 * ST_GEN_MAX_TAGS x tag_size bytes). Returns the number of tags. */
uint32_t demo_next(demo_gen *g, unsigned char *row, unsigned char *tags);

#endif
