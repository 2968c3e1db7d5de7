# gre and an imported module give the same output run from the module cache
# as compiled from source (COMB_MODCACHE=off); a damaged cache file or one that
# cannot be written changes nothing and says nothing (lang/modcache.h).
t=$(mktemp -d)
cd "$t" || exit 1
printf 'foo bar\nbaz\nFoo qux\nfoobar\n' >a
printf 'x\0foo\n' >b
cat >"$t/m.comb" <<'EOF'
let NAMES = ["ann", "bo", "cy"]
fn greet(n) { return "hi " + n }
fn counter() {
    let k = 0
    return fn() {
        k += 1
        return k
    }
}
fn report() {
    let c = counter()
    let out = []
    for n in NAMES { push(out, greet(n) + " " + str(c())) }
    let big = [{x: 1}, {x: 5}, {x: 9}] | where x > 2 | count
    return join(out, ", ") + "; " + str(big) + "; " + str(2.5 * 2)
}
EOF
cat >"$t/main.comb" <<'EOF'
import "m"
print(m.report())
EOF
# an error in a cached module: its positions are read from the cache file
cat >"$t/bad.comb" <<'EOF'
fn inner(x) {
    let y = x + 1
    return y + nil
}
fn outer(x) { return inner(x) * 2 }
EOF
printf 'import "bad"\nprint(bad.outer(1))\n' >"$t/raise.comb"
run() {
    "$COMB" gre -n -i -e foo -e qux a b 2>&1; echo "status $?"
    "$COMB" gre -c -a -w foo a b 2>&1; echo "status $?"
    "$COMB" "$t/main.comb" 2>&1; echo "status $?"
    "$COMB" raise.comb 2>&1; echo "status $?"
}
export COMB_MODCACHE_DIR="$t/cache"
COMB_MODCACHE=off run >"$t/want"
cat "$t/want"
run >"$t/first"
cmp -s "$t/want" "$t/first" && echo "first run (writing the cache): same"
ls "$t/cache" | grep -c '^\(m\|bad\)-.*\.combc$'
run >"$t/second"
cmp -s "$t/want" "$t/second" && echo "second run (from the cache): same"
for f in "$t"/cache/m-*.combc; do
    printf 'garbage' | dd of="$f" bs=1 seek=30 conv=notrunc 2>/dev/null
done
run >"$t/damaged"
cmp -s "$t/want" "$t/damaged" && echo "damaged cache: same"
for f in "$t"/cache/m-*.combc; do head -c 100 "$f" >"$f.cut" && mv "$f.cut" "$f"; done
run >"$t/cut"
cmp -s "$t/want" "$t/cut" && echo "truncated cache: same"
COMB_MODCACHE_DIR="$t/a/under-a-file" run >"$t/blocked"
cmp -s "$t/want" "$t/blocked" && echo "unwritable cache: same"
cd / && rm -rf "$t"
