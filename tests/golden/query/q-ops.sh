# The operators over a store (the scan's kernels), over rows(...) (the row
# steps) and in comb code (the VM) are one definition (vm/ops.h): the same
# values and the same errors, in the same words, from the same row. Each
# case below once differed.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key k: u32\ntagset t: time\ntag id: u32; tag a: i64; tag b: i32; tag sys: enum(RICS, BILL)\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key k --partitions 1 >/dev/null || exit 1
printf '%s\t%s\t%s\t%s\t%s\t%s\n' \
    1 -9223372036854775808 1 -9223372036854775808 -1 RICS \
    1 -9223372036854775808 2 0 0 BILL \
    2 -86401 3 9223372036854775807 2 BILL \
    2 -86401 4 5 0 RICS >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("s")
let rs = rows(ds)
let rt = rows(ds | tags)
fn answer(f) { try { return str(f()) } catch e { return "error: " + str(e) } }
fn show(name, store, rows, vm) {
    let a = answer(store)
    let b = answer(rows)
    let c = answer(vm)
    if a == b && b == c { print(name, a) } else { print(name, "DIFFER:", a, "|", b, "|", c) }
}
fn each(f) { let out = []; for r in rt { push(out, f(r)) } return out }
fn xs(q) { let out = []; for r in rows(q) { push(out, r.x) } return out }
# overflow: one message for + - * / % and unary -, wherever it happens
show("a + 1", fn() { return xs(ds | tags | group by id { x: sum(a + 1) }) },
     fn() { return xs(rt | group by id { x: sum(a + 1) }) }, fn() { return each(fn(r) { return r.a + 1 }) })
show("a * 2", fn() { return xs(ds | tags | group by id { x: sum(a * 2) }) },
     fn() { return xs(rt | group by id { x: sum(a * 2) }) }, fn() { return each(fn(r) { return r.a * 2 }) })
show("a / b", fn() { return xs(ds | tags | group by id { x: sum(a / b) }) },
     fn() { return xs(rt | group by id { x: sum(a / b) }) }, fn() { return each(fn(r) { return r.a / r.b }) })
show("a % b", fn() { return xs(ds | tags | group by id { x: sum(a % b) }) },
     fn() { return xs(rt | group by id { x: sum(a % b) }) }, fn() { return each(fn(r) { return r.a % r.b }) })
show("-a", fn() { return xs(ds | tags | group by id { x: sum(-a) }) },
     fn() { return xs(rt | group by id { x: sum(-a) }) }, fn() { return each(fn(r) { return -r.a }) })
# the first row's error, though a later row fails at an earlier node
show("(1 / b) + a * a", fn() { return xs(ds | tags | group by id { x: sum((1 / b) + a * a) }) },
     fn() { return xs(rt | group by id { x: sum((1 / b) + a * a) }) },
     fn() { return each(fn(r) { return (1 / r.b) + r.a * r.a }) })
show("a * 2 / b", fn() { return xs(ds | tags | group by id { x: sum(a * 2 / b) }) },
     fn() { return xs(rt | group by id { x: sum(a * 2 / b) }) }, fn() { return each(fn(r) { return r.a * 2 / r.b }) })
# day() and hour() at the ends of the ints (day of INT64_MIN overflows)
show("hour(t)", fn() { return xs(ds | group by k { x: sum(hour(t)) }) },
     fn() { return xs(rs | group by k { x: sum(hour(t)) }) }, fn() { return [8, 23] })
show("day(t)", fn() { return xs(ds | group by k { x: sum(day(t)) }) },
     fn() { return xs(rs | group by k { x: sum(day(t)) }) }, fn() { return error("integer overflow") })
# a quantifier stops at the tag that decides it: a later tag's error is never met
show("any(tags, b < 0 || b == 2 || 1 / b > 0)", fn() { return ds | where any(tags, b < 0 || b == 2 || 1 / b > 0) | count },
     fn() { return rs | where any(tags, b < 0 || b == 2 || 1 / b > 0) | count }, fn() { return 2 })
show("first(tags, b < 0 || b == 2 || 1 / b > 0).id", fn() { return xs(ds | group by k { x: min(first(tags, b < 0 || b == 2 || 1 / b > 0).id) }) },
     fn() { return xs(rs | group by k { x: min(first(tags, b < 0 || b == 2 || 1 / b > 0).id) }) },
     fn() { return [1, 3] })
show("all(tags, b > 0 || 1 / b > 0)", fn() { return ds | where all(tags, b > 0 || 1 / b > 0) | count },
     fn() { return rs | where all(tags, b > 0 || 1 / b > 0) | count }, fn() { return error("division by zero") })
# a string that is no symbol of an enum field: equal to none of its values
show("first(tags, sys == \"NOPE\")", fn() { return ds | where first(tags, sys == "NOPE").id > 0 | count },
     fn() { return rs | where first(tags, sys == "NOPE").id > 0 | count }, fn() { return 0 })
show("sys != \"NOPE\"", fn() { return ds | tags | where sys != "NOPE" | count },
     fn() { return rt | where sys != "NOPE" | count }, fn() { return 4 })
show("sys in [\"RICS\", \"NOPE\"]", fn() { return ds | tags | where sys in ["RICS", "NOPE"] | count },
     fn() { return rt | where sys in ["RICS", "NOPE"] | count }, fn() { return 2 })
# an array's where/select/take go a row at a time, as a store's: rows past the take are not computed
show("select 1 / b | take 1", fn() { return rows(ds | tags | select x: 1 / b | take 1) },
     fn() { return rows(rt | select x: 1 / b | take 1) }, fn() { return [{x: 1 / rt[0].b}] })
# a comparison's type error in the VM's words
show("\"x\" > 1", fn() { return [{v: "x"}] | where v > 1 | count },
     fn() { return [{v: "x"}] | where v > 1 | count }, fn() { let v = "x"; return v > 1 })
show("-\"x\"", fn() { return [{v: "x"}] | select n: -v | count },
     fn() { return [{v: "x"}] | select n: -v | count }, fn() { let v = "x"; return -v })
END
