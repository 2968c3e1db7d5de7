# Top-N over groups: `group by ... | sort ... | take N` with the sort by
# the group's keys and bare aggregates makes rows of only the groups that
# can come first; the answers equal the row steps' sort and take over all
# the groups (ties kept in key order, as the stable sort keeps them), for
# take 0, 1, a few and more than the groups, ascending and descending,
# by ints, floats (nil first) and bools.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let a = rows(ds)
fn same(x, y) { return str(x) == str(y) }
for n in [0, 1, 3, 10, 1000] {
    print(n, same(rows(ds | group by onum, bsid { c: count(), m: max(dur), v: variance(dur) } | sort c desc, m | take n),
                  a | group by onum, bsid { c: count(), m: max(dur), v: variance(dur) } | sort c desc, m | take n),
          same(rows(ds | group by onum, bsid { c: count(), v: variance(dur) } | sort v, bsid desc | take n),
               a | group by onum, bsid { c: count(), v: variance(dur) } | sort v, bsid desc | take n),
          same(rows(ds | group by onum { c: count(dur > 400) } | sort c, onum desc | take n),
               a | group by onum { c: count(dur > 400) } | sort c, onum desc | take n),
          same(rows(ds | group by onum, big: dur > 400 { c: count() } | sort big, c desc | take n),
               a | group by onum, big: dur > 400 { c: count() } | sort big, c desc | take n))
}
print(rows(ds | tags | group by dnum { n: count() } | sort n desc, dnum | take 3))
print(rows(ds | group by bsid { c: count(), v: variance(dur) } | sort v desc | take 3))
END
