# NaN in sorts, group keys and distinct: one value, after every number
# (first in desc), in the scan and in the row steps over the same rows
# alike; whatever its sign bit (the load reads "-nan" as a NaN with it,
# and inf - inf makes one). min and max take the same order; stat's min
# and max skip NaN and its distinct counts it once.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u32\ntagset f: f64\n' >u.schema
"$COMB" store create s --schema u.schema --partition-key id >/dev/null || exit 1
printf '%s\t%s\n' 1 2.5 2 nan 3 1.0 4 -nan 5 inf 6 0.5 7 nan 8 -inf 9 0.0 10 1.0 >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("s")
let a = rows(ds)
fn both(name, n, m) { if n == m { print(name, n) } else { print(name, n, "DIFFERS from", m) } }
both("sort", str(rows(ds | sort f | select f)), str(rows(a | sort f | select f)))
both("sort-desc", str(rows(ds | sort f desc | select f)), str(rows(a | sort f desc | select f)))
both("sort-ids", str(rows(ds | sort f, id | select id)), str(rows(a | sort f, id | select id)))
both("sort-desc-ids", str(rows(ds | sort f desc, id desc | select id)), str(rows(a | sort f desc, id desc | select id)))
both("top", str(rows(ds | sort f desc, id | take 3 | select id)), str(rows(a | sort f desc, id | take 3 | select id)))
both("group", str(ds | group by f), str(a | group by f))
both("group-computed", str(ds | group by k: f * 2 - f { n: count() }), str(a | group by k: f * 2 - f { n: count() }))
both("group-inf", str(ds | group by k: f - f { n: count() }), str(a | group by k: f - f { n: count() }))
both("aggs", str(ds | group by { d: distinct(f), lo: min(f), hi: max(f), d2: distinct(f - f) }),
     str(a | group by { d: distinct(f), lo: min(f), hi: max(f), d2: distinct(f - f) }))
both("per-group", str(ds | group by big: id > 5 { d: distinct(f), hi: max(f) }),
     str(a | group by big: id > 5 { d: distinct(f), hi: max(f) }))
fn col(st) { for c in st { if c.field == "f" { return str([c.min, c.max, c.distinct]) } } }
both("stat", col(ds | stat), col(a | stat))
END
# Rows of comb values: NaN among nils, ints and strings, several keys.
"$COMB" - <<'END'
let nan = float("nan")
let inf = float("inf")
let a = [{f: 2.5}, {f: nan}, {f: 1.0}]
print(rows(a | sort f), rows(a | sort f desc))
print(a | group by f)
print([{f: nan}, {f: 1.0}] | group by { d: distinct(f) })
let b = [{f: nan, g: 1}, {f: "x", g: 2}, {f: inf - inf, g: 1}, {g: 3}, {f: 2, g: 2}, {f: nan, g: 2}, {f: -inf, g: 1}]
print(rows(b | sort f, g desc))
print(b | group by f, g)
print(b | group by g { d: distinct(f), lo: min(f), hi: max(f) })
print(b | group by { d: distinct(f) })
print(b | stat)
END
