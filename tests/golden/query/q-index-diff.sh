# Bitmap indexes against the plain scan: two stores of the same random
# events, one declaring indexes on its low-cardinality fields, answer 400
# random wheres (==, !=, <, in, bool tests, enum tests, &&, ||, ! over indexed
# and unindexed fields, and run ranges, alone at the top, whose tests a
# block's rows narrowed by the key need not repeat) with the same count and the same
# rows, and both agree with comb's own loop over the rows. explain names
# the path each takes: u, of many values, is scanned although indexed.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
let fields = "key run: u32; key event: u64; tagset ok: bool%s; tagset kind: enum(mu, el, jet, tau)%s; " +
             "tagset n: u8%s; tagset w: i16%s; tagset c: char[2]%s; tagset x: f64; tagset m: u16; tagset u: u16%s"
let ix = " index"
let si = schema(fmt(fields, ix, ix, ix, ix, ix, ix))
let sp = schema(fmt(fields, "", "", "", "", "", ""))
srand(21)
let recs = []
for i in 0..6000 {
    push(recs, {run: 1 + random(6), event: i, ok: random(10) < 3, kind: ["mu", "el", "jet", "tau"][random(4)],
                n: random(12), w: random(7) - 3, c: ["a", "b", "cc", ""][random(4)], x: random() * 10,
                m: random(40), u: random(60000)})
}
let di = create_store("indexed", si, {partkey: "run", bucket: 2, partitions: 3})
let dp = create_store("plain", sp, {partkey: "run", partitions: 3})
load(di, recs, {block_size: 8192})
load(dp, recs, {block_size: 8192})
print(verify(di), verify(dp))
let K = ["mu", "el", "jet", "tau", "none"]
let C = ["a", "b", "cc", "", "zz"]
let shapes = [
    fn(ds, a, b, s) { return ds | where n == a },
    fn(ds, a, b, s) { return ds | where ok && n != a },
    fn(ds, a, b, s) { return ds | where !ok || kind == K[b] },
    fn(ds, a, b, s) { return ds | where n in s && w != b - 3 },
    fn(ds, a, b, s) { return ds | where !(n in s) && c == C[b] },
    fn(ds, a, b, s) { return ds | where (kind == K[a % 5] || n == b) && x > a / 2 },
    fn(ds, a, b, s) { return ds | where kind != K[b] && !(ok || w == a % 7 - 3) && m < a * 3 },
    fn(ds, a, b, s) { return ds | where between(run, 2, 4) && n in s || c != C[a % 5] && !ok },
    fn(ds, a, b, s) { return ds | where w in [a % 7 - 3, b - 3] && kind in [K[a % 5], K[b]] },
    fn(ds, a, b, s) { return ds | where !(!ok) && (n == a || m == b) },
    fn(ds, a, b, s) { return ds | where kind < K[b % 4] || c == C[b] && n != a },
    fn(ds, a, b, s) { return ds | where ok == (a % 2 == 0) && x < b },
    fn(ds, a, b, s) { return ds | where n < a && w >= b - 3 || !(n > b) },
    fn(ds, a, b, s) { return ds | where !(kind in [K[b], K[a % 5]]) && (w < 0 || c in [C[a % 5], C[b]]) },
    fn(ds, a, b, s) { return ds | where u < a * 4000 && kind == K[b] },
    fn(ds, a, b, s) { return ds | where u != a || n == b },
    fn(ds, a, b, s) { return ds | where between(run, 1 + b % 3, 3 + a % 4) && ok && n != a },
    fn(ds, a, b, s) { return ds | where run >= 1 + a % 6 && !(kind in [K[b], K[a % 5]] || n in s) },
    fn(ds, a, b, s) { return ds | where run < 2 + b && w != a % 7 - 3 && run > a % 3 && m < a * 3 },
    fn(ds, a, b, s) { return ds | where run == 1 + a % 6 && (c == C[b] || !ok) }]
let bad = 0
let paths = {}
for round in 0..400 {
    let a = random(14)
    let b = random(5)
    let s = []
    for j in 0..random(5) { push(s, random(14)) }
    let k = round % len(shapes)
    let qi = shapes[k](di, a, b, s)
    let qp = shapes[k](dp, a, b, s)
    let ni = qi | count
    let np = qp | count
    let ri = str(rows(qi | sort run, event))
    let rp = str(rows(qp | sort run, event))
    # the key's ranges (shapes 16 on): also the records themselves, in
    # comb's row steps, which narrow nothing by the key
    let nr = if k >= 16 { shapes[k](recs, a, b, s) | count } else { ni }
    if ni != np || ri != rp || nr != ni {
        bad += 1
        if bad < 5 { print("differs:", k, a, b, s, ni, np) }
    }
    let p = (qi | explain count).path
    paths[fmt("%02d %s", k, p)] = true
}
print(bad, "of 400 differ")
# comb's loop agrees on one of each shape
for k in 0..len(shapes) {
    let n = 0
    let want = len(rows(shapes[k](dp, 5, 2, [1, 5, 9])))
    for r in rows(shapes[k](di, 5, 2, [1, 5, 9])) { n += 1 }
    print(k, n == want, n)
}
for p in sort(keys(paths)) { print(p) }
END
