# Top-N over groups past the budget: the spilled groups come back in key
# order, each folded and offered to the heap at once (not held), and the
# answer equals the one held in memory, on 1 and 2 threads: ties in key
# order (count desc alone ties thousands of groups), by a key and an
# aggregate, take 0, and a take of more groups than there are. A group by
# without take after a spill also equals memory (its rows made as each
# key's records end).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u64\ntagset name: char[12]\ntag st: u8\ntag dd: i32\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key id --partitions 3 >/dev/null || exit 1
awk 'BEGIN { srand(5)
    for (i = 0; i < 30000; i++) {
        name = sprintf("n%05d", int(rand() * 20000))
        for (t = int(rand() * 3); t >= 0; t--)
            printf "%d\t%s\t%d\t%d\n", i, name, int(rand() * 256), int(rand() * 60000) - 30000
    } }' >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
cat > q.comb <<'END'
let q = open("s")
print(rows(q | tags | group by dd { n: count() } | sort n desc | take 7))
print(rows(q | tags | group by dd { n: count(), hi: max(st) } | sort hi, n desc, dd desc | take 5))
print(rows(q | tags | group by name { n: count(), lo: min(dd) } | sort lo | take 3))
print(rows(q | tags | group by dd { n: count() } | sort n desc | take 0))
print(len(rows(q | tags | group by st { n: count() } | sort n | take 4000)))
let all = rows(q | tags | group by dd { n: count(), lo: min(st) })
print(len(all), all[0], all[len(all) - 1])
END
"$COMB" q.comb >mem || exit 1
for th in 1 2; do
    COMB_THREADS=$th COMB_SORT_MB=1 "$COMB" q.comb >spilled$th || exit 1
    cmp mem spilled$th && echo "spilled on $th threads == in memory"
done
cat mem
# that it spilled: with no temporary directory the top-N fails as the sort does
COMB_SORT_MB=1 TMPDIR=$d/none "$COMB" -e 'print(rows(open("s") | tags | group by dd { n: count() } | sort n desc | take 7))' >/dev/null 2>&1
echo "status $?"
