# A count or stat that runs again reuses its binding (vm/query/keep.c, "bound
# queries kept") only while what it was bound from is unchanged: the values
# it captured, the module variables it read, the store's snapshot. Each
# answer is checked against the same query over rows(...), which binds anew.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 2000 --seed 4 --volumes 2 --partitions 2 >/dev/null || exit 1
"$COMB" - <<'END'
fn slow(s) { return rows(open("calls") | where state == s) | count }
let states = ["open", "billed", "closed", "open"]
# a captured value changes from run to run
fn by_state() {
    let out = []
    for s in states { push(out, (open("calls") | where state == s | count) == slow(s)) }
    return out
}
print("captured", by_state())
# a module variable read by the binding
let want = "open"
let a = []
for i in 0..3 {
    push(a, [open("calls") | where state == want | count, slow(want)])
    want = "closed"
}
print("module variable", a[0][0] == a[0][1], a[1][0] == a[1][1], a[2][0] == a[2][1], a[0][0] != a[1][0])
# numbers: the same, equal of another type, different
fn slow_status(x) { return rows(open("calls") | where any(tags, status > x)) | count }
let b = []
for x in [0, 0, 0.0, 0.5, 1] { push(b, (open("calls") | where any(tags, status > x) | count) == slow_status(x)) }
print("numbers", b)
# a function captured (it may change): bound anew each time
let f = fn (s) { return s == "open" }
let c = []
for i in 0..2 {
    push(c, open("calls") | where f(state) | count)
    f = fn (s) { return s == "billed" }
}
print("function", c[0] == slow("open"), c[1] == slow("billed"))
# a commit between runs: the next run reads the new snapshot
let n = []
for i in 0..3 {
    push(n, open("calls") | where state == "open" | count)
    load(open("calls"), [{onum: 9000000 + i, ts: 0, cid: 1, state: "open"}])
}
print("commits", n[1] - n[0], n[2] - n[1])
# stat
let st = []
for s in ["billed", "billed", "closed"] { push(st, open("calls") | where state == s | stat) }
print("stat", str(st[0]) == str(st[1]), str(st[1]) != str(st[2]))
END
