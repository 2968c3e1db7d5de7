# Order indexes of tag fields (`tag seen: time index`): two stores of the
# same random calls in key order, one declaring them, answer 300 random
# tag-level ranges (empty, narrow, whole; with a tagset where or not; two
# indexed fields; group by, count, rows) the same. Its files are format
# version 4 and verify; explain names the index and the tags it spares the
# tag where (each block holds every hour, so zone maps spare no block).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
let fields = "key id: u32; key ts: time; tagset k: u8; tag seen: time%s; tag sys: enum(A, B, C); tag d: i32%s"
let si = schema(fmt(fields, " index", " index"))
let sp = schema(fmt(fields, "", ""))
srand(5)
let t0 = 2026-12-01
let recs = []
for i in 0..4000 {
    let ts = t0 + random(4 * 86400)
    let r = {id: random(300), ts: ts, k: random(10), tags: []}
    for j in 0..random(5) { push(r.tags, {seen: ts + random(3600), sys: random(3), d: random(1001) - 500}) }
    push(recs, r)
}
let di = create_store("indexed", si, {partkey: "id", partitions: 3})
let dp = create_store("plain", sp, {partkey: "id", partitions: 3})
load(di, recs, {block_size: 4096})
load(dp, recs, {block_size: 4096})
load("i.ts", recs, {schema: si, block_size: 4096})
load("p.ts", recs, {schema: sp, block_size: 4096})
print("versions", info(open("i.ts")).version, info(open("p.ts")).version, "verify", len(verify("i.ts")), verify(di))
let shapes = [
    fn(ds, a, b, x) { return rows(ds | tags | where seen >= a && seen < b | group by sys { n: count(), s: sum(d) }) },
    fn(ds, a, b, x) { return ds | tags | where seen in a..b | count },
    fn(ds, a, b, x) { return ds | where k < 4 | tags | where seen >= a && seen <= b | count },
    fn(ds, a, b, x) { return ds | where id == 7 | tags | where seen >= a | count },
    fn(ds, a, b, x) { return rows(ds | tags | where d > x && d < x + 40 && seen > a | select id, ts, seen, d) },
    fn(ds, a, b, x) { return rows(ds | tags | where seen > a && seen < b && sys == "B" | sort seen, id, d | take 7) },
    fn(ds, a, b, x) { return ds | where any(tags, seen >= a && seen < b) | count }
]
let same = 0
let differ = 0
let used = 0
for i in 0..300 {
    let a = t0 + random(5 * 86400) - 43200
    let r = recs[random(len(recs))]
    if i % 2 == 0 && len(r.tags) > 0 { a = r.tags[0].seen }    # a bound a tag holds
    let w = [0, 60, 3600, 6 * 3600, 86400, 10 * 86400][random(6)]
    let b = a + w
    if i % 17 == 0 { b = a - 10 }
    let x = random(1000) - 500
    let sh = shapes[i % len(shapes)]
    for pair in [[di, dp], [open("i.ts"), open("p.ts")]] {
        if str(sh(pair[0], a, b, x)) == str(sh(pair[1], a, b, x)) { same += 1 } else { differ += 1; print("differ", i, a, b, x) }
    }
    let e = di | tags | where seen >= a && seen < b | explain count
    if e.tags_skipped_by_index > 0 { used += 1 }
}
print("same", same, "differ", differ, "ranges the index narrowed", used)
let e = di | tags | where seen >= t0 + 86400 && seen < t0 + 86400 + 6 * 3600 | explain group by sys { n: count() }
let all = di | tags | count
let kept = di | tags | where seen >= t0 + 86400 && seen < t0 + 86400 + 6 * 3600 | count
print(e.blocks, e.blocks_read, e.blocks_skipped_by_tags, e.tag_index, e.tags_skipped_by_index, all - kept)
e = dp | tags | where seen >= t0 + 86400 && seen < t0 + 86400 + 6 * 3600 | explain count
print(e.blocks, e.blocks_read, e.tag_index, e.tags_skipped_by_index)
e = di | tags | where seen >= t0 | explain count
print(e.tag_index, e.tags_skipped_by_index, "(most tags in range: the where tests them all)")
e = di | where any(tags, seen >= t0 && seen < t0 + 3600) | explain count
print(e.tag_index, e.tags_skipped_by_index, "(rows are tagsets)")
END
