# A group by whose groups outgrow their share of COMB_SORT_MB spills them
# to the external sort and folds them back in key order: with a budget of
# 1 MB (tens of thousands of groups, on 1 and 2 threads) the answers equal
# those held in memory, for every aggregate of a fixed-size state (counts,
# sums, min and max of numbers and strings, variance). That it spilled
# shows with a TMPDIR that is not there: the scan fails with the
# sort's error (no crash, no partial answer); distinct (pairs of its own)
# keeps its groups in memory and answers there. Top-N over groups after a
# spill (each key folded and offered to the heap as it comes back, not
# held) equals memory too: ties in key order, by a key and an aggregate,
# take 0, a take of more groups than there are; and fails with the sort's
# error when it cannot spill.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u64\ntagset name: char[12]\ntagset small: i16\ntag t: time\ntag st: u8\ntag dd: i32\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key id --partitions 3 >/dev/null || exit 1
awk 'BEGIN { srand(3)
    for (i = 0; i < 30000; i++) {
        name = sprintf("n%05d", int(rand() * 20000)); small = int(rand() * 65536) - 32768
        for (t = int(rand() * 3); t >= 0; t--)
            printf "%d\t%s\t%d\t%d\t%d\t%d\n", i, name, small, 1764547200 + int(rand() * 100000),
                int(rand() * 256), int(rand() * 100000) - 50000
    } }' >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
cat > q.comb <<'END'
let q = open("s")
let a = rows(q | tags | group by dd { n: count(), m: avg(t), lo: min(st), hi: max(name), v: variance(small), c: count(st > 100), s: sum(st) })
let b = rows(q | tags | group by name, small { n: count(), lo: min(dd), hi: max(dd) })
print(len(a), a[0], a[len(a) - 1])
print(len(b), b[0], b[len(b) - 1])
print(a, b)
print(rows(q | tags | group by dd { n: count() } | sort n desc | take 7))
print(rows(q | tags | group by dd { n: count(), hi: max(st) } | sort hi, n desc, dd desc | take 5))
print(rows(q | tags | group by name { n: count(), lo: min(dd) } | sort lo | take 3))
print(rows(q | tags | group by dd { n: count() } | sort n desc | take 0))
print(len(rows(q | tags | group by st { n: count() } | sort n | take 4000)))
END
"$COMB" q.comb >mem || exit 1
for th in 1 2; do
    COMB_THREADS=$th COMB_SORT_MB=1 "$COMB" q.comb >spilled$th || exit 1
    cmp mem spilled$th && echo "spilled on $th threads == in memory"
done
head -2 mem
COMB_SORT_MB=1 TMPDIR=$d/none "$COMB" -e 'print(len(rows(open("s") | tags | group by dd { n: count() })))' >out 2>err
echo "status $?"
sed "s|$d|DIR|g" out err
COMB_SORT_MB=1 TMPDIR=$d/none "$COMB" -e 'print(len(rows(open("s") | tags | group by dd { k: distinct(st) })))'
COMB_SORT_MB=1 TMPDIR=$d/none "$COMB" -e 'print(rows(open("s") | tags | group by dd { n: count() } | sort n desc | take 7))' >/dev/null 2>&1
echo "top-N: status $?"
tail -5 mem
