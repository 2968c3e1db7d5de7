/* test_merge: the tagset merge keeps order, applies each policy as a brute
 * force model says, drops exactly the tagsets asked and refuses bad input. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "store/mem.h"
#include "store/merge.h"
#include "tests/unit/records.h"

#define MAXREC 4096

typedef struct recs {
    unsigned char r[MAXREC][RS];
    size_t n, pos;
    size_t ntagsets;
} recs;

static uint64_t key_of(const unsigned char *rec)
{
    return get_be(rec);
}

static void add_rec(recs *a, uint64_t key, uint64_t tag)
{
    assert_true(a->n < MAXREC);
    make_rec(a->r[a->n++], key, tag);
}

static int array_next(void *self, const void **rec, st_err *err)
{
    (void)err;
    recs *a = self;
    if (a->pos == a->n)
        return 0;
    *rec = a->r[a->pos++];
    return 1;
}

/* Collects tagsets, checking each shares one key and keys strictly rise. */
static int array_put(void *self, const st_tagset *ts, st_err *err)
{
    (void)err;
    recs *a = self;
    assert_true(ts->n > 0);
    if (a->n > 0)
        assert_true(key_cmp(a->r[a->n - 1], ts->recs, NULL) < 0);
    for (size_t i = 0; i < ts->n; i++) {
        assert_int_equal(key_cmp(ts->recs, ts->recs + i * RS, NULL), 0);
        assert_true(a->n < MAXREC);
        memcpy(a->r[a->n++], ts->recs + i * RS, RS);
    }
    a->ntagsets++;
    return 0;
}

static recs old_in, add_in, out, removed, discarded;

static void reset(void)
{
    memset(&old_in, 0, sizeof old_in);
    memset(&add_in, 0, sizeof add_in);
    memset(&out, 0, sizeof out);
    memset(&removed, 0, sizeof removed);
    memset(&discarded, 0, sizeof discarded);
}

static st_merge_spec spec_for(st_merge_policy policy, void *ctx)
{
    return (st_merge_spec){
        .rec_size = RS,
        .keycmp = key_cmp,
        .old = {array_next, &old_in, "old.ts"},
        .add = {array_next, &add_in, "adds.ts"},
        .policy = policy,
        .policy_ctx = ctx,
        .out = {array_put, &out},
        .removed = {array_put, &removed},
        .discarded = {array_put, &discarded},
    };
}

/* Orders whole records: key, then id. */
static int whole_cmp(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    return memcmp(a, b, RS);
}

/* The action for a key: a fixed function of it, so the model can repeat it. */
static st_merge_action action_for(uint64_t key)
{
    return (st_merge_action)((key * 2654435761u >> 7) % 4);
}

static st_merge_action hashed_policy(const st_tagset *old, const st_tagset *add, void *ctx,
                                     st_err *err)
{
    (void)ctx, (void)err;
    return action_for(key_of(old->n ? old->recs : add->recs));
}

static uint64_t rng = 1;

static uint64_t next_rand(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng >> 33;
}

/* Keys below nkeys, each present with probability 1/2 and 1..3 records. */
static void random_stream(recs *a, uint64_t nkeys, uint64_t tagbase)
{
    for (uint64_t k = 0; k < nkeys; k++) {
        if (next_rand() % 2)
            continue;
        uint64_t n = 1 + next_rand() % 3;
        for (uint64_t i = 0; i < n; i++)
            add_rec(a, k, tagbase + a->n);
    }
}

/* Copies a's records with key k into dst (if not NULL); returns how many. */
static size_t gather(const recs *a, uint64_t k, recs *dst)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (key_of(a->r[i]) == k) {
            if (dst)
                memcpy(dst->r[dst->n++], a->r[i], RS);
            n++;
        }
    }
    return n;
}

/* The model: key by key, what each sink should hold. */
static void model(uint64_t nkeys, recs *mout, recs *mrem, recs *mdisc)
{
    for (uint64_t k = 0; k < nkeys; k++) {
        size_t no = gather(&old_in, k, NULL), na = gather(&add_in, k, NULL);
        if (!no && !na)
            continue;
        st_merge_action act = action_for(k);
        recs *to_old = mout, *to_add = mout;
        if (act == ST_MERGE_REMOVE)
            to_old = to_add = mrem;
        else if (act == ST_MERGE_KEEP_OLD && no)
            to_add = mdisc;
        else if (act == ST_MERGE_TAKE_ADD && na)
            to_old = mdisc;
        gather(&old_in, k, to_old);
        gather(&add_in, k, to_add);
    }
}

static void assert_same_recs(const recs *a, const recs *b)
{
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->r, b->r, a->n * RS);
}

