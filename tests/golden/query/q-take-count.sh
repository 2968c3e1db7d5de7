# count (from the footers when nothing filters), take N (early stop), take 0,
# take after where, a file source; explain shows the footer count.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
print(ds | count, open("calls.ts") | count, ds | tags | count)
print((ds | explain count).does)
print(len(rows(ds | take 5)), ds | take 0 | count, ds | take 100000 | count)
print(ds | where bsid == 51 | take 3 | count)
for r in open("calls.ts") | where dur < 30 | take 4 { print(r.onum, isotime(r.ts), r.dur, len(r.tags)) }
print(ds | take 2 | where dur > 1000 | count)
END
