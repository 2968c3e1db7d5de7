# explain's blocks_cached: of the blocks a query would read (blocks_read,
# after zone maps), those whose columns it decodes are all in the process's
# read cache, so the scan would take them from it. A process's first scan
# neither uses nor fills the cache, its second fills it: blocks_cached is 0
# until then, then every block of the columns scanned; a query decoding a
# column not yet seen finds no block whole; COMB_CACHE_MB=0: always 0.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
cat > q.comb <<'END'
let ds = open("calls")
fn ex(name, e) { print(name, e.blocks, e.blocks_read, e.blocks_cached, e.columns) }
fn all() { ex("state", ds | explain where state == "open" | count) }
all()
print("scan 1", ds | where state == "open" | count)
all()
print("scan 2", ds | where state == "open" | count)
all()
fn zone() { ex("zone", ds | explain where onum < 7325551203 && state == "open" | count) }
zone()
print("scan 3", ds | where onum < 7325551203 && state == "open" | count)
zone()
ex("more", ds | explain where state == "open" && dur > 100 | count)
print("scan 4", ds | where state == "open" && dur > 100 | count)
ex("more", ds | explain where state == "open" && dur > 100 | count)
ex("file", open("calls.ts") | explain where state == "open" | count)
END
COMB_CACHE_MB=64 "$COMB" q.comb
echo "off:"
COMB_CACHE_MB=0 "$COMB" q.comb | grep -v scan