static void random_inputs_match_the_model(void **state)
{
    (void)state;
    static recs mout, mrem, mdisc;
    for (int iter = 0; iter < 300; iter++) {
        reset();
        uint64_t nkeys = next_rand() % 300;
        random_stream(&old_in, nkeys, 0);
        random_stream(&add_in, nkeys, 1u << 20);
        memset(&mout, 0, sizeof mout);
        memset(&mrem, 0, sizeof mrem);
        memset(&mdisc, 0, sizeof mdisc);
        model(nkeys, &mout, &mrem, &mdisc);

        st_merge_spec sp = spec_for(hashed_policy, NULL);
        st_merge_stats st;
        st_err err;
        assert_int_equal(st_merge(&sp, &st, &err), 0);
        /* Per key: old's records, then add's, in each sink. */
        assert_same_recs(&out, &mout);
        assert_same_recs(&removed, &mrem);
        assert_same_recs(&discarded, &mdisc);
        assert_int_equal(st.old_recs, old_in.n);
        assert_int_equal(st.add_recs, add_in.n);
        assert_int_equal(st.out_recs, out.n);
        assert_int_equal(st.removed_recs, removed.n);
        assert_int_equal(st.removed_tagsets, removed.ntagsets);
        assert_int_equal(st.out_tagsets, out.ntagsets);
        assert_int_equal(st.old_recs + st.add_recs,
                         st.out_recs + st.removed_recs + st.discarded_recs);
    }
}

/* The partition update's pipeline: the day's tags in any order, sorted in
 * small parcels, merged into the old tagsets: the same as the model. */
static void sorted_adds_merge_like_the_model(void **state)
{
    (void)state;
    static recs mout, mrem, mdisc, shuffled;
    reset();
    memset(&mout, 0, sizeof mout);
    memset(&mrem, 0, sizeof mrem);
    memset(&mdisc, 0, sizeof mdisc);
    random_stream(&old_in, 600, 0);
    random_stream(&add_in, 600, 1u << 20);
    model(600, &mout, &mrem, &mdisc);
    /* Shuffle the adds; sorting by (key, id) restores add_in's order, as
     * ids rise with position in it. */
    shuffled = add_in;
    for (size_t i = shuffled.n; i > 1; i--) {
        size_t j = next_rand() % i;
        unsigned char t[RS];
        memcpy(t, shuffled.r[i - 1], RS);
        memcpy(shuffled.r[i - 1], shuffled.r[j], RS);
        memcpy(shuffled.r[j], t, RS);
    }
    st_err err;
    st_sort_opts o = {.parcel_bytes = 16 << 10, .threads = 1};
    st_sorter *srt = st_sorter_new(RS, whole_cmp, NULL, &o, &err);
    assert_non_null(srt);
    for (size_t i = 0; i < shuffled.n; i++)
        assert_int_equal(st_sorter_add(srt, shuffled.r[i], &err), 0);
    assert_int_equal(st_sorter_finish(srt, &err), 0);
    st_merge_spec sp = spec_for(hashed_policy, NULL);
    sp.add = st_source_of_sorter(srt, "sorted adds");
    assert_int_equal(st_merge(&sp, NULL, &err), 0);
    st_sort_stats st;
    st_sorter_stats(srt, &st);
    assert_true(st.runs > 1);
    st_sorter_free(srt);
    assert_same_recs(&out, &mout);
    assert_same_recs(&removed, &mrem);
    assert_same_recs(&discarded, &mdisc);
}

static void combine_is_the_default_and_appends_add_tags(void **state)
{
    (void)state;
    reset();
    add_rec(&old_in, 1, 10);
    add_rec(&old_in, 1, 11);
    add_rec(&old_in, 3, 30);
    add_rec(&add_in, 1, 12);
    add_rec(&add_in, 2, 20);
    st_merge_spec sp = spec_for(NULL, NULL); /* default: combine */
    st_err err;
    assert_int_equal(st_merge(&sp, NULL, &err), 0);
    recs want = {0};
    add_rec(&want, 1, 10);
    add_rec(&want, 1, 11);
    add_rec(&want, 1, 12);
    add_rec(&want, 2, 20);
    add_rec(&want, 3, 30);
    assert_same_recs(&out, &want);
    assert_int_equal(out.ntagsets, 3);
}

/* A policy that always answers *ctx. */
static st_merge_action constant(const st_tagset *old, const st_tagset *add, void *ctx,
                                st_err *err)
{
    (void)old, (void)add, (void)err;
    return *(const st_merge_action *)ctx;
}

static void replace_supersedes_old(void **state)
{
    (void)state;
    reset();
    add_rec(&old_in, 1, 10);
    add_rec(&old_in, 1, 11);
    add_rec(&old_in, 3, 30);
    add_rec(&add_in, 1, 12);
    st_merge_action take = ST_MERGE_TAKE_ADD;
    st_merge_spec sp = spec_for(constant, &take);
    st_merge_stats st;
    st_err err;
    assert_int_equal(st_merge(&sp, &st, &err), 0);
    recs want = {0};
    add_rec(&want, 1, 12);
    add_rec(&want, 3, 30);
    assert_same_recs(&out, &want);
    assert_int_equal(discarded.n, 2);
    assert_int_equal(st.discarded_tagsets, 1);
    assert_int_equal(removed.n, 0);
}

