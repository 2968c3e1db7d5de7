# select (fields, computed columns, quantifiers, whole tags), sort (asc,
# desc, several keys), sort + take as a top-N; the scan's top-N equals the
# row-by-row sort of all rows.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
for r in ds | where onum == 7325551212 | sort ts | select onum, bsid, mins: dur / 60, n: count(tags), ok: all(tags, status < 2), s: first(tags, true).sys {
    print(r)
}
print(ds | sort dur desc, onum | take 3 | select onum, dur)
print(ds | where bsid == 17 | sort state, dur desc | take 4 | select state, dur)
let top = ds | sort dur desc, ts | take 10 | select ts, dur
let all = rows(ds) | sort dur desc, ts | take 10 | select ts, dur
print(str(top) == str(all))
print(ds | where onum == 7325551230 | sort ts | take 1 | select tags)
END
