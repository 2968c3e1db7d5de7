# A store removed and made again under its name while a session has it
# open: the session's next open reads the new store, whether a command the
# session ran did it (checked at once) or another process did, between two
# opens (checked when the last check is a tenth of a second old), though
# the old store's commit counter, still mapped, never moves.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 3000 --seed 4 --volumes 1 --partitions 2 >/dev/null || exit 1
export COMB
"$COMB" - <<'END'
let s = open("calls")
print("before", s | count, open("calls") | count)
system("rm -rf calls && \"$COMB\" store gen calls --tagsets 500 --seed 2 --volumes 1 --partitions 4 >/dev/null")
print("by a command", open("calls") | count, s | count)
system("(sleep 0.5; rm -rf calls; \"$COMB\" store gen calls --tagsets 70 --seed 3 --volumes 1 --partitions 3 >/dev/null; touch done) &")
print("not yet", open("calls") | count)
fn exists(p) { try { close(open(p)); return true } catch e { return false } }
let t0 = time()
while !exists("done") && time() - t0 < 30 { }
print("by another", open("calls") | count, exists("done"))
END
