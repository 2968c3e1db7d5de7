# Tagset files from comb: create, add in key order, commit; open, info,
# iterate, rows; a writer never committed leaves no file.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END'
schema calls {
    key onum: u64; key ts: time
    tagset bsid: u16
    tag sys: enum(RICS, BILL, SWITCH); tag status: u8; tag dnum: char[16]
}
let w = create("calls.ts", calls, {block_size: 4096, label: "day 1"})
add(w, {onum: 7325551212, ts: "2026-12-02T13:05:00Z", bsid: 34,
        tags: [{sys: "RICS", status: 1, dnum: "2015551212"}, {sys: "BILL"}]})
add(w, [{onum: 7325551213, ts: 0, bsid: 35}, {onum: 7325551214, ts: 60, bsid: 34, tags: []}])
for i in 0..500 { add(w, {onum: 8000000000 + i, ts: i, bsid: i % 7, tags: [{sys: 2, status: i % 3}]}) }
print(commit(w))
let f = open("calls.ts")
print(f)
let i = info(f)
print(i.tagsets, i.tags, i.blocks > 1, i.codec, i.block_size)
let n = 0
for t in f {
    if n < 3 { print(t) }
    n += 1
}
print(n, len(rows(f)), isotime(rows(f)[0].ts), schema(f) == schema(f), fields(f)[3].symbols)
let forgotten = create("never.ts", calls)
add(forgotten, {onum: 1, ts: 1})
forgotten = nil
print(totime("2026-12-02"), totime("2026-12-02 13:05"), totime("yesterday"))
END
ls
