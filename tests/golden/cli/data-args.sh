# comb PATH with a path that is data, not a program: a tagset file opens the
# prompt (a batch here) bound to ds, like a store's directory; a text data
# file (.csv .tsv .txt .json .log) is refused with a hint, not run as comb
# code; a directory that is no store says so.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 50 --seed 2 >/dev/null || exit 1
"$COMB" -e 'open("calls") | take 7 | write("hits.ts")' >/dev/null
echo 'ds | count' | "$COMB" --norc hits.ts; echo "status $?"
printf 'onum,ts\n1,2\n' >cdr.csv
"$COMB" cdr.csv 2>&1; echo "status $?"
mkdir empty
"$COMB" --norc empty </dev/null 2>&1; echo "status $?"
