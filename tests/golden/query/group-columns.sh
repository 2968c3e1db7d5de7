# A group by that ends its query keeps its groups as columns, and makes
# their rows (maps) when the array is first read: every way of reading it
# sees the rows the maps would have been (COMB_GROUP_MAPS=1 makes them at
# once; the two outputs must be the same; so with the collector at every
# safe point, COMB_GC_STRESS=1: string keys held as columns stay alive),
# and a sum's overflow still raises in the query.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
cat > q.comb <<'END'
let ds = open("../calls")
fn g() { return rows(ds | tags | group by dnum, onum { n: count(), hi: max(status), d: distinct(sys) }) }
let r = g()
print("type", type(r), "len", len(r))
print("first", r[0], "last", r[len(r) - 1])
let r2 = g()
let total = 0
for row in r2 { total += row.n }
print("for", total)
let r3 = g()
for i, row in r3 { if i < 2 { print("for i", i, row) } }
print("take", g() | take 3)
print("sort", g() | sort n desc, dnum | take 4)
print("where", g() | where n > 1 | count)
print("count", g() | count)
let many = []
for i in 0..4 { push(many, g()) }
let junk = []
for i in 0..300 { push(junk, str(i) + "-junk") }
let strs = 0
for a in many { strs += len(a[len(a) - 1].dnum) }
print("after gc", strs, many[3][len(many[3]) - 1])
let r4 = g()
push(r4, {dnum: "x", onum: 0, n: 0, hi: 0, d: 0})
print("push", len(r4), r4[len(r4) - 1])
let r5 = g()
r5[0].n = 99
print("set", r5[0])
print("keys", keys(g()[1]))
print("sort()", sort(g(), fn(a, b) { return a.n > b.n })[0])
print(rows(ds | group by state { n: count(), a: avg(dur), lo: min(dur), s: sum(dur) }))
print(rows(ds | where dur > 850 | group by onum { n: count() }))
print(rows(ds | group by { n: count(), s: sum(dur) }))
g() | write("g.csv")
g() | write("g.json")
print("csv", len(read(open("g.csv"))), "json", len(read(open("g.json"))))
END
. "$COMB_SRCDIR/tests/golden/query/columns.inc"
columns_three_ways COMB_GROUP_MAPS
"$COMB" --format csv -e 'rows(open("calls") | group by onum { n: count() })' | head -3
"$COMB" --format json -e 'rows(open("calls") | group by onum { n: count() })' | head -c 120; echo
# a sum that overflows raises in the query, as before
"$COMB" - <<'END'
let big = open("calls")
try { print(rows(big | group by state { s: sum(onum * 1000000000) })) } catch e { print("raised:", e) }
END
