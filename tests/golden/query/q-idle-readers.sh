# Scans leave their readers idle for the next scan of the same snapshot
# (vm/lib_store.c): at most a quarter of the open-file limit stay open, and
# the answers stay right. 32 partitions under a limit of 32 files: key
# queries that touch every partition, many times, then the open files are
# counted: 8 readers kept.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 3000 --seed 4 --volumes 1 --partitions 32 >/dev/null || exit 1
(ulimit -n 32 && "$COMB" - <<'END'
let ds = open("calls")
let keys = rows(ds | select onum | take 64)
let ok = 0
for r in 0..5 {
    for k in keys {
        let kept = open("calls") | where onum == k.onum | count
        if kept == (rows(ds) | where onum == k.onum | count) { ok += 1 }
    }
}
print("right", ok, "of", 5 * len(keys))
let full = open("calls") | where state == "closed" | count   # reads every partition
system("echo tagset files open: $(ls -l /proc/$PPID/fd | grep -c /tags)")
let n = open("calls") | where state == "open" | count
print("all", open("calls") | count, n == (rows(ds) | where state == "open" | count))
END
)
