/* demogen: synthetic Gecko-like calls (key onum, ts, cid; tags per system). */
#include "config.h"
#include "cli/demogen.h"

#include <stdio.h>
#include <string.h>

const char demo_schema[] =
    "key onum: u64\n"
    "key ts: time\n"
    "key cid: u32\n"
    "tagset state: enum(open, billed, closed)\n"
    "tag sys: enum(RICS, BILL, SWITCH, MEDIATE, RATE, INVOICE, AUDIT)\n"
    "tag bsid: u16\n"
    "tag dnum: char[16]\n"
    "tag status: u8\n"
    "tag dur: u32\n";

enum { RICS, BILL, SWITCH, MEDIATE, RATE, INVOICE, AUDIT, NSYS };
static const char *const sys_names[NSYS] = {"RICS", "BILL", "SWITCH", "MEDIATE",
                                            "RATE", "INVOICE", "AUDIT"};
enum { OPEN, BILLED, CLOSED, NSTATE };
static const char *const state_names[NSTATE] = {"open", "billed", "closed"};

static const unsigned area_codes[] = {908, 201, 973, 609, 856, 212};
#define NAREAS (sizeof area_codes / sizeof area_codes[0])
/* Relative call volume by hour of day (UTC, as the week is generated). */
static const unsigned hour_weight[24] = {2, 1, 1, 1, 1, 2, 4, 7, 10, 12, 13, 13,
                                         12, 12, 13, 13, 12, 11, 10, 9, 8, 6, 4, 3};
#define T0 INT64_C(1796083200) /* 2026-12-01T00:00:00Z */

