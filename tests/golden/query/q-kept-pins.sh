# A binding kept for a run again (vm/query/keep.c) holds its store snapshot and
# so that snapshot's pin on its files; an open of a newer snapshot lets the
# older kept bindings go. Here a count kept at generation 1, a commit by
# another process, a count elsewhere in the program at generation 2 (which
# drops the first), then two more commits: nothing pins generation 1 any
# more, so its file is gone; generation 2's is kept by the second count,
# and generation 3's, which no pin names, goes at the commit of 4.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 300 --seed 4 --volumes 1 --partitions 1 >/dev/null || exit 1
cat > more.comb <<'END'
load(open("calls"), [{onum: int(args()[0]), ts: 0, cid: 1, state: "open"}])
END
cat > session.comb <<'END'
let more = args()[0] + " more.comb "
print("first", open("calls") | count)
system(more + "9000001")
let n = open("calls") | where state == "open" | count
print("elsewhere", n > 0)
system(more + "9000002")
system(more + "9000003")
system("ls calls/v000/p000")
END
COMB_GC_STRESS=1 "$COMB" session.comb "$COMB"
