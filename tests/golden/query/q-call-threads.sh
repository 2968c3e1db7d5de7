# Which comb calls keep a scan on one thread. The scan's workers evaluate
# the wheres, the sort and group keys and the aggregates' arguments: a call
# there asked as a condition (a where's, a quantifier's) runs the scan on
# the VM's thread alone (threads 1). A call for a value (a sort or group
# key, a comparison's side) makes its step a row step; a group's items
# around their aggregates, and every row step after the scan (select, a
# where after take or select), run on the VM's thread after the scan: the
# scan stays parallel (threads 4, one per partition). The results are the
# same with COMB_THREADS=1.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
cat > q.comb <<'END'
let ds = open("calls")
fn short(d) { return d < 300 }
fn big(n) { return n > 150 }
fn low(s) { return s < "2015550100" }
# a query's threads, how many rows, the first and the last
fn show(name, q) {
    let r = rows(q)
    print(name, (q | explain).threads, len(r), str(r[0]), str(r[len(r) - 1]))
}
# after the scan: parallel
show("select", ds | where bsid == 34 | select onum, ts, s: short(dur))
show("group-items", ds | group by state { n: count(), big: big(count()), both: big(count()) && short(min(dur)) })
show("take-where", ds | take 40 | where short(dur) | select onum, ts)
show("select-where", ds | select onum, ts, dur | where short(dur) | take 5)
show("sort-take-select", ds | sort dur desc, onum | take 3 | select onum, s: short(dur))
show("sort-key", ds | sort short(dur), onum | take 3 | select onum, dur)
show("group-key", ds | group by s: short(dur) { n: count() })
show("where-value", ds | where short(dur) == true && state == "open")
# in the scan: one thread
show("where", ds | where short(dur) && state == "open")
show("tags-where", ds | tags | where low(dnum))
show("matcher", ds | where dnum in matcher(low) | select onum, ts)
show("agg-arg", ds | group by state { n: sum(count(tags, low(dnum))) })
END
COMB_THREADS=4 "$COMB" q.comb > four || exit 1
COMB_THREADS=1 "$COMB" q.comb > one || exit 1
cat four
# the same rows either way (the threads column aside)
cut -d' ' -f1,3- four > a && cut -d' ' -f1,3- one > b && cmp a b && echo "same with one thread"
