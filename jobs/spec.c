/* spec: a job's spec and info as escaped fields, the form they take in
 * journal records, control requests and the info text. */
#include "config.h"
#include "jobs/jobs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/mem.h"

static int join_names(jw_buf *b, char *const *names, size_t n)
{
    jw_clear(b);
    for (size_t i = 0; i < n; i++)
        if ((i && jw_puts(b, ",") < 0) || jw_puts(b, names[i]) < 0)
            return -1;
    return jw_puts(b, "");
}

/* The spec fields of a submit record or request: NAME PRIO FLAGS KIND DIR
 * AFTER USES TEXT (lists comma-separated, flags r=rerun h=held or "-"). */
int job_spec_encode(const job_spec *s, jw_buf *out)
{
    char p[24], flags[4];
    jw_buf after = {0}, uses = {0};
    snprintf(p, sizeof p, "%d", s->prio);
    snprintf(flags, sizeof flags, "%s%s", s->rerun ? "r" : "", s->held ? "h" : "");
    int rc = join_names(&after, (char *const *)s->after, s->nafter) < 0 ||
                     join_names(&uses, (char *const *)s->uses, s->nuses) < 0 ||
                     jw_field(out, s->name) < 0 || jw_field(out, p) < 0 ||
                     jw_field(out, flags[0] ? flags : "-") < 0 ||
                     jw_field(out, s->kind == JOB_COMB ? "comb" : "sh") < 0 ||
                     jw_field(out, s->dir ? s->dir : "") < 0 || jw_field(out, after.p) < 0 ||
                     jw_field(out, uses.p) < 0 || jw_field(out, s->text) < 0
                 ? -1
                 : 0;
    jw_free(&after);
    jw_free(&uses);
    return rc;
}

/* Decodes the 8 spec fields of a submit record or request. The after and
 * uses arrays are allocated in one block: free it with job_spec_free. */
int job_spec_decode(char **f, job_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    char *end;
    long prio = strtol(f[1], &end, 10);
    if (end == f[1] || *end || prio < INT_MIN || prio > INT_MAX) {
        snprintf(err, errlen, "bad priority '%s'", f[1]);
        return -1;
    }
    if (strcmp(f[3], "sh") && strcmp(f[3], "comb")) {
        snprintf(err, errlen, "bad job kind '%s' (sh or comb)", f[3]);
        return -1;
    }
    size_t na = *f[5] != '\0', nu = *f[6] != '\0';
    for (char *p = f[5]; *p; p++)
        na += *p == ',';
    for (char *p = f[6]; *p; p++)
        nu += *p == ',';
    const char **v = mem_calloc(na + nu + 1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t k = 0;
    for (int l = 5; l <= 6; l++)
        for (char *p = f[l]; *p;) {
            v[k++] = p;
            p += strcspn(p, ",");
            if (*p)
                *p++ = '\0';
        }
    s->name = f[0];
    s->prio = (int)prio;
    s->rerun = strchr(f[2], 'r') != NULL;
    s->held = strchr(f[2], 'h') != NULL;
    s->kind = f[3][0] == 'c' ? JOB_COMB : JOB_SHELL;
    s->dir = *f[4] ? f[4] : NULL;
    s->after = v;
    s->nafter = na;
    s->uses = v + na;
    s->nuses = nu;
    s->text = f[7];
    return 0;
}

void job_spec_free(job_spec *s)
{
    mem_free((void *)s->after, (s->nafter + s->nuses + 1) * sizeof *s->after);
    s->after = s->uses = NULL;
}

/* The fields of an info text's job line after "job" (see job_info_text). */
int job_info_decode(char **f, int n, job_info *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n != JOB_INFO_FIELDS) {
        snprintf(err, errlen, "bad job line: %d fields, expected %d", n, JOB_INFO_FIELDS);
        return -1;
    }
    char **g = f + JOB_SPEC_FIELDS;
    int state = -1;
    for (int s = 0; s <= JOB_DELETED; s++)
        if (!strcmp(g[0], job_state_name((enum job_state)s)))
            state = s;
    if (state < 0) {
        snprintf(err, errlen, "bad job state '%s'", g[0]);
        return -1;
    }
    if (job_spec_decode(f, &out->spec, err, errlen) < 0)
        return -1;
    out->state = (enum job_state)state;
    out->cause = *g[1] ? g[1] : NULL;
    out->cause_deleted = atoi(g[2]);
    out->runs = atoi(g[3]);
    out->status = atoi(g[4]);
    out->pid = atol(g[5]);
    out->started = atof(g[6]);
    out->ended = atof(g[7]);
    return 0;
}
