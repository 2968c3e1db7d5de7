# group by: one and two keys, computed keys, every aggregate (count, sum,
# min, max, avg, distinct) and expressions of them; the default { count };
# groups come out in key order; then sort and take over the groups. The
# scan's groups equal the row-by-row groups of the same rows.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let a = rows(ds)
for g in ds | group by bsid { n: count(), total: sum(dur), lo: min(dur), hi: max(dur), mean: avg(dur), onums: distinct(onum) } {
    print(g)
}
print(ds | group by state)
print(ds | group by state, big: dur >= 450 { n: count(), hours: sum(dur) / 3600.0 })
print(ds | group by d: day(ts) { n: count(), first: min(ts), tags: sum(count(tags)) })
print(ds | group by bsid { n: count() } | sort n desc, bsid | take 3)
print(ds | where bsid == 999 | group by bsid { n: count() })
print(ds | group by { n: count(), s: sum(dur) })
print(ds | group by last: last(tags, true).sys { n: count() })
let q = "group by bsid, state { n: count(), s: sum(dur), m: max(onum), d: distinct(dur % 7) }"
print(str(ds | group by bsid, state { n: count(), s: sum(dur), m: max(onum), d: distinct(dur % 7) }) ==
      str(a | group by bsid, state { n: count(), s: sum(dur), m: max(onum), d: distinct(dur % 7) }))
END
