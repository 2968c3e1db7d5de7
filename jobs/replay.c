/* replay: what the journal's records mean: each applied on open through
 * the same checks and changes as the live path (model.c), and the whole
 * state written back as a snapshot when the journal is compacted. */
#include "config.h"
#include "jobs/replay.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/model.h"

#define MAX_FIELDS 16

/* ---- replay ------------------------------------------------------------- */

static int apply_record(jobs *js, char **f, int n)
{
    const char *t = f[0];
    const struct jm_adminop *op = jm_adminop(t);
    if (!strcmp(t, "submit") && n == 9) {
        job_spec s;
        if (job_spec_decode(f + 1, &s, js->err, sizeof js->err) < 0)
            return -1;
        int rc = jm_check_submit(js, &s, NULL) < 0 ? -1 : jm_submit_one(js, &s);
        job_spec_free(&s);
        return rc;
    }
    if (!strcmp(t, "limit") && n == 3)
        return jm_set_limit(js, f[1], f[2]);
    job *j = n >= 2 ? jm_find(js, f[1]) : NULL;
    if (!j)
        return n >= 2 ? -1 : job_fail(js, "empty record");
    if (op && n == 2)
        return op->check(js, j) < 0 ? -1 : (op->apply(js, j), 0);
    if (!strcmp(t, "state") && n == 9)
        return jm_do_state(js, j, f + 2);
    if (!strcmp(t, "start") && n == 4 && j->phase == P_PENDING) {
        jm_do_start(js, j, atoi(f[2]), atof(f[3]));
        return 0;
    }
    if (j->phase != P_RUNNING || atoi(f[2]) != j->runs)
        return job_fail(js, "record '%s' for job '%s' run %s, which is not running", t, f[1],
                    n > 2 ? f[2] : "?");
    if (!strcmp(t, "pid") && n == 4)
        j->pid = atoi(f[3]);
    else if (!strcmp(t, "end") && n == 5)
        jm_do_end(js, j, atoi(f[3]), atof(f[4]));
    else if ((!strcmp(t, "lost") || !strcmp(t, "unbegun")) && n == 3)
        jm_do_lost(js, j, t[0] == 'l');
    else
        return job_fail(js, "unknown record '%s' with %d fields", t, n);
    return 0;
}

int jreplay_apply(void *ctx, char *line, char *err, size_t errlen)
{
    jobs *js = ctx;
    char *f[MAX_FIELDS];
    int n = jw_split(line, f, MAX_FIELDS);
    if (n < 1 ? job_fail(js, "malformed record") : apply_record(js, f, n) < 0) {
        snprintf(err, errlen, "%s", js->err);
        return -1;
    }
    return 0;
}

/* ---- compaction --------------------------------------------------------- */

static int append_rec(jobs *js) { return jnl_append(js->jnl, js->rec.p, js->rec.len); }

static int snapshot_job(jobs *js, const job *j)
{
    job_spec s = jm_spec_of(j);
    char flags[8], *w = flags, rb[24], sb[24], pb[24], t1[32], t2[32];
    if (j->held)
        *w++ = 'h';
    if (j->forced)
        *w++ = 'f';
    if (j->deleted)
        *w++ = 'd';
    if (j->crashheld)
        *w++ = 'c';
    if (w == flags)
        *w++ = '-';
    *w = '\0';
    jw_clear(&js->rec);
    if (jw_field(&js->rec, "submit") < 0 || job_spec_encode(&s, &js->rec) < 0 ||
        append_rec(js) < 0)
        return -1;
    if (j->phase == P_PENDING && j->runs == 0 && !j->held && !j->forced && !j->deleted)
        return 0; /* as submitted */
    return jm_rec(js, "state", j->name, jm_phase_names[j->phase], jm_num(rb, j->runs), jm_num(sb, j->status),
               flags, jm_num(pb, j->pid), jm_tnum(t1, j->started), jm_tnum(t2, j->ended), NULL) < 0
               ? -1
               : append_rec(js);
}

static int snapshot_limits(jobs *js)
{
    char b[32];
    for (size_t i = 0; i < js->nres; i++)
        if (js->rv[i]->limit != JOB_UNLIMITED &&
            (jm_rec(js, "limit", js->rv[i]->name, jm_num(b, js->rv[i]->limit), NULL) < 0 ||
             append_rec(js) < 0))
            return -1;
    if (js->maxjobs != LONG_MAX &&
        (jm_rec(js, "limit", "jobs", jm_num(b, js->maxjobs), NULL) < 0 || append_rec(js) < 0))
        return -1;
    snprintf(b, sizeof b, "%g", js->maxload);
    if (js->maxload > 0 && (jm_rec(js, "limit", "load", b, NULL) < 0 || append_rec(js) < 0))
        return -1;
    return 0;
}

int jreplay_compact(jobs *js)
{
    if (jnl_snapshot_begin(js->jnl) < 0)
        return job_fail(js, "%s", jnl_error(js->jnl));
    int rc = 0;
    for (size_t i = 0; i < js->n && rc == 0; i++)
        rc = snapshot_job(js, js->v[i]);
    if (rc == 0)
        rc = snapshot_limits(js);
    if (rc < 0) {
        jnl_snapshot_abort(js->jnl);
        return jm_oom(js);
    }
    return jnl_snapshot_commit(js->jnl) < 0 ? job_fail(js, "%s", jnl_error(js->jnl)) : 0;
}

