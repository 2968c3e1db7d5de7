# Numbers and times as people read them: the aligned table rounds floats to
# 12 significant digits (CSV, TSV and JSON keep every digit); round(x,
# digits); a time plus or minus seconds shows as a time; .mode line and
# psql's \x show a row a field per line.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" --norc calls <<'END'
let r = [{x: 37832.30000000011, y: 2.0, z: 1e100, n: float("nan"), s: 0.1 + 0.2, t: 1.0 / 3}]
.mode table
r
.mode csv
r
.mode json
r
.mode tsv
print(round(2.5), round(-2.5), round(2.675, 2), round(37832.30000000011, 2), round(0.125, 2))
print(round(1234.5678, -2), round(1250, -2), round(-1250, -2), round(1249, -2), round(7, 3), round(1e300, 2))
ds | select ts, later: ts + 3600, before: ts - 60, span: ts - ts, d: day(ts) + 7200 | take 2
ds | group by h: day(ts) + 3600 { n: count(), last: max(ts) + 1 }
.mode line
ds | select onum, ts, dur | take 2
.mode table
\x
ds | select onum, state | take 1
\x
ds | select onum, state | take 1
END
echo "exit $?"
