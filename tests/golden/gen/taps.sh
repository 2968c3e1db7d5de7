# comb gen taps: 3 days x 20 calls, seed 7: every file it writes, in name
# order (deliveries then expected reports); a second run is byte-identical.
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
"$COMB" gen taps "$tmp/a" --days 3 --calls-per-day 20 --seed 7 || exit 1
"$COMB" gen taps "$tmp/b" --days 3 --calls-per-day 20 --seed 7 || exit 1
diff -r "$tmp/a" "$tmp/b" >/dev/null || echo "two runs with one seed differ"
cd "$tmp/a" || exit 1
for f in $(find . -type f | LC_ALL=C sort); do
    echo "== $f"
    cat "$f"
done
