# A number field compared with a number constant of the other kind (an int
# field and a float, a float field and an int beyond 2^53) compares exactly,
# as comb does (9007199254740993 == 9007199254740992.0 is false): in the
# scan's fast path, its zone-map ranges, the key's binary search and
# partition elimination, and in its general path, the same counts as the
# row steps over the same rows.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' || exit 1
let st = create_store("z", schema("key k: i64; tagset x: i64; tagset f: f64; tagset u: u8; tagset s: i32; tag g: i16"),
                      {partitions: 4})
let a = []
for k in 0..1000 {
    push(a, {k: k, x: 9007199254740000 + k * 2, f: 9007199254740000.0 + k * 4, u: k % 256, s: k - 500,
             tags: [{g: k - 500}, {g: 3}]})
}
load(st, a, {block_size: 4096})
END
# field: constants; each against each operator, in the fast path (field OP
# c), the general one (field + 0 OP c) and between.
consts='k: 500.0 500.5 -0.5 999.0 1e300 -1e300 9.223372036854775808e18 -9.223372036854775808e18 inf -inf
x: 9007199254740992.0 9007199254740994.0 9007199254740000.0 9007199254741999.0 9.0e15 1.0e16 9007199254740993 9007199254740991 9.223372036854775808e18
f: 9007199254740993 9007199254740995 9007199254740992 9007199254740996.0 9007199254741997 9223372036854775807
u: 3.0 3.5 -0.5 255.0 255.5 256.0 -1e20 1e20
s: -0.5 0.5 -500.0 -500.5 499.0 499.5 2147483647.5 -2147483648.5'
{
    echo 'let ds = open("z")'
    echo 'let r = rows(ds)'
    echo 'let n = 0'
    echo 'let inf = float("inf")'
    echo 'fn chk(what, x, y) { n += 1; if x != y { print(what, x, "DIFFERS from", y) } }'
    echo "$consts" | while read -r field cs; do
        field=${field%:}
        for c in $cs; do
            for op in '==' '!=' '<' '<=' '>' '>='; do
                for e in "$field $op $c" "$field + 0 $op $c"; do
                    echo "chk(\"$e\", ds | where $e | count, r | where $e | count)"
                done
            done
            echo "chk(\"between $field $c\", ds | where between($field, $c, $c) | count, r | where between($field, $c, $c) | count)"
        done
    done
    for c in 2.5 3.0 -0.5 -500.0 -500.5; do
        for op in '==' '!=' '<' '>='; do
            echo "chk(\"any g $op $c\", ds | where g $op $c | count, r | where any(tags, g $op $c) | count)"
            echo "chk(\"tags g $op $c\", ds | tags | where g $op $c | count, r | tags | where g $op $c | count)"
            echo "chk(\"first g $op $c\", ds | where first(tags, true).g $op $c | count, r | where first(tags, true).g $op $c | count)"
        done
    done
    echo 'print(n, "comparisons")'
} >q.comb
"$COMB" q.comb
# The ranges a float constant gives are the ints that satisfy it: no block
# or partition is read for a comparison nothing can satisfy, and none that
# could is skipped (the counts above).
"$COMB" - <<'END'
let ds = open("z")
fn ex(e) { print(e.where, e.zone_ranges, e.partitions_read, e.blocks_read) }
ex(ds | explain where x >= 9007199254740992.0 | count)
ex(ds | explain where x > 9007199254740993.5 && x < 9007199254740996.5 | count)
ex(ds | explain where k == 500.0 | count)
ex(ds | explain where k == 500.5 | count)
ex(ds | explain where u > 2.5 && u <= 7.5 | count)
ex(ds | explain where f > 9007199254740993 | count)
END
