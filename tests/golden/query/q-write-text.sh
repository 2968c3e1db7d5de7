# write(path) with a path ending in .csv, .tsv or .json (any case) writes
# text in that format (times as ISO-8601, as the prompt shows them), whole
# or not at all; other names still make tagset files. Errors name the path.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
"$COMB" - <<'END'
let ds = open("calls")
print(ds | where dur > 890 | select onum, ts, dur | write("a.csv"))
print(ds | where dur > 890 | select onum, dur | sort dur desc | write("b.tsv"))
print(ds | group by state | write("c.json"))
print([{x: 1, y: "a,b"}, {x: 2, z: true}] | write("d.csv"))
print(ds | where dur > 2000 | write("e.csv"), ds | where dur > 2000 | write("e.json"))
print(ds | where dur > 890 | write("f.ts"), open("f.ts") | count)
let p = "g.CSV"
print(ds | where dur > 895 | select onum | write(p))
try { ds | where dur > 890 | write("nosuchdir/x.csv") } catch e { print(e) }
try { ds | where dur > 890 | write("h.csv", {schema: 1}) } catch e { print(e) }
try { [1, 2] | write("i.csv") } catch e { print(e) }
END
for f in a.csv b.tsv c.json d.csv e.csv e.json g.CSV; do echo "== $f"; cat "$f"; done
ls