/* Age-off: tagsets whose key (a time) is before the cutoff leave the store. */
static st_merge_action age_off(const st_tagset *old, const st_tagset *add, void *ctx,
                               st_err *err)
{
    (void)err;
    uint64_t cutoff = *(const uint64_t *)ctx;
    return key_of(old->n ? old->recs : add->recs) < cutoff ? ST_MERGE_REMOVE
                                                          : ST_MERGE_COMBINE;
}

static void age_off_removes_exactly_the_old_keys(void **state)
{
    (void)state;
    reset();
    for (uint64_t k = 0; k < 1000; k++) {
        add_rec(&old_in, 2 * k, k);
        if (k % 3 == 0)
            add_rec(&old_in, 2 * k, k + 5000);
        if (k % 7 == 0)
            add_rec(&add_in, 2 * k + (k % 2), k + 10000);
    }
    uint64_t cutoff = 700;
    st_merge_spec sp = spec_for(age_off, &cutoff);
    sp.discarded.put = NULL;
    st_merge_stats st;
    st_err err;
    assert_int_equal(st_merge(&sp, &st, &err), 0);
    for (size_t i = 0; i < removed.n; i++)
        assert_true(key_of(removed.r[i]) < cutoff);
    for (size_t i = 0; i < out.n; i++)
        assert_true(key_of(out.r[i]) >= cutoff);
    assert_int_equal(out.n + removed.n, old_in.n + add_in.n);
    assert_int_equal(st.removed_tagsets, removed.ntagsets);
    /* Keys 0, 2, ..., 698 of old, plus the odd add keys below the cutoff. */
    size_t odd_adds = 0;
    for (uint64_t k = 0; k < 1000; k += 7)
        odd_adds += k % 2 && 2 * k + 1 < cutoff;
    assert_int_equal(removed.ntagsets, 350 + odd_adds);
}

static void out_of_order_input_is_refused(void **state)
{
    (void)state;
    const uint64_t keys[][4] = {{1, 3, 2, 4}, {5, 5, 4, 6}};
    for (int side = 0; side < 2; side++) {
        for (int k = 0; k < 2; k++) {
            reset();
            recs *bad = side ? &add_in : &old_in;
            for (int i = 0; i < 4; i++)
                add_rec(bad, keys[k][i], (uint64_t)i);
            st_merge_spec sp = spec_for(NULL, NULL);
            st_err err;
            assert_int_equal(st_merge(&sp, NULL, &err), -1);
            assert_int_equal(err.code, ST_EINPUT);
            assert_non_null(strstr(err.msg, side ? "adds.ts" : "old.ts"));
            assert_non_null(strstr(err.msg, "record 3 is out of order"));
        }
    }
}

static int failing_next(void *self, const void **rec, st_err *err)
{
    recs *a = self;
    if (a->pos == 2)
        return st_err_set(err, ST_ECORRUPT, "read old.ts block 7: checksum mismatch");
    return array_next(self, rec, err);
}

static int failing_put(void *self, const st_tagset *ts, st_err *err)
{
    (void)self, (void)ts;
    return st_err_set(err, ST_EIO, "write new.ts: No space left on device");
}

static void errors_of_sources_sinks_and_policy_stop_it(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    st_err err;
    for (int i = 0; i < 3; i++) {
        reset();
        for (uint64_t k = 0; k < 5; k++)
            add_rec(&old_in, k, k);
        st_merge_action give_up = ST_MERGE_FAIL;
        st_merge_spec sp = spec_for(i == 2 ? constant : NULL, &give_up);
        if (i == 0)
            sp.old.next = failing_next;
        if (i == 1)
            sp.out.put = failing_put;
        assert_int_equal(st_merge(&sp, NULL, &err), -1);
        const char *want[] = {"block 7: checksum", "write new.ts", "policy stopped"};
        assert_non_null(strstr(err.msg, want[i]));
        assert_int_equal(mem_in_use(), base);
    }
}

static void big_tagsets_and_allocation_failures(void **state)
{
    (void)state;
    size_t base = mem_in_use();
    int ok = 0;
    for (unsigned long nth = 1; !ok; nth++) {
        reset();
        for (uint64_t i = 0; i < 3000; i++)
            add_rec(&old_in, 7, i);
        add_rec(&add_in, 7, 99999);
        st_merge_spec sp = spec_for(NULL, NULL);
        st_err err;
        mem_fail_after(nth);
        int rc = st_merge(&sp, NULL, &err);
        mem_fail_after(0);
        if (rc == 0) {
            ok = 1;
            assert_int_equal(out.n, 3001);
            assert_int_equal(out.ntagsets, 1);
        } else {
            assert_int_equal(err.code, ST_ENOMEM);
        }
        assert_int_equal(mem_in_use(), base);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_inputs_match_the_model),
        cmocka_unit_test(sorted_adds_merge_like_the_model),
        cmocka_unit_test(combine_is_the_default_and_appends_add_tags),
        cmocka_unit_test(replace_supersedes_old),
        cmocka_unit_test(age_off_removes_exactly_the_old_keys),
        cmocka_unit_test(out_of_order_input_is_refused),
        cmocka_unit_test(errors_of_sources_sinks_and_policy_stop_it),
        cmocka_unit_test(big_tagsets_and_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
