# A store file replaced by another valid tagset file (one partition's
# copied over another's): a query, a count from the footers and a loop over
# the store name the file and the size its commit recorded, instead of
# reading the wrong file silently.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen s --tagsets 20000 --seed 9 --partitions 2 >/dev/null || exit 1
"$COMB" -e 'print(open("s") | count)'
cp s/v000/p001/tags.1 s/v000/p000/tags.1
"$COMB" - <<'END' 2>&1 | sed 's/[0-9]* bytes, but the manifest says [0-9]*/N bytes, but the manifest says M/'
try { print(open("s") | count) } catch e { print(e) }
try { print(open("s") | where onum > 0 | count) } catch e { print(e) }
try { for r in open("s") { } } catch e { print(e) }
END
