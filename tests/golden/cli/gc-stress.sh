# The language tests again with the collector running at every safe point.
for t in values strings arrays maps functions try import; do
    COMB_GC_STRESS=1 "$COMB" tests/golden/lang/$t.comb >out 2>&1 || echo "$t failed"
    cmp -s out tests/golden/lang/$t.out || echo "$t differs"
done
rm -f out
echo done
