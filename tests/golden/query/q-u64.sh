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
# Arithmetic on them follows comb's rules: the float they read as, then
# float arithmetic (int arithmetic for the others): the values a function
# is called with, conditions, sort and group keys, aggregates and sets are
# those of the row steps over the same rows; and stat's min, max and mean.
"$COMB" - <<'END'
let ds = open("s")
let a = rows(ds)
let got = []
fn keep(v) { push(got, v); return true }
fn keep2(v, w) { push(got, v); push(got, w); return true }
fn seen() { let s = str(got); while len(got) > 0 { pop(got) } return s }
fn both(name, n, m) { if n == m { print(name, n) } else { print(name, n, "DIFFERS from", m) } }
ds | where keep(id - 1) | count
let s = seen()
a | where keep(id - 1) | count
both("call-sub", s, seen())
ds | where keep(id / 4 * 2) | count
s = seen()
a | where keep(id / 4 * 2) | count
both("call-mul-div", s, seen())
ds | where keep2(-id, id % 1000) | count
s = seen()
a | where keep2(-id, id % 1000) | count
both("call-neg-mod", s, seen())
ds | where any(tags, keep(x - n)) | count
s = seen()
a | where any(tags, keep(x - n)) | count
both("call-tag", s, seen())
ds | where keep(first(tags, true).x - 1) | count
s = seen()
a | where keep(first(tags, true).x - 1) | count
both("call-first", s, seen())
both("where-sub", ds | where id - 1 > 9223372036854775000 | count, a | where id - 1 > 9223372036854775000 | count)
both("where-cmp", ds | where id > n * 2 | count, a | where id > n * 2 | count)
both("where-float", ds | where id * 0.5 > 5.0e18 && keep(id / 2.0) | count, a | where id * 0.5 > 5.0e18 | count)
s = seen()
a | where id * 0.5 > 5.0e18 && keep(id / 2.0) | count
both("call-float", s, seen())
both("where-neg", ds | where -id < -1.0e19 | count, a | where -id < -1.0e19 | count)
both("where-mod", ds | where id % 2 == 0 | count, a | where id % 2 == 0 | count)
both("in", ds | where id in [1.8446744073709552e19, 1, 9223372036854775807] | count,
     a | where id in [1.8446744073709552e19, 1, 9223372036854775807] | count)
both("in-sub", ds | where id - 1 in [1.8446744073709552e19, 0] | count, a | where id - 1 in [1.8446744073709552e19, 0] | count)
both("regex", ds | where id ~ /^1/ | count, a | where id ~ /^1/ | count)
both("sort", str(rows(ds | sort id - 1 desc | select id)), str(rows(a | sort id - 1 desc | select id)))
both("sort-take", str(rows(ds | sort id | take 3 | select id)), str(rows(a | sort id | take 3 | select id)))
both("group", str(rows(ds | group by k: id - 1 { n: count() })), str(rows(a | group by k: id - 1 { n: count() })))
both("group-id", str(rows(ds | group by id { n: count() })), str(rows(a | group by id { n: count() })))
let aggs = ds | group by { s: sum(id), s1: sum(id - 1), lo: min(id), hi: max(id), hi1: max(id - 1), m: avg(id), d: distinct(id) }
both("aggs", str(aggs), str(a | group by { s: sum(id), s1: sum(id - 1), lo: min(id), hi: max(id), hi1: max(id - 1), m: avg(id), d: distinct(id) }))
both("select", str(rows(ds | select v: id - 1, w: id / 3)), str(rows(a | select v: id - 1, w: id / 3)))
try { ds | where hour(id) > 1 | count } catch e { print(e) }
fn mmm(st) { let o = []; for c in st { if c.field == "id" { push(o, [c.min, c.max, c.mean]) } } return str(o) }
both("stat", mmm(ds | stat), mmm(a | stat))
END
