# A group by without keys (one group) has loops of its own: min and max
# of ints (u64 above the ints too), sum and avg without group indices,
# distinct of fields of 16 bits or less as a bitmap. Its answers equal
# those of the same aggregates under a constant key (the grouped loops),
# over tagsets and tags, with a where, with nils (first/last over tags),
# for no rows, and on 1, 2 and 3 threads (bitmaps and bounds merged).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u64\ntagset big: u64\ntagset small: i16\ntagset b: bool\ntagset f: f64\ntag t: time\ntag st: u8\ntag sd: i16\ntag dd: i32\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key id --partitions 3 >/dev/null || exit 1
awk 'BEGIN { srand(11)
    for (i = 0; i < 6000; i++) {
        big = rand() < 0.3 ? "18446744073709551" sprintf("%03d", int(rand() * 600)) : int(rand() * 1000000)
        small = int(rand() * 65536) - 32768; b = rand() < 0.5 ? "true" : "false"; f = int(rand() * 1000) / 8
        nt = int(rand() * 4) + 1
        for (t = 0; t < nt; t++)
            printf "%d\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\n", i, big, small, b, f, 1764547200 + int(rand() * 100000),
                int(rand() * 256), int(rand() * 65536) - 32768, int(rand() * 100000) - 50000
    } }' >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
cat > q.comb <<'END'
let q = open("s")
fn both(name, a, b) {
    for r in b { del(r, "k") }
    if str(a) == str(b) { print(name, a) } else { print(name, a, "DIFFERS from", b) }
}
both("tagsets", rows(q | group by { a: min(big), b: max(big), c: distinct(small), d: min(small), e: max(small), f: avg(small), g: distinct(b), h: sum(small), i: min(f), j: max(f), n: count() }),
     rows(q | group by k: 1 { a: min(big), b: max(big), c: distinct(small), d: min(small), e: max(small), f: avg(small), g: distinct(b), h: sum(small), i: min(f), j: max(f), n: count() }))
both("tags", rows(q | tags | group by { a: min(t), b: max(t), c: distinct(st), d: distinct(sd), e: min(dd), f: max(dd), g: avg(dd), h: min(big), i: max(big), j: distinct(dd) }),
     rows(q | tags | group by k: 1 { a: min(t), b: max(t), c: distinct(st), d: distinct(sd), e: min(dd), f: max(dd), g: avg(dd), h: min(big), i: max(big), j: distinct(dd) }))
both("where", rows(q | tags | where st > 250 && id < 100 | group by { c: distinct(sd), e: min(dd), h: max(big) }),
     rows(q | tags | where st > 250 && id < 100 | group by k: 1 { c: distinct(sd), e: min(dd), h: max(big) }))
print("none", rows(q | where id > 100000 | group by { c: distinct(small), e: min(big), s: sum(small) }))
both("nil", rows(q | group by { c: distinct(first(tags, st > 200).sd), e: min(first(tags, st > 200).dd), x: max(last(tags, st < 10).dd) }),
     rows(q | group by k: 1 { c: distinct(first(tags, st > 200).sd), e: min(first(tags, st > 200).dd), x: max(last(tags, st < 10).dd) }))
END
for th in 1 2 3; do COMB_THREADS=$th "$COMB" q.comb >out$th || exit 1; done
cmp out1 out2 && cmp out1 out3 && cat out1
