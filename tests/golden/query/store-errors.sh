# Bad input to the store natives is refused with a clear message and loses
# nothing: out-of-order keys, unknown fields (with a suggestion), bad enum
# symbols, wrong types, missing keys, values out of range, bad options.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END'
schema calls { key onum: u64; tagset bsid: u16; tag sys: enum(RICS, BILL); tag dnum: char[4] }
fn try_it(f) { try { f() } catch e { print(e) } }
let w = create("x.ts", calls)
add(w, {onum: 5})
try_it(fn() { add(w, {onum: 4}) })
try_it(fn() { add(w, {onum: 6, bsdi: 3}) })
try_it(fn() { add(w, {onum: 6, tags: [{sys: "RICZ"}]}) })
try_it(fn() { add(w, {onum: 6, tags: [{dnum: "12345"}]}) })
try_it(fn() { add(w, {onum: 6, sys: "RICS"}) })
try_it(fn() { add(w, {onum: "6"}) })
try_it(fn() { add(w, {bsid: 1}) })
try_it(fn() { add(w, {onum: 6, bsid: 70000}) })
try_it(fn() { add(w, {onum: -6}) })
try_it(fn() { add(w, {onum: 6, tags: [{onum: 1}]}) })
add(w, {onum: 6})
print(commit(w))
try_it(fn() { commit(w) })
try_it(fn() { create("y.ts", calls, {codec: "zip"}) })
try_it(fn() { create("y.ts", calls, {blocksize: 4096}) })
try_it(fn() { open("nonesuch") })
try_it(fn() { create_store("s", calls, {partkey: "sys"}) })
try_it(fn() { load("z.ts", [{onum: 1}]) })
try_it(fn() { load("z.ts", [{onum: 1}, {onum: 2, bsid: "x"}], {schema: calls}) })
try_it(fn() { schema("key a: u8; key a: u16") })
print(len(rows(open("x.ts"))))
END
ls
