# The aggregates of the analyst's day: count(PRED), sum and avg of a bool
# (how many, what fraction true), median, quantile(e, q), variance and
# stddev (sample; nil below two values), over a store's scan and over the
# same rows in row steps (equal answers), per group and for no group at
# all, over tags, with one thread and with several (ints' variance is
# exact, so the same in any order), many groups (the scan's group columns
# grow and the workers' groups merge); and the errors of their arguments.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
cat > q.comb <<'END'
let ds = open("calls")
let a = rows(ds)
let t = rows(ds | tags)
fn same(x, y) { return str(x) == str(y) }
let g1 = ds | group by state { n: count(), long: count(dur > 600), busy: sum(dur > 450), part: avg(dur > 450),
                               mid: median(dur), p90: quantile(dur, 0.9), v: variance(dur), sd: stddev(dur) }
print(rows(g1))
print(same(rows(g1), a | group by state { n: count(), long: count(dur > 600), busy: sum(dur > 450), part: avg(dur > 450),
                                         mid: median(dur), p90: quantile(dur, 0.9), v: variance(dur), sd: stddev(dur) }))
let g2 = ds | tags | group by sys { ok: count(status == 0), q0: quantile(status, 0), q1: quantile(status, 1),
                                    m: median(bsid), sd: stddev(status), half: avg(status > 0) }
print(rows(g2))
print(same(rows(g2), t | group by sys { ok: count(status == 0), q0: quantile(status, 0), q1: quantile(status, 1),
                                       m: median(bsid), sd: stddev(status), half: avg(status > 0) }))
print(rows(ds | group by { n: count(), m: median(dur), v: variance(onum), s: stddev(dur) / 60 }))
print(rows(ds | where dur > 100000 | group by { n: count(), c: count(dur > 1), m: median(dur), v: variance(dur), b: sum(dur > 1) }))
print(rows(ds | where onum == 7325551200 | group by onum { n: count(), v: variance(dur), m: median(dur) }))
# many groups: one per tagset
let many = ds | group by onum, ts { c: count(dur > 300), m: median(dur), v: variance(bsid), d: distinct(dur % 5), b: avg(bsid > 50) }
print(same(rows(many), a | group by onum, ts { c: count(dur > 300), m: median(dur), v: variance(bsid), d: distinct(dur % 5), b: avg(bsid > 50) }))
print(len(rows(many)))
END
"$COMB" q.comb >out || exit 1
COMB_THREADS=1 "$COMB" q.comb >one || exit 1
cmp out one && echo "one thread == several" && cat out
for q in 'group by state { q: quantile(dur, 1.5) }' 'group by state { q: quantile(dur, bsid) }' \
         'group by state { c: count(dur) }' 'group by state { m: median(state) }' \
         'group by state { s: sum(state) }' 'where median(dur) > 1 | count'; do
    "$COMB" -e "open(\"calls\") | $q" 2>&1
done
"$COMB" -e '[{a: 1}, {a: "x"}] | group by { m: median(a) }' 2>&1
"$COMB" -e '[{a: 1}, {a: 2}] | group by { c: count(a) }' 2>&1
"$COMB" -e 'rows([{a: 1, b: true}, {a: 2, b: nil}, {a: 4, b: false}] | group by { c: count(b), s: sum(b), f: avg(b), m: median(a), q: quantile(a, 0.25) })' 2>&1
echo done
