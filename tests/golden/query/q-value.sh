# A query is a value: stored, extended (the original unchanged), run later
# with rows(), iterated with for, printed; its result is an ordinary value.
# Pipelines may span lines, a verb per line.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let busy = ds | where count(tags) >= 3
let billed = busy | where state == "billed"
print(type(busy), busy | count, billed | count, busy | count)
let few = billed
    | sort dur desc
    | take 2
    | select onum, dur
print(few)
let r = rows(few)
print(type(r), len(r), r[0].dur + r[1].dur)
let n = 0
for t in busy { n += len(t.tags) }
print(n)
fn per_bsid(q, b) { return q | where bsid == b | count }
print(per_bsid(busy, 17), per_bsid(billed, 17))
print(ds | where onum == 7325551212 | take 1 | select onum)
END
