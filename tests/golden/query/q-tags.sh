# Quantifiers over a tagset's tags (any, all, count, first, last) and the
# tags verb (a row per tag, with its tagset's fields), by scan and row by row.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let a = rows(ds)
fn both(name, n, m) { if str(n) == str(m) { print(name, n) } else { print(name, n, "DIFFERS from", m) } }
both("any", ds | where any(tags, sys == "RICS" && status == 1) | count, a | where any(tags, sys == "RICS" && status == 1) | count)
both("all", ds | where all(tags, status > 0) | count, a | where all(tags, status > 0) | count)
both("count", ds | where count(tags, sys != "BILL") >= 2 | count, a | where count(tags, sys != "BILL") >= 2 | count)
both("count-all", ds | where count(tags) == 0 | count, a | where count(tags) == 0 | count)
both("first", ds | where first(tags, status == 2).sys == "SWITCH" | count, a | where first(tags, status == 2).sys == "SWITCH" | count)
both("last", ds | where last(tags, true).dnum ~ /7$/ | count, a | where last(tags, true).dnum ~ /7$/ | count)
both("nil", ds | where first(tags, status == 9).sys == nil | count, a | where first(tags, status == 9).sys == nil | count)
both("tagset-in-tag", ds | where any(tags, status == 1 && bsid == 17) | count, a | where any(tags, status == 1 && bsid == 17) | count)
both("tags", ds | tags | count, a | tags | count)
both("tags-where", ds | where bsid == 34 | tags | where sys == "BILL" | count, a | where bsid == 34 | tags | where sys == "BILL" | count)
both("tags-group", ds | tags | group by sys, status { n: count() }, a | tags | group by sys, status { n: count() })
both("where-tags-count", ds | where bsid == 34 | tags | count, a | where bsid == 34 | tags | count)
both("where-tags-group", str(rows(ds | where bsid == 34 | tags | group by sys)), str(rows(a | where bsid == 34 | tags | group by sys)))
print(ds | where onum == 7325551212 | tags | sort ts, dnum | take 3 | select onum, sys, status, dnum)
END
