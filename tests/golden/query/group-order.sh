# The groups of a scan's group by come out in key order, sorted by a radix
# sort of their keys' first 16 bytes and then by the whole key where those
# tie: the same as the row steps' group by over the same rows, for keys of
# strings that share long prefixes, negative ints, floats, u64s above the
# ints, nils (first over tags) and several keys together.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u64\ntagset name: char[24]\ntagset n: i32\ntagset x: f64\ntagset big: u64\ntag st: u8\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key id --partitions 3 >/dev/null || exit 1
awk 'BEGIN { srand(5)
    for (i = 0; i < 5000; i++) {
        nt = int(rand() * 3)
        line = sprintf("%d\tcustomer-number-%06d%s\t%d\t%s\t%s", i, int(rand() * 300), (rand() < 0.5 ? "a" : ""),
            int(rand() * 400) - 200, int(rand() * 50) / 4 - 6,
            rand() < 0.3 ? "1844674407370955" sprintf("%04d", int(rand() * 1000)) : int(rand() * 100))
        if (nt == 0) print line "\t"
        for (t = 0; t < nt; t++) printf "%s\t%d\n", line, int(rand() * 256)
    } }' >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
"$COMB" - <<'END'
let q = open("s")
let a = rows(q)
fn both(name, x, y) {
    if str(x) == str(y) { print(name, len(x), "groups, first", x[0], "last", x[len(x) - 1]) } else { print(name, "DIFFERS", x, y) }
}
both("name", rows(q | group by name { c: count() }), rows(a | group by name { c: count() }))
both("n", rows(q | group by n { c: count() }), rows(a | group by n { c: count() }))
both("x", rows(q | group by x { c: count() }), rows(a | group by x { c: count() }))
both("big", rows(q | group by big { c: count() }), rows(a | group by big { c: count() }))
both("st", rows(q | group by s: first(tags, st > 100).st, big { c: count() }), rows(a | group by s: first(tags, st > 100).st, big { c: count() }))
both("name-n", rows(q | group by name, n { c: count() }), rows(a | group by name, n { c: count() }))
END
