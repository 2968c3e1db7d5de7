# Deep input is an error naming file:line:col, never a crash: 30,000 nested
# brackets, 30,000-long postfix chains (calls, indexes, fields), an
# operator chain; the compiler walks trees recursively, so the parser
# bounds their height. A query grown by a where step per loop iteration
# (30,000 of them) runs, at once: its conjuncts are rebalanced for the
# scan's walks, and it is bound once, when it runs.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
gen() {
    "$COMB" -e "print($1)" > "$2.comb"
    "$COMB" "$2.comb" > out 2>&1
    echo "status $? $(head -1 out)"
}
gen '"let x = " + repeat("(", 30000) + "1" + repeat(")", 30000)' parens
gen '"let x = " + repeat("[", 30000) + repeat("]", 30000)' brackets
gen '"let x = " + repeat("{a: ", 30000) + "1" + repeat("}", 30000)' maps
gen '"fn f() { return f }\nf" + repeat("()", 30000)' calls
gen '"let m = {}\nm" + repeat(".x", 30000)' fields
gen '"let a = [0]\na" + repeat("[0]", 30000)' indexes
gen '"let x = 1" + repeat(" + 1", 30000)' sum
gen '"let x = " + repeat("-", 30000) + "1"' negs
gen '"fn f() { return f }\nlet x = " + repeat("(", 300) + "f" + repeat("()", 300) + repeat(")", 300)' mixed
"$COMB" store gen calls --tagsets 200 --seed 3 --volumes 2 --partitions 2 >/dev/null || exit 1
"$COMB" -e 'open("calls") | write("calls.ts")' >/dev/null
"$COMB" - <<'END'
let ds = open("calls")
let file = open("calls.ts")
let q = ds
for i in 0..30000 { q = q | where onum > i }
let t = file | tags
for i in 0..30000 { t = t | where bsid > i % 7 }
print(q | count, ds | where onum > 29999 | count, t | count, file | tags | where bsid > 6 | count)
let e = q | where onum == 2014024054 | explain
print(e.partitions_read, e.blocks_read)
END
