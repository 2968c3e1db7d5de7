# `| write(...)` returns how many rows it was given, as `| count` in its
# place says: tagsets (tags after `| tags`), whether it follows the scan
# straight (a plain where) or a row step (take, select), into a file or a
# store. Rows sharing a key still become one tagset in the file.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 3000 --seed 5 --volumes 2 --partitions 2 >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let q = ds | where onum < 2015000000
let t = ds | tags | where onum < 2015000000
print("count", q | count, t | count)
print("scan", q | write("a.ts"), t | write("b.ts"))
print("after take", q | take 100000 | write("c.ts"), t | take 100000 | write("d.ts"))
print("after select", q | select onum, ts, cid, state | write("e.ts"))
print("in the files", open("a.ts") | count, open("b.ts") | count, open("c.ts") | count,
      open("d.ts") | count, open("e.ts") | count)
let st = create_store("st", schema(ds), {partitions: 2})
print("store", q | take 100000 | write(st), st | count)
END
