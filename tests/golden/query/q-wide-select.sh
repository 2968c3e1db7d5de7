# Rows of a wide schema (40 tagset fields of every width, two tag fields)
# collected with a select that names a few fields out of the schema's
# order: the scan keeps only those, packed, and every value read back is
# the one its field was loaded with (each value says its field and row),
# on every way rows come back: as they come, sorted with a take (top-N),
# sorted past COMB_SORT_MB (the external sort: that it spilled shows with
# a TMPDIR that is not there), a row at a time (for), as tags; made by the
# collector (a select of fields as they are) or by the select (one that
# computes). Rows one after another share their strings (char fields
# change every 4 rows): a string that changes is the new one.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
awk 'BEGIN { split("u8;i16;u32;i64;f64;char[10];enum(e0, e1, e2);f32", ty, ";")
    print "key id: u64"
    for (k = 1; k <= 40; k++) print "tagset f" k ": " ty[k % 8 + 1]
    print "tag tt: u16"; print "tag tn: char[6]" }' >w.schema
"$COMB" store create s --schema w.schema --partition-key id --partitions 3 >/dev/null || exit 1
awk 'BEGIN { for (id = 0; id < 12000; id++) {
        line = id
        for (k = 1; k <= 40; k++) {
            m = k % 8
            v = m == 0 ? (id + k) % 256 : m == 1 ? id - 10 * k : m == 2 ? id * 41 + k : \
                m == 3 ? id * 1000003 - k : m == 4 ? id + k * 0.25 : m == 5 ? "c" k "_" int(id / 4) % 1000 : \
                m == 6 ? "e" (id + k) % 3 : k + 0.5
            line = line "\t" v
        }
        for (j = 0; j <= id % 2; j++) print line "\t" id % 7 + j "\tt" j
    } }' >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
cat >q.comb <<'END'
let ds = open("s")
# The value field k of row id was loaded with (as the awk above makes it).
fn want(id, k) {
    let m = k % 8
    if m == 0 { return (id + k) % 256 }
    if m == 1 { return id - 10 * k }
    if m == 2 { return id * 41 + k }
    if m == 3 { return id * 1000003 - k }
    if m == 4 { return id + k * 0.25 }
    if m == 5 { return fmt("c%d_%d", k, id / 4 % 1000) }
    if m == 6 { return fmt("e%d", (id + k) % 3) }
    return k + 0.5
}
let picked = [37, 3, 20, 40, 9, 26, 31, 5, 38]
# Rows whose every field is its loaded value and that show the picked fields only.
fn check(what, rs) {
    let bad = 0
    for r in rs {
        if len(keys(r)) != len(picked) + 1 { bad = bad + 1 }
        for k in picked { if r[fmt("f%d", k)] != want(r.id, k) { bad = bad + 1 } }
    }
    print(what, len(rs), "rows,", bad, "wrong")
}
check("as they come:", rows(ds | where id % 3 == 0 | select f37, id, f3, f20, f40, f9, f26, f31, f5, f38))
let top = rows(ds | sort f3 desc | take 40 | select f37, id, f3, f20, f40, f9, f26, f31, f5, f38)
check("top 40:", top)
print(top[0], top[39].id)
let all = rows(ds | sort f26 | select f37, id, f3, f20, f40, f9, f26, f31, f5, f38)
check("sorted:", all)
print(all[0].id, all[11999].id)
let each = []
for r in ds | where id < 100 | select f37, id, f3, f20, f40, f9, f26, f31, f5, f38 { push(each, r) }
check("for:", each)
let calc = rows(ds | where id % 5 == 1 | select f37, id, g: f3 + 1, f5, f26)
let bad = 0
for r in calc { if r.g != want(r.id, 3) + 1 || r.f37 != want(r.id, 37) || r.f5 != want(r.id, 5) || r.f26 != want(r.id, 26) || len(keys(r)) != 5 { bad = bad + 1 } }
print("computed:", len(calc), "rows,", bad, "wrong,", calc[0])
let ts = rows(ds | tags | where id < 50 | select tn, f20, tt, id)
bad = 0
for t in ts { if t.f20 != want(t.id, 20) || t.tt != t.id % 7 + (if t.tn == "t1" { 1 } else { 0 }) { bad = bad + 1 } }
print("tags:", len(ts), "rows,", bad, "wrong,", ts[0])
END
"$COMB" q.comb || exit 1
COMB_SORT_MB=1 "$COMB" q.comb >q1.out || exit 1
"$COMB" q.comb | cmp - q1.out && echo "the same within COMB_SORT_MB=1"
COMB_SORT_MB=1 TMPDIR=$d/none "$COMB" -e 'len(rows(open("s") | sort f26 | select f37, id, f3, f20, f40, f9, f26, f31, f5, f38))' >e.out 2>&1
echo "exit $?"
sed "s|$d|D|g" e.out
