# lines(...) on the right of `in`: the lines of a file, read when the
# pipeline is written; for a number field, as numbers (DESIGN's
# `let watch = lines("watch.txt"); ds | where onum in watch | write(...)`).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 500 --seed 2 >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("calls")
let some = rows(ds | take 3 | select onum)
let f = open("watch.txt", "w")
for r in some { write(f, str(r.onum) + "\n") }
write(f, "123\n")
close(f)
let want = ds | where onum in [some[0].onum, some[1].onum, some[2].onum, 123] | count
print(want > 0, (ds | where onum in lines("watch.txt") | count) == want)
let watch = lines("watch.txt")
print((ds | where onum in watch | write("hits.ts")) == want, (open("hits.ts") | count) == want)
let g = open("dnums.txt", "w")
write(g, "nosuch\n")
close(g)
print(ds | tags | where dnum in lines("dnums.txt") | count)
END
