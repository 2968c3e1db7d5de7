# NaN in a float column follows comb's rules in the scan as in row steps:
# it equals nothing, itself included (nan != nan is true), orders with
# nothing, and is in no set (`in` is a set's equality: no NaN key); an int
# no float equals is in no float set either.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' || exit 1
let st = create_store("n", schema("key id: u32; tagset f: f64; tagset h: f32; tag g: f64"), {partitions: 2})
let nan = float("nan")
let inf = float("inf")
let vs = [nan, 1.5, 0.0, -0.0, inf, -inf, nan, 9007199254740992.0]
let a = []
for i in 0..len(vs) { push(a, {id: i, f: vs[i], h: vs[i], tags: [{g: vs[i]}, {g: 2.0}]}) }
load(st, a)
END
{
    echo 'let ds = open("n")'
    echo 'let r = rows(ds)'
    echo 'let nan = float("nan")'
    echo 'let inf = float("inf")'
    echo 'let n = 0'
    echo 'fn chk(what, x, y) { n += 1; if x != y { print(what, x, "DIFFERS from", y) } }'
    for f in f h; do
        for e in "$f != $f" "$f == $f" "$f < $f" "$f >= $f" "$f + 0 != $f" "$f != $f * 1" "$f == nan" "$f != nan" \
                 "$f < nan" "$f >= nan" "$f != 1.5" "!($f == 1.5)" "$f <= inf" "$f > -inf" "between($f, -inf, inf)" \
                 "$f == 0" "$f != 0" "$f in [nan]" "$f in [nan, 1.5]" "!($f in [nan])" "$f in [0, 2]" \
                 "$f in [9007199254740993]" "$f in [9007199254740992]" "$f + 0 in [nan, 1.5]" "$f == 9007199254740993"; do
            echo "chk(\"$e\", ds | where $e | count, r | where $e | count)"
        done
    done
    for e in "g != g" "g == g" "g != nan" "g in [nan, 2]" "g < inf"; do
        echo "chk(\"any $e\", ds | where $e | count, r | where any(tags, $e) | count)"
        echo "chk(\"tags $e\", ds | tags | where $e | count, r | tags | where $e | count)"
    done
    for e in "first(tags, true).g != first(tags, g > 1).g" "first(tags, true).g == first(tags, true).g"; do
        echo "chk(\"$e\", ds | where $e | count, r | where $e | count)"
    done
    echo 'print(n, "comparisons")'
} >q.comb
"$COMB" q.comb
