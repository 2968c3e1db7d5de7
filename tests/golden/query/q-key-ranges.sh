# Key ranges: a store placed by windows of its partition key records in its
# MANIFEST the range of that key each partition's file holds (files(): keys),
# exact through load, replace and update, so a where bounding the key at
# one end only (run >= A, run < B), or at both (between, in, ==), reads no
# partition outside it (explain: partitions_read, partitions_skipped_by_keys).
# Random bounds against the store's files as they are: the partitions read
# are exactly those whose windows and whose rows' keys allow the range, and
# the answers those of the rows themselves. A signed key too; and a range
# the manifest says wrongly is refused by the query that reads the file.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
srand(21)
fn keep(rs, f) {
    let out = []
    for r in rs { if f(r) { push(out, r) } }
    return out
}
fn keys_of(rs) {
    let out = []
    for r in rs { push(out, {run: r.run, event: r.event}) }
    return out
}
let s = schema("key run: u32; key event: u64; tagset x: u16")
# 4 partitions, windows of 3 runs: each partition holds runs far apart, so
# the windows alone prune little and the key ranges do the rest
let ds = create_store("ranged", s, {partkey: "run", bucket: 3, partitions: 4})
let all = []
fn add(first, last) {
    let recs = []
    for r in first..last + 1 { for e in 0..random(1, 6) { push(recs, {run: r, event: e, x: random(10)}) } }
    load(ds, recs)
    for x in recs { push(all, x) }
}
fn show(what) {
    let line = []
    for f in files(ds) { if f.kind == "tags" { push(line, fmt("p%d %s", f.partition, str(f.keys))) } }
    print(what, ":", join(line, ", "))
}
# the partitions a range can touch: windows floor(lo/3)..floor(hi/3) mod 4
# (all once they span 4), then the file's own keys
fn expect(lo, hi) {
    let n = 0
    for f in files(ds) {
        if f.kind != "tags" { continue }
        let w = false
        if lo <= hi {
            if hi / 3 - lo / 3 >= 3 { w = true } else { for v in lo / 3..hi / 3 + 1 { if v % 4 == f.partition { w = true } } }
        }
        let ks = rows(open(f.path) | group by { lo: min(run), hi: max(run) })
        if w && len(ks) > 0 && ks[0].lo <= hi && ks[0].hi >= lo { n = n + 1 }
    }
    return n
}
fn check(label, q, lo, hi) {
    let e = q | explain count
    let got = rows(q | group by { n: count(), s: sum(event + x) })
    let want = {n: 0, s: 0}
    for r in all { if r.run >= lo && r.run <= hi { want.n = want.n + 1; want.s = want.s + r.event + r.x } }
    let gn = if len(got) > 0 { got[0].n } else { 0 }
    let gs = if len(got) > 0 && got[0].s != nil { got[0].s } else { 0 }
    let ok = gn == want.n && gs == want.s && e.partitions_read == expect(lo, hi)
    if !ok { print("WRONG", label, e.partitions_read, expect(lo, hi), gn, want.n, gs, want.s) }
    return ok
}
fn round(top) {
    let bad = 0
    let n = 0
    for i in 0..40 {
        let a = random(0, top + 3)
        let b = random(0, top + 3)
        let cases = [
            [fmt("run >= %d", a), ds | where run >= a, a, 1000000],
            [fmt("run > %d", a), ds | where run > a, a + 1, 1000000],
            [fmt("run <= %d", b), ds | where run <= b, 0, b],
            [fmt("run < %d", b), ds | where run < b, 0, b - 1],
            [fmt("between(run, %d, %d)", a, b), ds | where between(run, a, b), a, b],
            [fmt("run >= %d && run <= %d", a, b), ds | where run >= a && run <= b && x >= 0, a, b],
            [fmt("run == %d", a), ds | where run == a, a, a],
            [fmt("run in [%d, %d]", a, a + 1), ds | where run in [a, a + 1], a, a + 1]]
        for c in cases {
            n = n + 1
            if !check(c[0], c[1], c[2], c[3]) { bad = bad + 1 }
        }
    }
    print(n, "random bounds,", bad, "wrong")
}
add(1, 8)
show("runs 1..8")
let e = ds | where run >= 7 | explain count
print("run >= 7:", e.partitions_read, "of", e.partitions, "partitions,", e.partitions_skipped_by_keys, "skipped by keys")
print("run > 100:", (ds | where run > 100 | explain count).partitions_read, ds | where run > 100 | count)
print("run < 1:", (ds | where run < 1 | explain count).partitions_read, ds | where run < 1 | count)
print("run <= 8:", (ds | where run <= 8 | explain count).partitions_read, "run >= 0:", (ds | where run >= 0 | explain count).partitions_read)
# every partition read holds only runs in range: the tests of run need no
# testing, the rest of the where stays; else all of it stays
print((ds | where between(run, 1, 8) && x > 3 | explain count).where, "|",
      (ds | where between(run, 2, 8) && x > 3 | explain count).where, "|",
      (ds | where run >= 3 | explain count).does)
