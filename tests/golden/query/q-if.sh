# Conditional values in queries: if-expressions in select, group keys,
# where, sort and aggregates, over a store (the scan's kernels) and over
# arrays (row steps), giving the same rows; a branch not taken is not
# computed; && and || give the operand that decided, as in comb.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let a = rows(ds)
let kind = "group by k: if dur > 600 { \"long\" } else if dur > 60 { \"mid\" } else { \"short\" }"
print(ds | group by k: if dur > 600 { "long" } else if dur > 60 { "mid" } else { "short" } { n: count(), s: sum(dur) })
print(str(ds | group by k: if dur > 600 { "long" } else if dur > 60 { "mid" } else { "short" } { n: count() }) ==
      str(a | group by k: if dur > 600 { "long" } else if dur > 60 { "mid" } else { "short" } { n: count() }))
print(ds | where (if state == "open" { dur } else { 0 }) > 800 | count,
      ds | where state == "open" && dur > 800 | count)
print(ds | where if bsid == 0 { dur < 100 } else { false } | count, ds | where bsid == 0 && dur < 100 | count)
print(ds | group by { z: sum(if bsid == 0 { 1 } else { 0 }), f: sum(if bsid == 0 { 0.5 } else { 0 }) })
print(rows(ds | sort (if bsid == 0 { 0 } else { 1 }), onum, ts | select onum, bsid | take 3))
# the branch not taken is not computed: no division by zero
print(ds | group by r: if bsid != 0 { 170 / bsid } else { -1 } | take 3)
print(rows(a | select r: if bsid != 0 { 170 / bsid } else { -1 } | take 3))
# nil on one side: a missing value; ints and floats: floats
print(ds | group by k: if dur > 450 { nil } else { "short" } { n: count() })
print(ds | group by k: if dur > 450 { 1 } else { 0.5 } { n: count() })
# times stay times
print(rows(ds | select ts, t: if dur > 0 { ts } else { nil } | take 1))
# && and || give the operand that decided, as in comb
print(rows(ds | select onum, x: bsid || 5, y: bsid && dur, z: bsid == 0 || dur | take 3))
print(rows([{x: 1}, {x: nil}, {x: false}] | select y: x || "default", z: x && "yes"))
print(ds | group by s: first(tags, sys == "BILL").dnum || "none" { n: count() } | take 2)
print((ds | explain where (if dur > 600 { bsid } else { 0 }) > 50 && (bsid || 1) > 0).where)
try { print(ds | group by k: if dur > 1 { "a" } else { 1 }) } catch e { print(e) }
try { print(ds | where if dur > 1 { 1 } else { 0 } | count) } catch e { print(e) }
END
