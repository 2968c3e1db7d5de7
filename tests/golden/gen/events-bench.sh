# The query set of `scripts/bench events` (scripts/bench.d/events.comb), small:
# each SUMMARY and CONTENT query over runs 1..P at both cuts answers as a plain
# walk over the store's rows does (rows, and the sum of their event numbers);
# the bitmap indexes and the range partitions serve the first, nothing the second.
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
"$COMB" gen events "$tmp/s" --events 3000 --runs 10 --seed 2 || exit 1
cat >"$tmp/walk.comb" <<'EOC'
let a = args()
let p = int(a[1])
let cut = int(a[2])
let n = 0
let s = 0
for r in rows(open(a[0])) {
    if r.run <= p && r.bool100num01 == 1 && (cut == 10 || r.enumuni10num01 == 3) { n += 1; s += r.event }
}
print(n, s)
EOC
for cut in 1 10; do
    for p in 1 2 5 10; do
        want=$("$COMB" "$tmp/walk.comb" "$tmp/s" $p $cut) || exit 1
        for kind in summary content; do
            got=$("$COMB" "$COMB_SRCDIR/scripts/bench.d/events.comb" "$tmp/s" $kind $p $cut 1) || exit 1
            set -- $got
            if [ "$1 $3" = "$want" ]; then v=same; else v="differs from the walk's $want"; fi
            echo "$kind $cut% runs 1..$p: $1 rows, sum $3: $v"
        done
    done
done
