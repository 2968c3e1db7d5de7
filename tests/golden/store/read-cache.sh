# The read cache (docs/STORE.md): a session's repeated queries give the
# same answers from cached columns as from the files; a commit's new files
# are seen at once by a new open (never stale cached columns), while a
# handle opened before keeps its snapshot; COMB_CACHE_MB=0 turns it off.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
cat > q.comb <<'END'
schema calls {
    key onum: u64; key ts: time
    tagset dur: u32; tagset state: enum(open, billed, closed)
    tag sys: enum(RICS, BILL, SWITCH); tag status: u8
}
let ds = create_store("calls", calls, {partkey: "onum", volumes: 2, partitions: 2})
let input = []
for i in 0..3000 {
    push(input, {onum: 1000 + i % 700, ts: i, dur: i * 7 % 5000, state: i % 3,
                 tags: [{sys: i % 3, status: i % 2}, {sys: (i + 1) % 3, status: 1}]})
}
load(ds, input, {block_size: 4096})
fn queries(s) {
    return [s | where dur > 3000 && state == "billed" | count,
            s | where any(tags, sys == "RICS" && status == 1) | count,
            rows(s | group by sys: last(tags, true).sys { n: count() }),
            s | where (onum == 1005) && (ts == 5) | count]
}
let before = open("calls")
for i in 0..3 { print(queries(open("calls"))) }
load(ds, [{onum: 1005, ts: 5, dur: 4000, state: "billed", tags: [{sys: "RICS", status: 1}]},
          {onum: 99999, ts: 1, dur: 4001, state: "billed"}])
print(queries(open("calls")))
print(queries(before))
END
mkdir on off && cd on && "$COMB" ../q.comb && cd ../off && COMB_CACHE_MB=0 "$COMB" ../q.comb | tail -2
