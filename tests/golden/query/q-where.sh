# where: comparisons, &&, ||, !, in (array, map, range), ~ and !~, between,
# time literals and functions; Gecko's own query as written. Each count is
# computed twice, by the scan (the store) and row by row (its rows as an
# array), and they must agree.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let a = rows(ds)
let watch = [7325551212, 7325551230, 42]
let states = {"open": 1, "closed": 1}
fn both(name, n, m) { if n == m { print(name, n) } else { print(name, n, "DIFFERS from", m) } }
both("all", ds | count, a | count)
both("gecko", ds | where (onum == 7325551212) && (bsid == 34) | count, a | where (onum == 7325551212) && (bsid == 34) | count)
both("ne", ds | where bsid != 34 | count, a | where bsid != 34 | count)
both("lt-le", ds | where dur < 100 || dur <= 101 | count, a | where dur < 100 || dur <= 101 | count)
both("gt-ge", ds | where dur > 800 && dur >= 801 | count, a | where dur > 800 && dur >= 801 | count)
both("not", ds | where !(bsid == 0) | count, a | where !(bsid == 0) | count)
both("in-array", ds | where onum in watch | count, a | where onum in watch | count)
both("in-map", ds | where state in states | count, a | where state in states | count)
both("in-range", ds | where dur in 100..200 | count, a | where dur in 100..200 | count)
both("between", ds | where between(dur, 100, 200) | count, a | where between(dur, 100, 200) | count)
both("regex", ds | where onum ~ /1[23]$/ | count, a | where onum ~ /1[23]$/ | count)
both("not-regex", ds | where state !~ "^o" | count, a | where state !~ "^o" | count)
both("enum", ds | where state == "billed" | count, a | where state == "billed" | count)
both("enum-lt", ds | where state < "closed" | count, a | where state < "closed" | count)
both("time", ds | where ts >= 2026-12-01T12:00 && ts < 2026-12-02 | count, a | where ts >= 2026-12-01T12:00 && ts < 2026-12-02 | count)
both("day", ds | where day(ts) == 2026-12-01 | count, a | where day(ts) == 2026-12-01 | count)
both("hour", ds | where hour(ts) == 13 | count, a | where hour(ts) == 13 | count)
both("arith", ds | where dur / 60 == 7 && (dur * 2 + 1) % 3 == 0 | count, a | where dur / 60 == 7 && (dur * 2 + 1) % 3 == 0 | count)
both("float", ds | where dur > 450.5 | count, a | where dur > 450.5 | count)
both("file", open("calls.ts") | where bsid == 34 | count, a | where bsid == 34 | count)
let limit = 300
both("variable", ds | where dur < limit | count, a | where dur < limit | count)
END
