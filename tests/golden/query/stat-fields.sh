# stat f, ...: the fields named (and "#tags") only, in that order, each as
# the whole stat has it; `select f, name: g | stat` of plain fields is the
# scan's stat of those columns by the select's names; explain shows only
# their columns decoded. Over rows, the named keys (none seen: missing).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" --format tsv -e 'open("calls") | stat dur, sys, "#tags", onum'
"$COMB" --format tsv -e 'open("calls") | where bsid == 17 | tags | select sys, d: dur | stat'
# every field alone (stat's names are written, so the program is made
# here), tagsets and tags, where or not: its row of the whole stat
{
    echo 'let ds = open("calls")'
    echo 'let same = 0'
    echo 'let differ = 0'
    echo 'for q in [ds, ds | where bsid > 30, ds | tags, ds | tags | where status == 1] {'
    echo '    let whole = {}'
    echo '    for r in q | stat { whole[r.field] = r }'
    for f in onum ts bsid dur state sys status dnum '#tags'; do
        echo "    if whole[\"$f\"] != nil {"
        echo "        let one = q | stat \"$f\""
        echo "        if len(one) == 1 && str(one[0]) == str(whole[\"$f\"]) { same += 1 } else { differ += 1; print(whole[\"$f\"], one) }"
        echo "    }"
    done
    echo '}'
    echo 'print("same", same, "differ", differ)'
} >one.comb
for th in 1 3; do
    COMB_THREADS=$th "$COMB" one.comb
done
"$COMB" - <<'END'
let ds = open("calls")
let e = ds | explain stat dur, "#tags"
print(e.columns, e.does)
e = ds | tags | explain select sys, onum | stat
print(e.columns, e.does, e.then)
e = ds | explain select onum, x: dur + 1 | stat
print(e.columns, e.does, e.then)
print([{a: 1}, {a: 2, b: "x"}] | stat b, c)
END
"$COMB" -e 'open("calls") | stat nope' 2>&1
"$COMB" -e 'open("calls") | tags | stat "#tags"' 2>&1
exit 0
