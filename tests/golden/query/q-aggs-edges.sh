# Aggregates over edge cases, in the scan (whose median and quantile keep
# ints as ints and select them by radix, aggs.c) against the same rows in
# row steps and against plain comb code (sort, then the interpolation the
# docs state; counts and fractions by hand; the sample variance from exact
# sums): groups of one value, two (an even count), thirty all equal, many
# spread over +-2^62 (several radix passes), the ends of the ints, u64s
# above 2^63 (read as floats: a group turns to floats midway), NaN among
# floats, negative ints, times, missing values (first of no tag), and no
# rows at all; one thread and several the same.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
cat > gen.comb <<'END'
let seed = 4242
fn rnd(n) {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 65536 % n
}
# a record per tag: k grp | u i s f t b
fn tag(k, g, u, i, s, f, t, b) {
    print(str(k) + "\t" + g + "\t" + str(u) + "\t" + str(i) + "\t" + str(s) + "\t" + f + "\t" + str(t) + "\t" + str(b))
}
tag(1, "one", 7, -5, -3, "2.5", 1764547200, 1)
tag(2, "two", 4, 4, 10, "1.0", 1764547200, 9)
tag(2, "two", 9, -6, -11, "-2.0", 1764550800, 0)
for j in 0..30 { tag(3 + j % 3, "same", 42, 42, 42, "0.5", 1764547200, 1) }
for j in 0..300 {
    tag(10 + j / 5, "wide", rnd(1000000), (rnd(65536) - 32768) * 140737488355328 + rnd(100000),
        rnd(1000) - 500, str(rnd(4000) / 8.0 - 60), 1764547200 + rnd(86400 * 7), rnd(10))
}
for j in 0..40 {
    let i = if j % 2 == 0 { 9223372036854775807 - rnd(3) } else { -9223372036854775807 - 1 + rnd(3) }
    let u = if j % 3 == 0 { "18446744073709551615" } else if j % 3 == 1 { "9223372036854775808" } else { str(rnd(50)) }
    tag(100 + j / 4, "ends", u, i, rnd(7) - 3, if j % 5 == 0 { "nan" } else { str(rnd(9) / 2.0) }, 1764547200 + j, j % 2)
}
END
printf 'key k: u32\ntagset grp: enum(one, two, same, wide, ends)\ntag u: u64\ntag i: i64\ntag s: i32\ntag f: f64\ntag t: time\ntag b: u8\n' >e.schema
"$COMB" gen.comb >e.tsv || exit 1
"$COMB" store create s --schema e.schema --partition-key k --partitions 4 >/dev/null || exit 1
"$COMB" store load s e.tsv >/dev/null || exit 1
cat > q.comb <<'END'
let ds = open("s")
let t = rows(ds | tags)
fn same(x, y) { return str(x) == str(y) }
# the q-quantile as the docs have it: sorted (NaN last), interpolated
# between the two values around q * (n - 1)
fn quant(xs, q) {
    if len(xs) == 0 { return nil }
    let v = sort(xs)
    let pos = q * float(len(v) - 1)
    let lo = floor(pos)
    if lo + 1 >= len(v) || pos == float(lo) { return float(v[lo]) }
    return float(v[lo]) + (pos - float(lo)) * (float(v[lo + 1]) - float(v[lo]))
}
# the sample variance of ints from their exact sums
fn var(xs) {
    let n = len(xs)
    if n < 2 { return nil }
    let s1 = 0
    let s2 = 0
    for x in xs { s1 += x; s2 += x * x }
    return float(n * s2 - s1 * s1) / float(n) / float(n - 1)
}
fn close(a, b) { return a == b || (a != nil && b != nil && abs(a - b) <= 1e-12 * abs(b)) }
let q = ds | tags | group by grp { n: count(), m: median(i), q1: quantile(i, 0.25), q9: quantile(i, 0.9),
    ms: median(s), mt: median(t), mu: median(u), qu: quantile(u, 0.7), mf: median(f), qf: quantile(f, 0.3),
    v: variance(s), sd: stddev(s), c: count(s < 0), a: avg(s > 0) }
