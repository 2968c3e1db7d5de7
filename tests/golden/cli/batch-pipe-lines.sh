# A pipeline continued on the next line with a leading `|` runs as one
# statement in a batch (and .read), as in a file: blank and comment lines
# may come between; a line that starts with `||` is no continuation.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
printf '%s\n' 'let ds = open("calls")' 'ds' '  | where dur > 600' '' '# the count' '  | count' \
    'print("next")' 'ds | where dur > 800' '| group by state' >batch.in
"$COMB" --norc <batch.in; echo "exit $?"
printf '.read batch.in\n' | "$COMB" --norc; echo "exit $?"
printf 'true\n|| false\n' | "$COMB" --norc 2>&1; echo "exit $?"
