# A scan whose rows a select of plain fields makes (the collector's fused
# select) keeps them as columns, and makes their rows (maps) when the array
# is first read (len counts them without): every way of reading it sees
# the rows the maps would have been (COMB_SCAN_MAPS=1 makes them at once;
# the outputs must be the same; so with the collector at every safe point,
# COMB_GC_STRESS=1: strings held as columns, shared between rows, stay
# alive), sorted in the scan, renamed, a name given twice, more fields than
# a map searches in order (an index), with steps after.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
cat > mk.comb <<'END'
schema ev {
    key run: u32; key event: u64
    tagset file: char[10]; tagset at: time; tagset kind: enum(a, b, c); tagset x: f64; tagset ok: bool
    tag t: u8
}
let input = []
for i in 0..3000 {
    push(input, {run: i % 5 + 1, event: i * 7, file: fmt("f%d", i / 40), at: 2026-12-01 + i * 60,
                 kind: i % 3, x: i * 0.5, ok: i % 4 == 0, tags: [{t: i % 9}]})
}
load(create_store("ev", ev, {partkey: "run", partitions: 3}), input, {block_size: 4096})
END
"$COMB" mk.comb || exit 1
cat > q.comb <<'END'
let ds = open("../ev")
fn q() { return ds | where ok && x > 100 | select run, event, file, at, kind, x }
fn g() { return rows(q()) }
let r = g()
print("type", type(r), "len", len(r), "len again", len(r))
print("first", r[0], "last", r[len(r) - 1])
let total = 0
for row in g() { total += row.event }
print("for", total)
for i, row in g() { if i < 2 { print("for i", i, row) } }
print("take", g() | take 3)
print("sort", g() | sort file desc, event | take 4)
print("where", g() | where kind == "b" | count)
print("count", g() | count)
print("shown", q() | take 2)
print("sorted in the scan", rows(ds | where x > 1400 | select event, file | sort event desc | take 3))
print("sorted all", rows(ds | where x > 1490 | select file, event | sort file, event desc))
print("renamed", rows(ds | where x > 1490 | select e: event, f: file, run))
print("twice", rows(ds | where x > 1490 | select a: event, a: file))
let w = rows(ds | where x > 1495 | select run, event, file, at, kind, x, ok, r2: run, e2: event)
print("wide", w, w[0].e2, w[1].x, w[2].ok)
print("none", rows(ds | where x > 99999 | select event), len(rows(ds | where x > 99999 | select event)))
let many = []
for i in 0..4 { push(many, g()) }
let junk = []
for i in 0..300 { push(junk, str(i) + "-junk") }
let n = 0
for a in many { n += len(a[len(a) - 1].file) }
print("after gc", n, many[3][len(many[3]) - 1])
let r4 = g()
push(r4, {run: 0, event: 0, file: "x", at: 0, kind: "a", x: 0})
print("push", len(r4), r4[len(r4) - 1])
let r5 = g()
r5[0].event = 99
print("set", r5[0], "keys", keys(g()[1]))
print("sort()", sort(g(), fn(a, b) { return a.x > b.x })[0])
print(rows(ds | where x > 1494 | select run, file, at))
g() | write("g.csv")
g() | write("g.json")
print("csv", len(read(open("g.csv"))), "json", len(read(open("g.json"))))
END
. "$COMB_SRCDIR/tests/golden/query/columns.inc"
columns_three_ways COMB_SCAN_MAPS
for f in csv json; do
    "$COMB" --format $f -e 'rows(open("ev") | where x > 1480 | select run, file, at)' >cols.$f &&
        COMB_SCAN_MAPS=1 "$COMB" --format $f -e 'rows(open("ev") | where x > 1480 | select run, file, at)' >maps.$f &&
        cmp cols.$f maps.$f && head -c 150 cols.$f && echo
done
