# .output FILE sends the results of the statements after it to FILE (CSV,
# TSV or JSON by its extension, else the current mode) until .output alone;
# .once FILE only the next statement's. print still writes to stdout.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" --norc calls <<'END'
.output out.csv
ds | where dur > 890 | select onum, ts, dur
print("to stdout")
[1, 2]
.output
ds | count
.once o.json
ds | where dur > 893 | select onum, dur
ds | where dur > 897 | select onum
.mode csv
.output plain.txt
ds | group by state
.output
END
echo "exit $?"
for f in out.csv o.json plain.txt; do echo "== $f"; cat "$f"; done
printf ".once\n" | "$COMB" --norc 2>&1; echo "exit $?"
printf ".output nosuchdir/x\n" | "$COMB" --norc 2>&1; echo "exit $?"
