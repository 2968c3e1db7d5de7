# skip N leaves out the first N rows (a page with take, also after sort);
# distinct (and select distinct) drops repeated rows, keeping the first;
# a pipeline inside a query (onum in (ds | where ... | select onum)) is
# computed where the query is written, as through a let.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let a = rows(ds)
print(rows(ds | skip 3 | take 2 | select onum, dur), rows(a | skip 3 | take 2 | select onum, dur))
print(ds | skip 590 | count, ds | where dur > 800 | skip 60 | count, ds | skip 1000 | count)
print(rows(ds | sort dur desc | skip 2 | take 3 | select dur))
print(rows(ds | select distinct state), ds | select state | distinct | count)
print(rows(ds | select distinct state, long: dur > 450 | sort state, long))
print(rows([{x: 1}, {x: 1}, {x: 2}, {x: 1.0}] | distinct), rows([{x: 1}, {x: 2}] | skip 1))
let distinct = 5
print(rows(ds | select distinct | take 1))
try { ds | skip -1 } catch e { print(e) }
let s = ds | where dur > 890 | select onum
print(ds | where onum in (ds | where dur > 890 | select onum) | count, ds | where onum in s | count)
print(ds | where onum in (ds | where dur > 890 | select onum) && dur < 100 | count)
END