round(9)
add(13, 18)
show("and 13..18")
round(19)
# replace: the rows of run 14 again (fewer), and run 30 into partition 2
let again = [{run: 14, event: 0, x: 1}, {run: 30, event: 0, x: 2}]
load(ds, again, {mode: "replace"})
all = keep(all, fn(r) { return !(r.run == 14 && r.event == 0) })
push(all, again[0]); push(all, again[1])
show("replace")
round(31)
# update: remove every row of run 16 and 17 (partition 1 keeps 4 and 5, 13...)
let gone = keep(all, fn(r) { return r.run == 16 || r.run == 17 || r.run == 4 })
update(ds, {remove: keys_of(gone)})
all = keep(all, fn(r) { return !(r.run == 16 || r.run == 17 || r.run == 4) })
show("update")
round(31)
# a partition whose rows all go: its file holds none, and is never read
let p0 = keep(all, fn(r) { return (r.run / 3) % 4 == 0 })
update(ds, {remove: keys_of(p0)})
all = keep(all, fn(r) { return (r.run / 3) % 4 != 0 })
show("emptied")
print("count:", (ds | explain count).partitions_read, "of", (ds | explain count).partitions, ds | count)
round(31)

let t = schema("key when: i16; key id: u32; tagset v: u8")
let neg = create_store("neg", t, {partkey: "when", bucket: 10, partitions: 3})
let recs = []
for w in [-32768, -200, -41, -5, 0, 3, 77, 32767] { push(recs, {when: w, id: 1, v: 1}) }
load(neg, recs)
for f in files(neg) { print("neg p", f.partition, f.keys) }
for b in [[-32768, -32768], [-100, 2], [4, 32767], [-6, -5], [32767, 32767]] {
    let q = neg | where when >= b[0] && when <= b[1]
    print("neg", b, (q | explain count).partitions_read, q | count)
}
print("neg when < -41:", (neg | where when < -41 | explain count).partitions_read, neg | where when < -41 | count)
END
# A manifest whose range is not its file's (the file of another store, of
# the same size, copied over it): a query that reads the file refuses it,
# and verify names it.
d2=$(mktemp -d) && trap 'rm -rf "$d" "$d2"' EXIT && cd "$d2" || exit 99
"$COMB" - <<'END' 2>&1
let s = schema("key run: u32; key event: u64; tagset x: u16")
let a = create_store("a", s, {partkey: "run", bucket: 100, partitions: 1})
let b = create_store("b", s, {partkey: "run", bucket: 100, partitions: 1})
let ra = []
let rb = []
for e in 0..10 { push(ra, {run: 1, event: e, x: e}); push(rb, {run: 3, event: e, x: e}) }
load(a, ra, {label: "same"})
load(b, rb, {label: "same"})
print(files(a)[0].size == files(b)[0].size, files(a)[0].keys, files(b)[0].keys)
END
cp b/v000/p000/tags.1 a/v000/p000/tags.1
"$COMB" -e 'open("a") | where run >= 1 | count' 2>&1
"$COMB" store verify a 2>&1; echo "verify: $?"
