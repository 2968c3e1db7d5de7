# A session that opens store after store, or loads through a new handle
# each time, under a limit of 64 open files: the handles it no longer
# holds are collected when the open ones double, so their descriptors
# (each store's pin, its idle readers) never run out.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen s --tagsets 1000 --seed 1 >/dev/null || exit 1
mkdir m
i=1
while [ $i -le 60 ]; do
    "$COMB" store gen m/s$i --tagsets 10 --seed $i --partitions 1 >/dev/null || exit 1
    i=$((i + 1))
done
(ulimit -n 64 && "$COMB" - <<'END'
let before = open("s") | count
let n = 0
for b in 0..100 {
    try { n += load(open("s"), [{onum: 9900000000 + b, ts: 1, cid: 1, state: "open"}]) }
    catch e { print("load", b, "failed:", e); break }
}
print("loaded", n, (open("s") | count) - before)
let t = 0
for i in 1..61 {
    try { t += open("m/s" + str(i)) | count } catch e { print("store", i, "failed:", e); break }
}
print("stores", t)
END
)
