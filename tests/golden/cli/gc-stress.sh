# The language tests again with the collector running at every safe point
# (lang/frames.comb is there for this run). Each takes well under a second.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT || exit 99
for f in tests/golden/lang/*.comb; do
    t=${f%.comb}
    COMB_GC_STRESS=1 "$COMB" "$f" >"$d/out" 2>&1 || echo "$t failed"
    cmp -s "$d/out" "$t.out" || echo "$t differs"
done
echo done
