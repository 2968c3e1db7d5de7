# Range partitioning: a store placed by windows of an integer key (an event
# store's run: create_store's bucket, comb store create --partition-bucket)
# keeps each window's rows in one partition, new runs filling new
# partitions as they load; a where on a range of the key (between, in
# lo..hi, == and in a set, also with other conjuncts) reads only the
# partitions that can hold it (explain: partitions_read of partitions) and
# counts what the same where counts over a store placed by hash. Signed
# keys place negative values in the windows below zero, bounded on one
# side or both.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
let s = schema("key run: u32; key event: u64; tagset x: u16; tagset ok: bool")
let ranged = create_store("ranged", s, {partkey: "run", bucket: 2, partitions: 16})
let hashed = create_store("hashed", s, {partkey: "run", partitions: 16})
for first in [1, 11, 21] {   # three loads, each of new runs
    let recs = []
    for r in first..first + 10 { for e in 0..40 { push(recs, {run: r, event: e, x: (r * e) % 11, ok: e % 3 == 0}) } }
    load(ranged, recs)
    load(hashed, recs)
    print(len(files(ranged)), "partitions after runs to", first + 9)
}
print(info(ranged).bucket)
let wheres = [
    ["between(run, 3, 6)", fn(ds) { return ds | where between(run, 3, 6) }],
    ["run in 5..9", fn(ds) { return ds | where run in 5..9 }],
    ["run == 12", fn(ds) { return ds | where run == 12 }],
    ["run in [2, 17, 30]", fn(ds) { return ds | where run in [2, 17, 30] }],
    ["run >= 27 && run <= 30", fn(ds) { return ds | where run >= 27 && run <= 30 }],
    ["between(run, 7, 12) && x > 5 && ok", fn(ds) { return ds | where between(run, 7, 12) && x > 5 && ok }],
    ["run > 28", fn(ds) { return ds | where run > 28 }],
    ["between(run, 9, 4)", fn(ds) { return ds | where between(run, 9, 4) }],
    ["x == 3", fn(ds) { return ds | where x == 3 }]]
for w in wheres {
    let q = w[1](ranged)
    let e = q | explain count
    let n = q | count
    let h = w[1](hashed) | count
    print(fmt("%-36s %2d of %2d partitions, %4d rows, same as by hash: %s", w[0], e.partitions_read,
              e.partitions, n, n == h))
}
let t = schema("key when: i32; key id: u32; tagset v: u8")
let neg = create_store("neg", t, {partkey: "when", bucket: 10, partitions: 4})
let recs = []
for w in -25..25 { push(recs, {when: w, id: 1, v: 1}) }
load(neg, recs)
for f in files(neg) { print(f.partition, rows(open(f.path) | group by { lo: min(when), hi: max(when) })) }
print((neg | explain where between(when, -20, -11) | count).partitions_read, neg | where between(when, -20, -11) | count)
print((neg | explain where when < -15 | count).partitions_read, neg | where when < -15 | count)
print((neg | explain where when >= 5 | count).partitions_read, neg | where when >= 5 | count)
try { create_store("bad", schema("key f: f64"), {bucket: 1}) } catch e { print(e) }
END