static uint64_t next64(demo_gen *g)
{
    uint64_t z = (g->state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t below(demo_gen *g, uint64_t n) { return next64(g) % n; }
static int percent(demo_gen *g, unsigned p) { return below(g, 100) < p; }

/* The field's offset, after checking its role and type. */
static int field(const st_schema *s, const char *name, st_role role, st_type type, uint32_t width,
                 uint32_t *off, st_err *err)
{
    int i = st_schema_find(s, name, strlen(name));
    if (i < 0 || s->fields[i].role != role || s->fields[i].type != type ||
        s->fields[i].width != width)
        return st_err_set(err, ST_EINPUT, "gen: the schema needs the field '%s' as in:\n%s", name,
                          demo_schema);
    *off = s->fields[i].offset;
    return 0;
}

/* Looks up each symbol's stored value. */
static int symbols(const st_schema *s, const char *name, const char *const *syms, unsigned n,
                   uint8_t *out, st_err *err)
{
    const st_field *f = &s->fields[st_schema_find(s, name, strlen(name))];
    for (unsigned k = 0; k < n; k++) {
        int v = st_field_enum_find(f, syms[k], strlen(syms[k]));
        if (v < 0)
            return st_err_set(err, ST_EINPUT, "gen: enum field '%s' has no symbol %s", name,
                              syms[k]);
        out[k] = (uint8_t)v;
    }
    return 0;
}

int demo_init(demo_gen *g, const st_schema *s, uint64_t seed, st_err *err)
{
    memset(g, 0, sizeof *g);
    g->state = seed;
    g->row_size = s->row_size;
    g->tag_size = s->tag_size;
    if (field(s, "onum", ST_KEY, ST_U64, 8, &g->onum, err) < 0 ||
        field(s, "ts", ST_KEY, ST_TIME, 8, &g->ts, err) < 0 ||
        field(s, "cid", ST_KEY, ST_U32, 4, &g->cid, err) < 0 ||
        field(s, "state", ST_TAGSET, ST_ENUM, 1, &g->state_f, err) < 0 ||
        field(s, "sys", ST_TAG, ST_ENUM, 1, &g->sys, err) < 0 ||
        field(s, "bsid", ST_TAG, ST_U16, 2, &g->bsid, err) < 0 ||
        field(s, "dnum", ST_TAG, ST_CHAR, 16, &g->dnum, err) < 0 ||
        field(s, "status", ST_TAG, ST_U8, 1, &g->status, err) < 0 ||
        field(s, "dur", ST_TAG, ST_U32, 4, &g->dur, err) < 0)
        return -1;
    return symbols(s, "sys", sys_names, NSYS, g->sysv, err) < 0 ||
                   symbols(s, "state", state_names, NSTATE, g->statev, err) < 0
               ? -1
               : 0;
}

static uint64_t gen_onum(demo_gen *g)
{
    if (percent(g, 60)) {
        /* A product of two uniforms: line 1212 busiest, later lines rarer. */
        uint64_t skew = below(g, 10000) * below(g, 10000) / 10000;
        return UINT64_C(7325550000) + (1212 + skew) % 10000;
    }
    uint64_t npa = area_codes[below(g, NAREAS)], nxx = 200 + below(g, 800);
    return npa * 10000000 + nxx * 10000 + below(g, 10000);
}

static int64_t gen_ts(demo_gen *g)
{
    unsigned total = 0, pick, h = 0;
    for (unsigned i = 0; i < 24; i++)
        total += hour_weight[i];
    pick = (unsigned)below(g, total);
    while (pick >= hour_weight[h])
        pick -= hour_weight[h++];
    return T0 + (int64_t)below(g, 7) * 86400 + (int64_t)h * 3600 + (int64_t)below(g, 3600);
}

/* Seconds: 0 when unanswered, else a piecewise-uniform stand-in for an
 * exponential of mean 180 (each 125 s halves the odds), capped at 4 h. */
static uint32_t gen_dur(demo_gen *g)
{
    if (percent(g, 10))
        return 0;
    uint64_t r = next64(g) | UINT64_C(1) << 63;
    unsigned halvings = (unsigned)__builtin_ctzll(r);
    uint64_t d = 1 + halvings * 125 + below(g, 125);
    return (uint32_t)(d < 14400 ? d : 14400);
}

/* The systems that saw the call, in the order they saw it. */
static unsigned gen_path(demo_gen *g, int *path)
{
    unsigned n = 0;
    if (percent(g, 1))
        return 0;
    path[n++] = SWITCH;
    if (percent(g, 15))
        path[n++] = RICS;
    if (percent(g, 90)) {
        path[n++] = MEDIATE;
        if (percent(g, 80)) {
            path[n++] = RATE;
            if (percent(g, 75)) {
                path[n++] = BILL;
                if (percent(g, 60))
                    path[n++] = INVOICE;
            }
        }
    }
    if (percent(g, 5))
        path[n++] = AUDIT;
    return n;
}

uint32_t demo_next(demo_gen *g, unsigned char *row, unsigned char *tags)
{
    uint64_t onum = gen_onum(g);
    int64_t ts = gen_ts(g);
    uint32_t cid = (uint32_t)next64(g), dur = gen_dur(g);
    char dnum[17];
    if (percent(g, 30))
        snprintf(dnum, sizeof dnum, "20155%05u", (unsigned)below(g, 100000));
    else
        snprintf(dnum, sizeof dnum, "%u%03u%04u", area_codes[below(g, NAREAS)],
                 (unsigned)(200 + below(g, 800)), (unsigned)below(g, 10000));
    uint16_t home = (uint16_t)(1 + (onum * UINT64_C(2654435761) >> 8) % 64);
    int path[ST_GEN_MAX_TAGS];
    unsigned n = gen_path(g, path);
    int state = OPEN;
    memset(tags, 0, (size_t)n * g->tag_size);
    for (unsigned i = 0; i < n; i++) {
        unsigned char *t = tags + (size_t)i * g->tag_size;
        uint16_t bsid = percent(g, 85) ? home : (uint16_t)(1 + below(g, 1000));
        uint64_t r = below(g, 100);
        uint8_t status = r < 92 ? 0 : r < 97 ? 1 : (uint8_t)(2 + below(g, 8));
        t[g->sys] = g->sysv[path[i]];
        memcpy(t + g->bsid, &bsid, 2);
        memcpy(t + g->dnum, dnum, strlen(dnum));
        t[g->status] = status;
        memcpy(t + g->dur, &dur, 4);
        if (path[i] == INVOICE)
            state = percent(g, 70) ? CLOSED : BILLED;
        else if (path[i] == BILL)
            state = BILLED;
    }
    memset(row, 0, g->row_size);
    memcpy(row + g->onum, &onum, 8);
    memcpy(row + g->ts, &ts, 8);
    memcpy(row + g->cid, &cid, 4);
    row[g->state_f] = g->statev[state];
    return n;
}
