# A load through a store handle while a scan or loop of that handle runs:
# the scan and the loop read the snapshot they began on, to its end, even
# when the load supersedes (and would remove) files they have not opened
# yet; the handle reads the new generation from then on, other handles on
# the old snapshot keep it, and a new open sees the load.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 3000 --seed 5 --volumes 2 --partitions 4 >/dev/null || exit 1
"$COMB" - <<'END'
let s = open("calls")
let before = s | count
let keys = str(rows(s | select onum))
# new tagsets, one per partition at least: every file is superseded
let fresh = rows(s | take 40)
for i in 0..len(fresh) { fresh[i].onum = 9000000000 + i }
let seen = []
for ts in s | select onum {
    if len(seen) == 1 { print("loaded", load(s, fresh) > 0) }
    push(seen, ts)
}
print("query loop", len(seen), len(seen) == before, str(seen) == keys)
print("then", s | count, (s | count) == before + 40, open("calls") | count)
# the same over the handle itself
let n = 0
let more = rows(s | take 8)
for i in 0..len(more) { more[i].onum = 9100000000 + i }
let plain = 0
for ts in s {
    if plain == 0 { load(s, more) }
    plain += 1
}
print("handle loop", plain == before + 40, (s | count) == before + 48)
# a handle opened on the same snapshot keeps it when another loads
let a = open("calls")
let b = open("calls")
more = rows(s | take 3)
for i in 0..len(more) { more[i].onum = 9200000000 + i }
load(b, more)
print("snapshots", (a | count) == before + 48, (b | count) == before + 51, (open("calls") | count) == before + 51)
print("explain", (b | explain).partitions, (b | where onum == 9200000001 | count))
END
