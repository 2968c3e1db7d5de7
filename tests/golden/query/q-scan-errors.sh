# An error while a scan runs (in the kernels, on the scan's threads) names
# the place in the program, as the same query over rows does, and a catch
# gets the message alone; an error of the pipeline itself names no
# internal function.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen s --tagsets 2000 --seed 1 --volumes 2 --partitions 4 >/dev/null || exit 1
cat >q.comb <<'END'
let ds = open("s")
try { ds | where cid / 0 > 1 | count } catch e { print("caught:", e) }
try { rows(ds) | where cid / 0 > 1 | count } catch e { print("caught:", e) }
try { ds | where onum * onum > 1 | count } catch e { print("caught:", e) }
try { ds | where state == "open" | write("x.ts", {codec: "zz"}) } catch e { print("caught:", e) }
print(ds | tags | where dur % (bsid - bsid) == 0 | count)
END
"$COMB" q.comb
echo "status $?"
"$COMB" -e 'print(open("s") | where cid / 0 > 1 | count)'
echo "status $?"
