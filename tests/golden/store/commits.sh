# A session that opens a store again notices commits made by other
# processes: through the store's commit counter (DIR/COMMITS, two adds per
# commit, docs/FORMAT.md) without a system call, or, for a store made
# before the counter existed, through MANIFEST's identity; such a store
# gets its counter at its next commit.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 500 --seed 4 --volumes 1 --partitions 2 >/dev/null || exit 1
counter() { od -An -t u8 calls/COMMITS | tr -d ' '; }
echo "after create and load: $(counter)"
cat > more.comb <<'END'
load(open("calls"), [{onum: int(args()[0]), ts: 0, cid: 1, state: "open"}])
END
cat > session.comb <<'END'
fn n() { return open("calls") | where state == "open" | count }
let first = n()
for i in 0..3 {
    system(args()[0] + " more.comb " + str(int(args()[1]) + i))
    print("commit", i, "seen:", n() - first == i + 1)
}
END
"$COMB" session.comb "$COMB" 9000000
echo "after three more: $(counter)"
rm calls/COMMITS
"$COMB" session.comb "$COMB" 9100000 | sed 's/^/no counter: /'
echo "made again by the next commit: $(counter)"
