# A damaged bitmap index, and a damaged order index of a tag field: verify
# names the file, block and index; a query that would use it fails with the
# same words instead of counting wrong, while queries that do not read it
# still run; the undamaged copy counts.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
let s = schema("key id: u32; tagset kind: enum(a, b, c) index; tagset x: f64; tagset c: char[1] index")
let recs = []
for i in 0..300 { push(recs, {id: i, kind: ["a", "b", "c"][i % 3], x: i / 2, c: str(i % 2)}) }
print(load("ev.ts", recs, {schema: s}), info(open("ev.ts")).version)
let t = schema("key id: u32; tag seen: time index; tag n: u16")
recs = []
for i in 0..300 { push(recs, {id: i, tags: [{seen: 2026-12-01 + i * 60, n: i % 7}, {seen: 2026-12-01 + i * 30, n: 1}]}) }
print(load("tg.ts", recs, {schema: t}), info(open("tg.ts")).version)
END
# the last bytes before the footer are the last index's (c's, seen's) of the one block
. "$COMB_SRCDIR/tests/lib.sh"
damage_last_index ev.ts
damage_last_index tg.ts
"$COMB" - <<'END' 2>&1
for v in verify("ev.ts") { print(v.block, v.error) }
let f = open("ev.ts")
print(f | where x > 100 | count, f | where kind == "b" | count)
try { print(f | where c == "1" | count) } catch e { print(e) }
try { print(f | where kind == "a" && c != "1" | count) } catch e { print(e) }
print(len(verify("ev-ok.ts")), open("ev-ok.ts") | where c == "1" | count)
for v in verify("tg.ts") { print(v.block, v.error) }
f = open("tg.ts")
print(f | tags | count, f | tags | where n == 1 | count, f | where any(tags, seen < 2026-12-01T00:20) | count)
try { print(f | tags | where seen < 2026-12-01T00:20 | count) } catch e { print(e) }
let ok = open("tg-ok.ts")
print(len(verify("tg-ok.ts")), ok | tags | where seen < 2026-12-01T00:20 | count,
      (ok | tags | where seen < 2026-12-01T00:20 | explain count).tags_skipped_by_index)
END
