# Projections of a tag field (`tag seen: time projection`, all tag fields or
# a list): stores and files of the same random calls, with and without one,
# answer 400 random tag-level ranges the same (empty, narrow, whole, bounds
# a tag holds, other conjuncts on the tags; count, group by, stat, and
# shapes the projection cannot answer, which read the files). The stores
# are loaded in two halves, so the second load's update (merge) rewrites
# every file with its projection; verify passes; explain says which path
# and how many of the projection's blocks the range reads.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
let fields = "key id: u32; key ts: time; tagset k: u8; tag seen: time%s; tag sys: enum(A, B, C); tag d: i32; tag n: u16"
let sa = schema(fmt(fields, " index projection"))
let sl = schema(fmt(fields, " projection(d, sys)"))
let sp = schema(fmt(fields, ""))
srand(11)
let t0 = 2026-12-01
let recs = []
for i in 0..4000 {
    let ts = t0 + i * 86 + random(80)   # keys apart: the two loads combine none
    let r = {id: random(300), ts: ts, k: random(10), tags: []}
    for j in 0..random(5) { push(r.tags, {seen: ts + random(3600), sys: random(3), d: random(1001) - 500, n: random(50)}) }
    push(recs, r)
}
let half = []
let rest = []
for i, r in recs { if i % 2 == 0 { push(half, r) } else { push(rest, r) } }
let da = create_store("all", sa, {partkey: "id", partitions: 3})
let dl = create_store("list", sl, {partkey: "id", partitions: 3})
let dp = create_store("plain", sp, {partkey: "id", partitions: 3})
for ds in [da, dl, dp] {
    load(ds, half, {block_size: 4096})
    load(ds, rest, {block_size: 4096})
}
load("a.ts", recs, {schema: sa, block_size: 4096})
load("p.ts", recs, {schema: sp, block_size: 4096})
print("schema", sl)
print("versions", info(open("a.ts")).version, info(open("p.ts")).version, "verify", verify("a.ts"), verify(da), verify(dl))
da = open("all")
dl = open("list")
dp = open("plain")
let shapes = [
    fn(ds, a, b, x) { return rows(ds | tags | where seen >= a && seen < b | group by sys { c: count(), s: sum(d), lo: min(d), hi: max(d) }) },
    fn(ds, a, b, x) { return ds | tags | where seen in a..b | count },
    fn(ds, a, b, x) { return ds | tags | where seen >= a && seen <= b && d > x | count },
    fn(ds, a, b, x) { return rows(ds | tags | where seen > a && seen < b && sys != "B" | group by { s: sum(d), c: count() }) },
    fn(ds, a, b, x) { return rows(ds | tags | where seen >= a && seen < b | group by sys { m: avg(n) }) },
    fn(ds, a, b, x) { return ds | tags | where seen == a | count },
    fn(ds, a, b, x) { return ds | where k < 4 | tags | where seen >= a && seen <= b | count },
    fn(ds, a, b, x) { return rows(ds | tags | where seen > a && seen < b | sort seen, id, d | take 5) },
    fn(ds, a, b, x) { return ds | tags | where seen >= a && seen < b && d < x | stat d, sys }
]
# a range: from a random time or a tag's, of a random width; some empty,
# some holding every tag
fn pick(i) {
    let r = recs[random(len(recs))]
    let a = t0 + random(5 * 86400) - 43200
    if i % 2 == 0 && len(r.tags) > 0 { a = r.tags[0].seen }
    let w = [0, 1, 60, 3600, 6 * 3600, 86400, 10 * 86400][random(7)]
    if i % 23 == 0 { return [t0 - 86400, t0 + 10 * 86400] }
    if i % 17 == 0 { return [a, a - 10] }
    return [a, a + w]
}
let same = 0
let differ = 0
let read = 0
for i in 0..400 {
    let ab = pick(i)
    let a = ab[0]
    let b = ab[1]
    let x = random(1000) - 500
    let sh = shapes[i % len(shapes)]
    let want = str(sh(dp, a, b, x))
    for ds in [da, dl, open("a.ts")] {
        if str(sh(ds, a, b, x)) == want { same += 1 } else { differ += 1; print("differ", i, a, b, x) }
    }
    if str(sh(open("p.ts"), a, b, x)) != want { differ += 1; print("file differs", i) }
    let e = da | tags | where seen >= a && seen < b | explain count
    if e.projection_path == "read" { read += 1 }
}
print("same", same, "differ", differ, "ranges read from the projection", read)
let a = t0 + 86400
let b = a + 6 * 3600
for q in [da | tags | where seen >= a && seen < b | explain group by sys { c: count(), s: sum(d) },
          dl | tags | where seen >= a && seen < b | explain group by sys { c: count(), s: sum(d) },
          dl | tags | where seen >= a && seen < b | explain group by sys { m: max(n) },
          da | where k == 1 | tags | where seen >= a && seen < b | explain count,
          da | tags | where d > 0 | explain count,
          da | tags | where seen >= a | explain select seen, d] {
    print(q.projection, q.projection_path, q.projection_blocks_read < q.projection_blocks, q.blocks)
}
END
