# comb gen events: a store shaped like the TAG test table (docs/EVENTS.md):
# its layout and schema's size, events per run, the same rows for the same
# seed, and each attribute family's distribution within its tolerance; one
# partition a run (partitioned by ranges of run).
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
"$COMB" gen events "$tmp/a" --events 4001 --runs 4 --seed 5 || exit 1
"$COMB" gen events "$tmp/b" --events 4001 --runs 4 --seed 5 || exit 1
"$COMB" store info "$tmp/a" | sed -n "2,4p;7p"
cd "$tmp" || exit 99
cat >check.comb <<'EOC'
let a = open("a")
let f = fields(a)
print(fmt("%d fields, %d bytes a row", len(f), sum_widths(f)))
let indexed = []
for x in f { if x.index { push(indexed, x.name) } }
print(len(indexed), "indexed:", indexed[0], indexed[2], indexed[len(indexed) - 1])
fn sum_widths(f) {
    let n = 0
    for x in f {
        let t = x.type
        if startswith(t, "char[") { n += int(sub(t, 5, len(t) - 1)) }
        else { n += {bool: 1, u8: 1, u16: 2, u32: 4, u64: 8, i64: 8, f32: 4, f64: 8}[t] }
    }
    return n
}
print(rows(a | group by run { n: count(), first: min(event), last: max(event) }))
print(str(rows(a)) == str(rows(open("b"))))
# within 4 standard errors of what docs/EVENTS.md says, over 4001 events
fn near(name, got, want, sd) {
    let ok = abs(got - want) <= 4 * sd / sqrt(4001)
    print(fmt("%-16s %s", name, if ok { "ok" } else { fmt("off: %g, want %g", got, want) }))
}
let g = rows(a | group by { b500: avg(bool500num01 == 1), b100: avg(bool100char03 == "1"),
    b10: avg(bool10num08 == 1), gold1: avg(golden1), u100: avg(enumuni100num02),
    u10vc: avg(enumuni10vc05 == "v0003"), e100: avg(enumexp100num04), e10: avg(enumexp10num06),
    n100: avg(nor100bf01), n1sd: stddev(nor1num07), u10k: avg(uni10knum03),
    emax: max(enumexp10num01), umax: max(enumuni5num08), files: distinct(aodfile) })[0]
near("bool500num01", g.b500, 0.5, 0.5)
near("bool100char03", g.b100, 0.1, 0.3)
near("bool10num08", g.b10, 0.01, 0.1)
near("golden1", g.gold1, 0.9, 0.3)
near("enumuni100num02", g.u100, 49.5, 28.9)
near("enumuni10vc05", g.u10vc, 0.1, 0.3)
near("enumexp100num04", g.e100, 9.5, 10)
near("enumexp10num06", g.e10, 0.58, 0.8)
near("nor100bf01", g.n100, 0, 100)
near("nor1num07", g.n1sd, 1, 0.71)
near("uni10knum03", g.u10k, 4999.5, 2887)
print(g.emax, g.umax, g.files)
# the first set's bools and enumerations are indexed, the other sets not
let q = a | where bool10num01 == 1 && golden1 && enumuni1000num01 < 500
let e = q | explain count
print(e.index_where, "|", e.where, "|", e.path)
let n = q | count
print(n, n == len(rows(a | where bool10num01 == 1 && golden1 && enumuni1000num01 < 500 && nor1bf02 < 100)))
print((a | explain where bool10num02 == 1 | count).path)
EOC
"$COMB" check.comb
