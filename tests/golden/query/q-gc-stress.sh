# Queries with the collector running at every safe point (COMB_GC_STRESS=1):
# a small store (300 tagsets, 3 volumes x 2 partitions, 4 KiB blocks) and
# every kind of query over it, comb functions called from the scan and the
# row steps making new strings (so that blocks the collector freed are
# reused at once); the output must be the same as without. Then the query
# tests built on calls.inc (600 tagsets) again under the stress. The store
# tests with 20,000 generated tagsets would take minutes: each collection
# marks every row held.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT || exit 99
cat > "$d/q.comb" <<'END'
schema calls {
    key onum: u64; key ts: time
    tagset bsid: u16; tagset dur: u32; tagset state: enum(open, billed, closed)
    tag sys: enum(RICS, BILL, SWITCH); tag status: u8; tag dnum: char[12]
}
let seed = 777
fn rnd(n) {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 65536 % n
}
let input = []
for i in 0..300 {
    let t = {onum: 7325551200 + rnd(30), ts: 2026-12-01 + i * 611, bsid: rnd(6) * 17,
             dur: rnd(900), state: rnd(3), tags: []}
    for j in 0..rnd(4) {
        push(t.tags, {sys: rnd(3), status: rnd(3), dnum: str(2015550000 + rnd(300))})
    }
    push(input, t)
}
let ds = create_store("calls", calls, {partkey: "onum", volumes: 3, partitions: 2})
load(ds, input, {block_size: 4096})
load("calls.ts", input, {schema: calls, block_size: 4096})
input = nil
ds = open("calls")
# functions that allocate, called from the scan and the row steps
fn long(d) { return d > 600 }
fn tagged(s, n) { let a = []; for i in 0..n { push(a, s + str(i)) } return len(a[n - 1]) > len(s) }
fn sevens(s) { return tagged(s, 3) && s ~ /7$/ }
fn named(s) { return len(s + "!" + s) > 5 }
# new small strings: blocks the collector freed get reused at once
fn churn(x) { let a = []; for i in 0..40 { push(a, "zz" + str(i)) } return len(a) > 0 }
print("count", ds | count, ds | where state == "open" | count)
print("call", ds | where long(dur) && state == "open" | count)
print("call-tags", ds | where any(tags, sevens(dnum) && status > 0) | count)
print("call-args", ds | where tagged(state, 2) && long(dur + bsid) | count)
print("select", ds | where bsid == 17 | select onum, ts, l: long(dur), s: named(state) | take 6)
print("group", ds | group by state { n: count(), lo: min(dur), hi: max(onum), s: sum(dur),
                                      big: long(max(dur)), d: distinct(bsid) })
# a call in a group's items, then strings made from the groups' min and max
print("group-str", ds | group by bsid { c: churn(count()), lo: min(state), hi: max(state), ok: named(min(state)) && named(max(state)) })
print("group-tags", ds | tags | group by sys { n: count(), c: churn(count()), lo: min(dnum), hi: max(dnum), ok: sevens(max(dnum)) })
print("sort", ds | sort dur desc, onum | take 7 | select onum, dur, state)
print("sort-call", ds | sort long(dur), onum desc | take 4 | select onum, dur)
print("tags", ds | tags | where sys == "RICS" && status > 0 | select onum, dnum | take 5)
print("quant", ds | where any(tags, dnum ~ /5$/) && count(tags) > 1
                  | select onum, f: first(tags, status == 1).dnum, l: last(tags, true).sys, n: count(tags) | take 5)
print("all", ds | where all(tags, status < 2) && count(tags, sys == "BILL") >= 1 | count)
print("matcher", ds | where dnum in matcher(sevens) | count, ds | where dnum in matcher(fn(s) { return named(s) && s < "2015550100" }) && state != "closed" | count)
let lim = 1
print("closure", ds | where any(tags, fn(s) { return s > lim }(status)) | count)
let r = rows(ds | where state == "billed")
print("rows", len(r), r | where long(dur) | group by bsid { n: count(), s: sum(dur), st: max(state), ok: named(max(state)) } | sort n desc, bsid | take 3)
print("rows-quant", r | where any(tags, sevens(dnum)) | select onum, n: count(tags), f: first(tags, status == 2).dnum | take 4)
print("rows-tags", r | tags | where named(dnum) && status == 1 | count)
print("rows-keys", r | sort churn(dur), state, onum desc | take 3 | select onum, state, ok: churn(state))
print("rows-group", r | group by k: churn(state), st: state { n: count(), lo: min(state), c: churn(1), hi: max(state) })
for t in ds | where bsid == 34 && churn(dur) | sort onum, ts | take 4 {
    print("for", t.onum, t.state, len(t.tags), str(t.tags))
}
for t in ds | tags | where sevens(dnum) | take 3 {
    print("for-tags", t.onum, t.dnum, t.sys)
}
let some = ds | tags | where status == 2 | select dnum | take 5
print("in", ds | where onum in [7325551201, 7325551207, 7325551229] | count, ds | where dnum in some | count)
print("file", open("calls.ts") | where long(dur) | count, open("calls.ts") | group by state { n: count(), ok: long(max(dur)) })
print("write", ds | where state == "open" | write("open.ts"), open("open.ts") | where any(tags, sevens(dnum)) | count)
let e = ds | explain where onum == 7325551207 && long(dur)
print("explain", e.partitions, e.partitions_read, e.where, e.threads)
print("stat", ds | where bsid == 17 | stat)
END
mkdir "$d/plain" "$d/stress" || exit 99
(cd "$d/plain" && "$COMB" ../q.comb) > "$d/plain.out" 2>&1 || echo "plain run failed"
(cd "$d/stress" && COMB_GC_STRESS=1 "$COMB" ../q.comb) > "$d/stress.out" 2>&1 || echo "stress run failed"
cat "$d/plain.out"
cmp -s "$d/plain.out" "$d/stress.out" && echo "same under COMB_GC_STRESS=1" ||
    diff "$d/plain.out" "$d/stress.out"
for t in $(grep -l 'query/calls\.inc"' tests/golden/query/*.sh); do
    [ "$t" = tests/golden/query/q-gc-stress.sh ] && continue
    COMB_GC_STRESS=1 sh "$t" > "$d/out" 2>&1 || echo "$t failed"
    cmp -s "$d/out" "${t%.sh}.out" || echo "$t differs"
done
echo done
