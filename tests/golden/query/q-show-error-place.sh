# A run-time error in a query's rows shown after the statement returned
# (the prompt's and a batch's values, -e's rows) names its file:line:col,
# in a select as in a where or a group key.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 50 --seed 2 >/dev/null || exit 1
for q in 'ds | tags | select x: dur + sys | take 2' 'ds | select x: onum / 0' \
         'ds | take 3 | select x: onum / 0' 'ds | where onum / 0 == 1' \
         'ds | tags | group by k: dur / status'; do
    printf 'let x = 1\n\n%s\n' "$q" | "$COMB" --norc calls 2>&1; echo "status $?"
done
"$COMB" --format csv -e 'let ds = open("calls")
ds | select x: onum / 0' 2>&1
echo "status $?"
