# Errors that say what was meant: SQL's `=` in a query suggests `==`; a
# time field compared with a quoted date says how times are written.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" -e 'let ds = open("calls"); print(ds | where onum = 7325551212 | count)' 2>&1
"$COMB" -e 'let ds = open("calls"); print(ds | where ts >= "2026-12-02" | count)' 2>&1
"$COMB" -e 'let ds = open("calls"); print(ds | where ts >= 2026-12-02 | count)' 2>&1
