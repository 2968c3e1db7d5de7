# The cycle's store primitives: load to_adds stages rows in the partitions'
# adds files (and reads an array of sources), update merges one volume's adds
# and removes keys into dels files in one labelled commit (a second run has
# nothing to do), files lists the files with their kinds, info gives a file's
# label; remove keys of another volume and to_adds into a file are refused;
# an update with nothing to do leaves the store free for the next load.
dir=$(mktemp -d) || exit 99
("$COMB" - "$dir" <<'PROG'
let d = args()[0]
let s = schema("key onum: u64; key ts: time; tag sys: enum(SW, BILL, SETL); tag seen: time")
let ds = create_store(d + "/st", s, {partkey: "onum", volumes: 2, partitions: 2})
let a = [{onum: 1, ts: 10, sys: "SW", seen: 20}, {onum: 2, ts: 10, sys: "SETL", seen: 30}]
let b = [{onum: 1, ts: 10, sys: "BILL", seen: 40}, {onum: 3, ts: 10, sys: "SW", seen: 20}]
load(d + "/b.ts", b, {schema: s})
print(load(ds, [a, open(d + "/b.ts")], {to_adds: true, label: "day1"}))
print(ds | count, info(ds).label)
for f in files(ds) { print(f.volume, f.partition, f.kind, info(open(f.path)).label, info(open(f.path)).tagsets) }
print(update(ds, {volume: 0, label: "pu0"}))
print(update(ds, {volume: 1, remove: [{onum: 2, ts: 10}], label: "pu1"}))
print(update(ds, {volume: 1, label: "again"}))
for f in files(ds) { print(f.volume, f.partition, f.kind, info(open(f.path)).label, info(open(f.path)).tagsets) }
print(info(ds).label, info(ds).generation)
for t in ds { print(t) }
for f in files(ds) { if f.kind == "dels" { print(rows(open(f.path))) } }
try { update(ds, {volume: 0, remove: [{onum: 2, ts: 10}]}) } catch e { print(e) }
try { load(d + "/c.ts", a, {schema: s, to_adds: true}) } catch e { print(e) }
try { update(ds, {volume: 2}) } catch e { print(e) }
# an update with nothing to do lets go of the volume at once: a load follows
print(update(ds, {volume: 1, label: "none"}).partitions)
print(load(ds, [{onum: 1, ts: 11, sys: "SW", seen: 50}, {onum: 2, ts: 11, sys: "SW", seen: 50}], {to_adds: true, label: "day2"}))
PROG
) 2>&1
rc=$?
rm -rf "$dir"
exit $rc
