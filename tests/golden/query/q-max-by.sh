# max_by(tags, e).f and min_by(tags, e).f: field f of the tag with the
# greatest (least) number e, the first of equals, nil when no tag has one
# (DuckDB's arg_max); the same over a store, a tagset file and an array of
# maps (the kernels and the row steps), and as the natives max_by(a, key)
# and min_by(a, key) over arrays in a program, which the queries are
# checked against.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let file = open("calls.ts")
let a = rows(ds)
fn by_key(rs) {
    let m = {}
    for r in rs { m[str(r.onum) + "/" + str(r.ts)] = r }
    return m
}
let s = by_key(rows(ds | select onum, ts, hi: max_by(tags, status).dnum, lo: min_by(tags, status + 0.5).sys))
let f = by_key(rows(file | select onum, ts, hi: max_by(tags, status).dnum, lo: min_by(tags, status + 0.5).sys))
let r = by_key(rows(a | select onum, ts, hi: max_by(tags, status).dnum, lo: min_by(tags, status + 0.5).sys))
let same = 0
for x in a {
    let hi = max_by(x.tags, "status")
    let lo = min_by(x.tags, fn(t) { return t.status + 0.5 })
    let want = {onum: x.onum, ts: x.ts, hi: if hi == nil { nil } else { hi.dnum }, lo: if lo == nil { nil } else { lo.sys }}
    let k = str(x.onum) + "/" + str(x.ts)
    let w = str(want)
    if str(s[k]) == w && str(f[k]) == w && str(r[k]) == w { same += 1 }
}
print(len(a), same)
print(rows(ds | select hi: max_by(tags, status).dnum, tags | take 2))
print(ds | where max_by(tags, status).sys == "RICS" | count, a | where max_by(tags, status).sys == "RICS" | count)
print(rows(ds | group by top: max_by(tags, status).sys { n: count() }))
print(max_by([{k: 1, v: "a"}, {k: 3, v: "b"}, {k: 3, v: "c"}, {v: "d"}], "k").v,
      min_by([{k: 2.5}, {k: -1}, {k: nil}], "k"), max_by([], "k"), max_by(["bb", "a", "ccc"], len))
try { ds | select x: max_by(tags, status) | count } catch e { print(e) }
try { ds | select x: max_by(tags, sys).dnum | count } catch e { print(e) }
try { max_by([1, 2], "k") } catch e { print(e) }
try { max_by([{k: 1}, {k: "x"}], "k") } catch e { print(e) }
END
exit 0
