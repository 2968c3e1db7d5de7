# write: a query's tagsets into a new tagset file (sorted and grouped by
# the external sort), into a store (merged into its partitions), and rows
# of a row step; the count of records written.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
print(ds | where bsid == 34 | write("b34.ts"))
let f = open("b34.ts")
print(f | count, ds | where bsid == 34 | count, str(rows(f)) == str(rows(open("calls.ts") | where bsid == 34)))
let copy = create_store("copy", schema(ds), {partkey: "onum", partitions: 3})
print(ds | where state == "open" | write(copy), open("copy") | count, ds | where state == "open" | count)
print(ds | where state == "closed" | tags | write(copy), open("copy") | count)
print(open("copy") | group by state)
print([{onum: 1, ts: 5, bsid: 1, sys: "RICS"}, {onum: 1, ts: 5, sys: "BILL"}] | write("two.ts", {schema: schema(ds)}))
print(rows(open("two.ts")))
END
