# join ROWS on f, ...: an equi-join of the rows with a small side (a query
# or an array of maps): a row per pair with equal keys, the row's fields
# then the other's it lacks; a nil key matches nothing. Checked against
# the same join written as loops in comb.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let file = open("calls.ts")
fn loops(left, right, keys) {
    let n = 0
    for a in left {
        for b in right {
            let same = true
            for k in keys { if a[k] == nil || a[k] != b[k] { same = false } }
            if same { n += 1 }
        }
    }
    return n
}
let owners = [{dnum: "2015550017", who: "ann"}, {dnum: "2015550017", who: "al"},
              {dnum: "2015550350", who: "bob"}, {dnum: nil, who: "nobody"}]
print(rows(ds | tags | join owners on dnum | select onum, sys, dnum, who | sort onum, who))
print(ds | tags | join owners on dnum | count, loops(rows(ds | tags), owners, ["dnum"]))
print(rows(file | tags | join owners on dnum | group by who { n: count() }))
# a query on the right, two keys
let busy = ds | where dur > 800 | select onum, bsid, long: true
print(ds | join busy on onum, bsid | count, loops(rows(ds), rows(busy), ["onum", "bsid"]))
print(rows(ds | join busy on onum, bsid | select onum, dur, long | sort dur desc | take 2))
# the other's field the row has is the row's
print(rows([{k: 1, v: "left"}] | join [{k: 1, v: "right", w: 2}] on k))
try { ds | join 5 on onum | count } catch e { print(e) }
try { ds | join [{a: 1}] on onum | count } catch e { print(e) }
try { [{a: 1}] | join [{onum: 1}] on onum | count } catch e { print(e) }
END
"$COMB" -e 'open("calls") | join [{onum: 1}] onum' 2>&1
"$COMB" -e 'open("calls") | join [7] on onum' 2>&1
exit 0
