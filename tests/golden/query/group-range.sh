# A group key of one int field (ints, u64, times, also first/last over
# tags) whose values in the files read span few codes, by their zone maps,
# indexes the aggregates' states by value (explain's group_path "range of N
# codes"): the answers equal the hash table's (COMB_GROUP_HASH=1), on random
# data over two loads whose files hold different ranges: negative ints, u64s
# near and above 2^63 (where several read as one float), times, nil keys
# (first of no such tag), every aggregate (with and without a count(),
# whose rows say which values were met), top-N, no rows; on 1 and 2
# threads, with a small COMB_SORT_MB (states that do not fit its share take
# the table), and under COMB_GC_STRESS=1; and those of the row steps'
# group by of the same rows (count()'s runs of a tagset's tags, min and
# max of ints: the scan's update loops both paths share). A range a little wider than the
# rows allow, several keys, and keys of few values keep their paths.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
cat > q.comb <<'END'
schema s {
    key id: u64
    tagset k: i32; tagset t: time; tagset wide: i64
    tag dd: i16; tag st: u8; tag x: f64
}
let ds = create_store("s", s, {partkey: "id", volumes: 1, partitions: 3})
srand(7)
fn batch(from, to, lo, hi) {
    let input = []
    for i in from..to {
        let tags = []
        for t in 0..random(0, 4) {
            push(tags, {dd: random(lo, hi), st: random(256), x: random(1000) / 8.0})
        }
        push(input, {id: i, k: random(lo, hi), t: 1764547200 + random(lo, hi),
                     wide: random(-40000, 40000), tags: tags})
    }
    load(ds, input, {block_size: 4096})
}
batch(0, 3000, -3000, -1000)
batch(3000, 6000, -1500, 2500)
let q = open("s")
let u = open("u")
fn show(name, r) { print(name, len(r), r) }
show("k", rows(q | tags | group by k { n: count(), c: count(st > 100), s: sum(st), a: avg(x),
     lo: min(dd), hi: max(x), v: variance(st), d: distinct(st), m: median(dd) }))
show("no-count", rows(q | tags | group by k { c: count(st > 100), hi: max(dd), s: sum(x) }))
show("t", rows(q | group by t { n: count(), lo: min(id), hi: max(k), q: quantile(k, 0.9) }))
show("dd", rows(q | tags | group by dd { n: count(), s: sum(st), m: median(x), sd: stddev(dd) }))
show("first", rows(q | group by f: first(tags, st > 200).dd { n: count(), d: distinct(k) }))
show("last", rows(q | group by l: last(tags, st < 10).st { n: count() }))
show("top", rows(q | tags | group by k { n: count(), hi: max(st) } | sort n desc, hi, k | take 7))
show("where", rows(q | where k > 0 | group by k { n: count(), s: sum(id) }))
show("none", rows(q | where k > 100000 | group by k { n: count() }))
show("wide", rows(q | group by wide { n: count() }))
let a = rows(q)     # the row steps' group by: none of the scan's code
fn same(name, x, y) {
    if str(x) == str(y) { print(name, "== the rows' group by") } else { print(name, "DIFFERS") }
}
same("k-rows", rows(q | tags | group by k { n: count(), lo: min(dd), hi: max(dd), c: count(st > 9) }),
     rows(a | tags | group by k { n: count(), lo: min(dd), hi: max(dd), c: count(st > 9) }))
same("dd-rows", rows(q | tags | group by dd { n: count(), lo: min(k), hi: max(k) }),
     rows(a | tags | group by dd { n: count(), lo: min(k), hi: max(k) }))
show("u", rows(u | group by id { n: count(), s: sum(s), a: avg(s) }))
show("u-top", rows(u | group by id { n: count() } | sort n desc, id | take 3))
END
printf 'key id: u64\ntagset s: i64\n' >u.schema
"$COMB" store create u --schema u.schema --partition-key id --partitions 3 >/dev/null || exit 1
# 2^63 - 808 .. 2^63 + 2191: those above read as 2^63 or 2^63 + 2048
awk 'BEGIN { srand(3); for (i = 0; i < 3000; i++) printf "922337203685477%04d\t%d\n", 5000 + int(rand() * 3000), i % 50 - 20 }' >u.tsv
"$COMB" store load u u.tsv >/dev/null || exit 1
run() {   # run NAME ENV...: q.comb's output with ENV, in a store of its own
    name=$1; shift
    rm -rf s && env "$@" "$COMB" q.comb >"$name" 2>&1 || { echo "$name failed"; cat "$name"; exit 1; }
}
run hash COMB_GROUP_HASH=1
run range1 COMB_THREADS=1
run range2 COMB_THREADS=2
run small COMB_THREADS=2 COMB_SORT_MB=1
run hash-small COMB_GROUP_HASH=1 COMB_THREADS=1 COMB_SORT_MB=1
run stress COMB_GC_STRESS=1 COMB_THREADS=2
for r in range1 range2 small hash-small stress; do
    cmp hash "$r" && echo "$r == hash"
done
awk '{ print substr($0, 1, 150) }' hash
cat > e.comb <<'END'
let q = open("s")
let u = open("u")
fn path(e) { print(e.group_path) }
path(q | tags | explain group by k { n: count(), m: median(dd) })
path(q | explain group by t { n: count() })
path(q | explain group by f: first(tags, st > 200).dd { n: count() })
path(u | explain group by id { n: count() })
path(q | explain group by wide { n: count() })
path(q | explain group by k, t { n: count() })
path(q | tags | explain group by st { n: count() })
path(q | explain group by { n: count() })
END
"$COMB" e.comb && echo "COMB_GROUP_HASH=1:" && COMB_GROUP_HASH=1 "$COMB" e.comb | head -1 &&
    echo "COMB_SORT_MB=1, 2 threads:" && COMB_SORT_MB=1 COMB_THREADS=2 "$COMB" e.comb | head -1
