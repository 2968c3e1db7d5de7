# Opening a store again in a session reuses the last open's snapshot while
# its MANIFEST is unchanged (docs/STORE.md): handles opened between commits
# share it, yet a commit through one of them (or through another handle)
# is seen by every later open, and every handle opened before keeps its
# snapshot, also the ones sharing with the handle written through, which
# itself reads the new one.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
cat > q.comb <<'END'
schema calls {
    key onum: u64
    tagset dur: u32
    tag sys: enum(RICS, BILL)
}
let ds = create_store("calls", calls, {partkey: "onum", volumes: 1, partitions: 2})
let input = []
for i in 0..500 { push(input, {onum: i, dur: i, tags: [{sys: i % 2}]}) }
load(ds, input)
fn n(s) { return [s | count, s | where dur >= 1000 | count, s | where onum == 7 | count] }
let a = open("calls")
let b = open("calls")
print(n(a), n(b))
load(b, [{onum: 7, dur: 1000, tags: [{sys: "RICS"}]}])
let c = open("calls")
print(n(a), n(c))
load(a, [{onum: 8, dur: 1001}])
let e = open("calls")
let f = open("calls")
print(n(c), n(e), n(f))
for i in 0..3 {
    load(ds, [{onum: 9000 + i, dur: 2000 + i}])
    print(n(open("calls")))
}
print(n(e))
# the handle written through reads its new generation (also after a
# query left its readers idle)
let g = open("calls")
let before = n(g)
load(g, [{onum: 7777, dur: 3000}])
print(before, n(g))
END
"$COMB" q.comb
