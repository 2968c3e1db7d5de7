# Datastores from comb: create_store, load unsorted rows (tagset maps and
# flat tag rows) through the external sort; tags sharing a key gather into
# one tagset; a second load merges into the partitions; verify; iterate.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END'
schema calls {
    key onum: u64; key ts: time
    tagset bsid: u16
    tag sys: enum(RICS, BILL, SWITCH); tag status: u8
}
let ds = create_store("calls", calls, {partkey: "onum", volumes: 2, partitions: 3})
print(ds)
let input = []
for i in 0..30 { push(input, {onum: 100 - i % 10, ts: 5, bsid: i, sys: i % 3, status: i}) }
print(load(ds, input, {parcel: 65536, label: "first"}))
print(load(ds, [{onum: 95, ts: 5, bsid: 1000, tags: [{sys: "BILL", status: 99}]},
                {onum: 7, ts: 1, bsid: 7}]))
let again = open("calls")
let i = info(again)
print(i.generation, i.files, i.partitions, i.volumes, i.partkey)
let all = rows(again)
print(len(all))
for t in all { if t.onum == 95 || t.onum == 7 { print(t) } }
let ntags = 0
for t in again { ntags += len(t.tags) }
print(ntags, verify(again))
print(load("copy.ts", again, {schema: calls}), len(rows(open("copy.ts"))))
END
