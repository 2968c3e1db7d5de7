# Any function may be called where a query wants a value, not only as a
# condition: in a select, as a group or sort key, around an aggregate, as
# a comparison's side in a where (LANGUAGE.md's `big: f(count())`). Each
# result is checked against the same written without the call; a call
# asked as a condition must still give true or false.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 3000 --seed 5 --volumes 2 --partitions 2 >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("calls")
fn check(name, a, b) { if a == b { print(name, "ok") } else { print(name, a, "DIFFERS:", b) } }
fn f(n) { return n * 2 }
fn area(s) { return sub(s, 0, 3) }
print(rows(ds | group by state { n: count(), big: f(count()) }))
print(rows(ds | tags | select s: lower(str(sys)), d: sub(dnum, 0, 3) | take 2))
let by_area = rows(ds | tags | group by a: area(dnum) { n: count() })
check("group-key", len(by_area), len(rows(ds | tags | select a: sub(dnum, 0, 3) | group by a)))
check("group-key-n", by_area[0].n, ds | tags | where dnum ~ ("^" + by_area[0].a) | count)
check("where-value", ds | tags | where area(dnum) == "201" | count, ds | tags | where dnum ~ /^201/ | count)
check("where-mixed", ds | where lower(str(state)) == "open" && cid < 1000 | count,
      ds | where state == "open" && cid < 1000 | count)
check("agg-arg", str(rows(ds | tags | group by sys { t: sum(len(dnum)) })),
      str(rows(ds | tags | group by sys { t: count() * 10 })))
check("sort-key", str(rows(ds | tags | sort area(dnum) desc, onum, cid | take 3 | select onum, cid)),
      str(rows(ds | tags | select a: sub(dnum, 0, 3), onum, cid | sort a desc, onum, cid | take 3 | select onum, cid)))
let e = ds | where lower(str(state)) == "open" && onum == 2014024054 | explain
print(e.partitions_read, e.where, e.then)
try { ds | where area(dnum) | count } catch e { print(e) }
END
