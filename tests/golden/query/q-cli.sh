# comb -e prints the value of its last expression: a count is just the
# number; rows are TSV when piped, or --format table, csv, json.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" -e 'open("calls") | where (onum == 7325551212) && (bsid == 34) | count'
q='open("calls") | where onum == 7325551212 | sort ts | take 3 | select onum, ts, state, n: count(tags)'
"$COMB" -e "$q"
"$COMB" --format table -e "$q"
"$COMB" --format csv -e "$q"
"$COMB" --format json -e "$q"
"$COMB" -e 'open("calls") | group by state' --format csv
"$COMB" -e 'let x = 1'
"$COMB" --format xml -e 1 2>&1; echo "status $?"
