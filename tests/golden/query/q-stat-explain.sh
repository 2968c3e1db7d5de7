# stat (per field count, nulls, min, max, mean, approximate distinct) on a
# store and an array; explain: partitions left after partition elimination,
# blocks left after zone maps, columns decoded; schema.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" store gen s --tagsets 2000 --seed 1 --volumes 2 --partitions 4 >/dev/null || exit 1
"$COMB" --format tsv -e 'open("calls") | stat'
"$COMB" --format tsv -e 'open("calls") | where bsid == 17 | tags | stat'
"$COMB" - <<'END'
let ds = open("calls")
let e = ds | explain where (onum == 7325551212) && (bsid == 34)
print(e.partitions, e.partitions_read, e.blocks, e.blocks_read < e.blocks, e.columns, e.zone_ranges)
e = ds | where onum < 7325551203 | explain
print(e.partitions_read, e.blocks, e.blocks_read, e.zone_ranges, e.does)
e = ds | where onum in [7325551212, 7325551213] | group by bsid | sort n | explain
print(e.partitions_read, e.columns, e.does, e.then)
print([{a: 1}, {a: 2, b: "x"}] | stat)
print(ds | schema)
# an enum's min and max are by text, as min() and max() have them; an
# approximate distinct is never above the count
let st = {}
for r in ds | stat { st[r.field] = r }
let g = rows(ds | group by { lo: min(state), hi: max(state) })[0]
print(st.state.min == g.lo, st.state.max == g.hi, st.state.min, st.state.max)
let over = 0
for r in ds | stat { if r.distinct > r.count { over += 1 } }
for r in ds | tags | stat { if r.distinct > r.count { over += 1 } }
for r in open("s") | stat { if r.distinct > r.count { over += 1 } }
print("distinct above count", over)
END
