# first/last(tags, P).f where no tag of a whole block meets P: nil in every
# row, whatever f's type and whatever reads it (a comparison, a regex, a
# set): the same counts as over rows, and no read of a value never set
# (the kernels compared strings at garbage pointers: a crash).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen s --tagsets 2000 --seed 1 --volumes 2 --partitions 4 >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("s")
let a = rows(ds)
let same = 0
for i in 0..10 {
    let q = [
        [ds | where first(tags, false).sys != "SWITCH" | count, a | where first(tags, false).sys != "SWITCH" | count],
        [ds | where last(tags, bsid < 0).sys == "RICS" | count, a | where last(tags, bsid < 0).sys == "RICS" | count],
        [ds | where first(tags, false).dnum < "5" | count, a | where first(tags, false).dnum < "5" | count],
        [ds | where last(tags, false).dnum ~ /^2/ | count, a | where last(tags, false).dnum ~ /^2/ | count],
        [ds | where first(tags, false).dnum in ["x", "y"] | count, a | where first(tags, false).dnum in ["x", "y"] | count],
        [ds | where first(tags, false).bsid + 1 > 0 | count, a | where first(tags, false).bsid + 1 > 0 | count],
        [ds | where first(tags, false).sys == nil | count, a | where first(tags, false).sys == nil | count],
    ]
    for p in q { if p[0] == p[1] { same += 1 } else { print("differ", i, p) } }
}
print("same", same)
print(ds | where last(tags, false).sys == nil | count, ds | count)
END
