# A schema of 250 fields of mixed types end to end: load, scan, stat,
# select * to CSV and JSON and back; a query of 3 of the 250 columns decodes
# those 3 and reads a small part of the file's bytes (explain: bytes_read
# of bytes).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
let types = ["u8", "i16", "u32", "i64", "f32", "f64", "bool", "time", "char[12]", "enum(lo, mid, hi)"]
let text = "key run: u32; key event: u64"
for i in 0..248 { text += fmt("; tagset f%03d: %s", i, types[i % len(types)]) }
let s = schema(text)
print(len(fields(s)), "fields")
fn value(i, r) {
    let t = types[i % len(types)]
    let x = (r * 7919 + i * 104729) % 250
    if t == "f32" || t == "f64" { return x / 8 }
    if t == "bool" { return x % 2 == 0 }
    if t == "time" { return 2026-12-01 + x }
    if t == "char[12]" { return fmt("s%d", x) }
    if t == "enum(lo, mid, hi)" { return ["lo", "mid", "hi"][x % 3] }
    if t == "i16" || t == "i64" { return x - 125 }
    return x
}
let recs = []
for r in 0..3000 {
    let row = {run: r % 5, event: r}
    for i in 0..248 { row[fmt("f%03d", i)] = value(i, r) }
    push(recs, row)
}
let ds = create_store("wide", s, {partitions: 2})
print(load(ds, recs), "loaded", ds | count, "counted")
let st = ds | stat
print(len(st), "fields in stat", st[2].field, st[2].count, st[2].min, st[2].max)
let q = ds | where f002 > 120 && f006 | select run, event, f002, f006
let e = ds | explain where f002 > 120 && f006 | group by { n: count(), m: max(f003) }
print(e.columns, e.bytes_read * 5 < e.bytes)
print(rows(ds | where f002 > 120 && f006 | group by { n: count(), m: max(f003) }))
let want = 0
for r in recs { if r.f002 > 120 && r.f006 { want += 1 } }
print(len(rows(q)) == want)
print(ds | write("all.csv"), ds | write("all.json"))
let back = read_text("all.csv", s)
let one = rows(ds | where run == 2 && event == 17)[0]
let found = nil
for b in back { if b.run == 2 && b.event == 17 { found = b } }
print(len(back), str(found) == str(one))
let j = split(read(open("all.json")), "\n")
print(len(j), len(split(j[1], "\":")) - 1, "keys in a row:", sub(j[1], 0, 60))
END
