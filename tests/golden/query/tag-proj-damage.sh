# A damaged, missing, truncated or foreign projection: verify names it
# (file and block, or the file as a whole); a query that would read it
# either fails naming it (a damaged block: never a wrong answer) or, when
# the projection cannot be opened as its file's, says so in a warning and
# reads the file instead, with the file's answer.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
let s = schema("key id: u32; tag seen: time projection; tag n: u16")
let recs = []
for i in 0..3000 { push(recs, {id: i, tags: [{seen: 2026-12-01 + i * 7 % 86400, n: i % 7}, {seen: 2026-12-01 + i * 29 % 86400, n: 1}]}) }
load("tg.ts", recs, {schema: s, block_size: 4096})
recs = []
for i in 0..100 { push(recs, {id: i, tags: [{seen: 2026-12-01 + i, n: 3}]}) }
load("other.ts", recs, {schema: s})
print(info(open("tg.ts")).version, info(open("tg.ts.proj")).blocks, verify("tg.ts"))
END
cp tg.ts.proj ok.proj
size=$(wc -c < tg.ts.proj)
at=$((size / 2))
byte=$(od -An -tu1 -j "$at" -N1 tg.ts.proj | tr -d ' ')
printf "$(printf '\\%03o' $((byte ^ 64)))" | dd of=tg.ts.proj bs=1 seek="$at" conv=notrunc 2>/dev/null
cat > q.comb <<'END'
let f = open("tg.ts")
for v in verify("tg.ts") { print(v.file, v.block >= 0, v.error) }
try { print(rows(f | tags | where seen >= 2026-12-01 && seen < 2026-12-02 | group by n { c: count() })) } catch e { print(e) }
print((f | tags | where seen >= 2026-12-01T06:00 && seen < 2026-12-01T07:00 | explain count).projection_path)
END
"$COMB" q.comb 2>&1 | sed 's/^/damaged: /'
rm tg.ts.proj
"$COMB" q.comb 2>&1 | sed 's/^/missing: /'
head -c 200 ok.proj > tg.ts.proj
"$COMB" q.comb 2>&1 | sed 's/^/truncated: /'
cp other.ts.proj tg.ts.proj
"$COMB" q.comb 2>&1 | sed 's/^/foreign: /'
cp ok.proj tg.ts.proj
"$COMB" q.comb 2>&1 | sed 's/^/restored: /'
# a store's: `comb store verify` names the projection and its block
"$COMB" - <<'END' 2>&1
let s = schema("key id: u32; tag seen: time projection; tag n: u16")
let recs = []
for i in 0..3000 { push(recs, {id: i, tags: [{seen: 2026-12-01 + i * 7 % 86400, n: i % 7}]}) }
load(create_store("st", s, {partkey: "id", partitions: 1}), recs, {block_size: 4096})
END
p=$(ls st/v000/p000/*.proj)
size=$(wc -c < "$p")
at=$((size / 2))
byte=$(od -An -tu1 -j "$at" -N1 "$p" | tr -d ' ')
printf "$(printf '\\%03o' $((byte ^ 64)))" | dd of="$p" bs=1 seek="$at" conv=notrunc 2>/dev/null
"$COMB" store verify st >v.out 2>&1
echo "status $?"
sed "s|$d/||" v.out
