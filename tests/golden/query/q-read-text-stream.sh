# read_text's stream ({stream: true}): rows as they are read, by `for`, by
# queries (where/select/take/count a row at a time, then any verb) and by
# load, which takes text of the store's own schema as bytes (no maps) and
# any other through maps; each use reads the files anew. A load of a
# stream whose rows all fail loads nothing; mode "replace" makes loading
# the same rows twice leave one copy.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'onum,ts,state,sys,dur\n7325551212,2026-12-01T10:00:00Z,open,BILL,60\n7325551212,2026-12-01T10:00:00Z,billed,RICS,30\n9085550000,2026-12-01T10:01:40Z,open,SWITCH,3000\n9085550001,2026-12-01T11:00:00Z,closed,BILL,bad\n' > a.csv
printf 'onum,ts,state,sys,dur\n2015550000,2026-12-02,open,BILL,1\n' > b.csv
printf 'ts,state,sys,dur\n2026-12-02,open,BILL,1\n' > nokey.csv
"$COMB" - <<'END' 2>&1
schema calls {
    key onum: u64; key ts: time
    tagset state: enum(open, billed, closed)
    tag sys: enum(RICS, BILL, SWITCH); tag dur: u32
}
schema narrow { key onum: u64; key ts: time; tag dur: u32 }
schema wide { key onum: u64; key ts: time; tag dur: u32; tag note: char[8] }
let r = read_text("[ab].csv", calls, {stream: true})
print(r, type(r))
let n = 0
for x in r { n += 1 }
print("for:", n)
print("count:", r | count)
print("where:", rows(r | where dur >= 60 | select onum, dur))
print("take:", rows(r | take 1))
print("rows:", len(rows(r)), rows(r)[3].onum)
print("group:", rows(r | group by sys { n: count(), d: sum(dur) }))
let e = r | explain where dur > 1
print(e.source, e.rows)
let ds = create_store("s", calls, {partitions: 2})
print("loaded:", load(ds, r))
print(rows(open("s") | tags | sort onum, sys | select onum, sys, dur, state))
print("again, replace:", load(ds, r, {mode: "replace"}), open("s") | tags | count)
print("again, combine:", load(ds, r), open("s") | tags | count)
let ns = create_store("n", wide)
print("by maps:", load(ns, read_text("a.csv", narrow, {stream: true, extra: "ignore"})), rows(open("n") | tags | sort onum | select onum, dur, note))
try { load(ds, read_text("nokey.csv", calls, {stream: true})) } catch e { print(e) }
try { load(ds, r, {mode: "upsert"}) } catch e { print(e) }
try { load("f.ts", r, {schema: calls, mode: "replace"}) } catch e { print(e) }
print(read_text("a.csv", narrow, {stream: true, extra: "ignore"}) | where dur > 99999 | count)
try { read_text("a.csv", narrow, {stream: true}) | count } catch e { print(e) }
try { load(ds, read_text("b.csv", calls, {stream: true, max_errors: 0, columns: ["onum", "ts", "state", "dur", "sys"], header: false})) } catch e { print(e) }
print(open("s") | tags | count)
END
