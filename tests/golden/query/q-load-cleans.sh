# A load through a handle that nothing else reads (no scan under way, no
# other handle on its snapshot) lets its snapshot's pin go before the
# commit, so the commit removes the files it supersedes: no partition
# keeps two tags files after it.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen q --tagsets 2000 --seed 3 --partitions 4 --volumes 1 >/dev/null || exit 1
"$COMB" - <<'END'
let s = open("q")
print(s | count)
let rs = []
for k in [9100000000, 2100000000, 5100000000, 7100000000] { push(rs, {onum: k, ts: 1, cid: 1, state: "open"}) }
print(load(s, rs), s | count)
END
find q -name 'tags.*' | sort
