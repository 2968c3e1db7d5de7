# stat (per field count, nulls, min, max, mean, approximate distinct) on a
# store and an array; explain: partitions left after partition elimination,
# blocks left after zone maps, columns decoded; schema.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
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
END