let got = rows(q)
for r in got { print(r) }
print("row steps:", same(got, t | group by grp { n: count(), m: median(i), q1: quantile(i, 0.25), q9: quantile(i, 0.9),
    ms: median(s), mt: median(t), mu: median(u), qu: quantile(u, 0.7), mf: median(f), qf: quantile(f, 0.3),
    v: variance(s), sd: stddev(s), c: count(s < 0), a: avg(s > 0) }))
# by hand, group by group
let ok = true
for r in got {
    let i = []
    let s = []
    let tt = []
    let u = []
    let f = []
    let neg = 0
    let pos = 0
    for x in t {
        if x.grp == r.grp {
            push(i, x.i); push(s, x.s); push(tt, x.t); push(u, x.u); push(f, x.f)
            if x.s < 0 { neg += 1 }
            if x.s > 0 { pos += 1 }
        }
    }
    let want = {n: len(i), m: quant(i, 0.5), q1: quant(i, 0.25), q9: quant(i, 0.9), ms: quant(s, 0.5),
                mt: quant(tt, 0.5), mu: quant(u, 0.5), qu: quant(u, 0.7), mf: quant(f, 0.5), qf: quant(f, 0.3),
                c: neg, a: float(pos) / float(len(s))}
    for k, w in want {
        if !same(r[k], w) { print("differs:", r.grp, k, r[k], w); ok = false }
    }
    let v = var(s)
    if !close(r.v, v) || !close(r.sd, if v == nil { nil } else { sqrt(v) }) { print("differs:", r.grp, r.v, v); ok = false }
}
print("by hand:", ok)
# missing values: the first tag with b == 9 (most tagsets have none)
let m = rows(ds | group by grp { n: count(), m: median(first(tags, b == 9).s), h: count(first(tags, b == 9).s < 0) })
print(m)
print("missing, row steps:", same(m, rows(ds) | group by grp { n: count(), m: median(first(tags, b == 9).s), h: count(first(tags, b == 9).s < 0) }))
# no rows: one group of nothing, or no groups
print(rows(ds | tags | where s > 100000 | group by { n: count(), m: median(i), q: quantile(s, 0.5), sd: stddev(s), c: count(s < 0), a: avg(s > 0) }))
print(rows(ds | tags | where s > 100000 | group by grp { m: median(i) }))
# one group: no keys, all the tags
let one = rows(ds | tags | group by { m: median(i), ms: median(s), q: quantile(t, 0.1), mu: median(u) })
print(one)
let alli = []
let alls = []
let allt = []
let allu = []
for x in t { push(alli, x.i); push(alls, x.s); push(allt, x.t); push(allu, x.u) }
print("one group, by hand:", same(one, [{m: quant(alli, 0.5), ms: quant(alls, 0.5), q: quant(allt, 0.1), mu: quant(allu, 0.5)}]))
# min and max of an enum (its codes' ranks in the scan): by the symbols'
# bytes, not their codes, over tags and tagsets, one group and by b
let e1 = rows(ds | tags | group by { lo: min(grp), hi: max(grp) })
let e2 = rows(ds | tags | group by b { lo: min(grp), hi: max(grp), n: count() })
let e3 = rows(ds | where k > 2 | group by { lo: min(grp), hi: max(grp) })
print(e1, e2, e3)
let byb = {}
for x in t {
    if byb[x.b] == nil { byb[x.b] = [] }
    push(byb[x.b], x.grp)
}
let hand = []
for r in e2 { let v = sort(byb[r.b]); push(hand, {b: r.b, lo: v[0], hi: v[len(v) - 1], n: len(v)}) }
let gs = []
for x in t { push(gs, x.grp) }
gs = sort(gs)
print("enum, by hand:", same(e2, hand), same(e1, [{lo: gs[0], hi: gs[len(gs) - 1]}]),
      same(e3, rows(ds) | where k > 2 | group by { lo: min(grp), hi: max(grp) }))
END
"$COMB" q.comb >out || exit 1
COMB_THREADS=1 "$COMB" q.comb >one || exit 1
cmp out one && echo "one thread == several" && cat out
