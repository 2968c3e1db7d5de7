# stat's distinct of fields of 16 bits or less (u8, i8, u16, i16, bool,
# enum) keeps a bit per value seen and adds each to its HyperLogLog once at
# the end: the estimates are those of adding every value as it comes (this
# output was made that way), negative values included, on 1 and 3 threads.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u64\ntagset a: i8\ntagset b: i16\ntagset ok: bool\ntag s: enum(x, y, z)\ntag u: u8\ntag w: u16\ntag v: i16\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key id --partitions 3 >/dev/null || exit 1
awk 'BEGIN { srand(9); split("x y z", e, " ")
    for (i = 0; i < 20000; i++) {
        a = int(rand() * 256) - 128; b = int(rand() * 3000) - 1500; ok = rand() < 0.5 ? "true" : "false"
        for (t = int(rand() * 3); t >= 0; t--)
            printf "%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\n", i, a, b, ok, e[1 + int(rand() * 3)], int(rand() * 200),
                int(rand() * 65536), int(rand() * 40000) - 20000
    } }' >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
for th in 1 3; do
    COMB_THREADS=$th "$COMB" -e 'let q = open("s")
for r in q | stat { print(r) }
for r in q | tags | stat { print(r) }' >out$th || exit 1
done
cmp out1 out3 && cat out1
