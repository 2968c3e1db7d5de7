# A comb call that raises inside a scan closes the scan's readers as the
# error unwinds: 200 failed scans under a limit of 64 open files, then a
# query that needs to open the store still runs.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 2000 --seed 4 --volumes 2 --partitions 2 >/dev/null || exit 1
(ulimit -n 64 && "$COMB" - <<'END'
let ds = open("calls")
fn bad(x) { error("bad " + x) }
let caught = 0
for i in 0..200 {
    try { ds | where bad(dnum) | count } catch e { if str(e) ~ /^bad / { caught += 1 } else { print(e) } }
}
print("caught", caught)
let n = ds | where state == "open" | count
print("count", n == (rows(ds) | where state == "open" | count))
END
)
