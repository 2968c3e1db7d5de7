# comb -e writes a query's rows in TSV, CSV and JSON as they come: the same
# text as the whole result printed (rows(q), also with no rows), and rows
# already made are out when a later one fails.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 2000 --seed 4 --volumes 1 --partitions 2 >/dev/null || exit 1
q='open("calls") | where state != "open" | select onum, state, n: count(tags), tags'
for f in tsv csv json; do
    "$COMB" --format $f -e "$q" >streamed || exit 1
    "$COMB" --format $f -e "rows($q)" >whole || exit 1
    cmp streamed whole && echo "$f: $(wc -l <streamed) lines, the same"
    "$COMB" --format $f -e 'open("calls") | where cid == 5 | select onum'
done
# the second partition's first block fails: the first partition's rows
# are out already
"$COMB" --format csv -e '
let k = 0
fn upto(x) { k += 1; if k > 1200 { error("no more") }; return true }
open("calls") | where upto(onum) | select onum' >out 2>err
echo "exit status $?"
head -2 out
echo "$(wc -l <out) lines"
cat err
