# Ctrl-C during a load into a store stops it before its commit: exit 130,
# "interrupted" at the load, the store's generation unchanged and none of
# the rows in it, so the load can simply run again (it committed anyway,
# and the rerun doubled every tagset's tags).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen s --tagsets 1000 --seed 1 >/dev/null || exit 1
cat >load.comb <<'END'
let s = open("s")
let rs = []
for i in 0..300000 { push(rs, {onum: 5000000000 + i, ts: 1, cid: i, state: "open", sys: "SWITCH", dur: 1}) }
print("built")
flush()
load(s, rs)
print("loaded")
END
"$COMB" load.comb >out 2>err &
pid=$!
i=0
while ! grep -q built out 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.1
kill -INT $pid || echo "the load ended before the signal"
wait $pid
echo "exit status $?"
head -1 err
sed -n 2p s/MANIFEST
"$COMB" -e 'print(open("s") | where onum >= 5000000000 | count, open("s") | count)'
