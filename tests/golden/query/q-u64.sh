# u64 values above 2^63-1 (which comb's ints cannot hold) read as the
# nearest float: positive, ordered, comparable with ints and floats, in the
# scan's where (the kernels compare the column unsigned) and in row steps.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u64\ntagset n: u32\ntag x: u64\n' >u.schema
"$COMB" store create s --schema u.schema --partition-key id >/dev/null || exit 1
printf '%s\t%s\t%s\n' 1 1 1 9223372036854775807 2 18446744073709551615 \
    9223372036854775808 3 5 18446744073709551615 4 9223372036854775808 \
    12345678901234567890 5 7 >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("s")
let a = rows(ds)
print(a | sort id | select id, n)
fn both(name, n, m) { if n == m { print(name, n) } else { print(name, n, "DIFFERS from", m) } }
both("gt-max-int", ds | where id > 9223372036854775807 | count, a | where id > 9223372036854775807 | count)
both("gt-float", ds | where id > 1.0e19 | count, a | where id > 1.0e19 | count)
both("ge-1", ds | where id >= 1 | count, a | where id >= 1 | count)
both("lt-0", ds | where id < 0 | count, a | where id < 0 | count)
both("le-int", ds | where id <= 9223372036854775807 | count, a | where id <= 9223372036854775807 | count)
both("eq-float", ds | where id == 1.8446744073709552e19 | count, a | where id == 1.8446744073709552e19 | count)
both("eq-1.0", ds | where id == 1.0 | count, a | where id == 1.0 | count)
both("tag", ds | where x > 9223372036854775807 | count, a | where any(tags, x > 9223372036854775807) | count)
print(ds | where x > 1.0e19 | select n, id)
print(type(a[0].id), type(rows(a | where n == 4 | select id)[0].id))
# A comb function called with the column gets what rows have: a float.
fn pos(v) { return v > 0 }
both("call", ds | where pos(id) | count, a | where pos(id) | count)
both("call-tag", ds | where any(tags, pos(x)) | count, a | where any(tags, pos(x)) | count)
END
