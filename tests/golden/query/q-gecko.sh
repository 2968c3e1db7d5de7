# Gecko's semantics on the generated store (`comb store gen`, where bsid,
# sys, status, dnum and dur are tag fields): in a tagset-level where, the
# smallest condition that reads tag fields means "some tag satisfies it",
# i.e. any(tags, COND). Gecko's query runs as written; each count is
# checked against the explicit any(tags, ...) form and against a comb loop
# over the tagsets' rows; explain shows what the predicate became.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 20000 --seed 4 --volumes 2 --partitions 2 >/dev/null || exit 1
"$COMB" -e 'open("calls") | where (onum == 7325551212) && (bsid == 34)'
"$COMB" -e 'open("calls") | where (onum == 7325551212) && (bsid == 34) | count'
"$COMB" - <<'END'
let ds = open("calls")
let all_rows = rows(ds)
fn some(tags, p) { for t in tags { if p(t) { return true } } return false }
fn loop(p) { let n = 0; for r in all_rows { if p(r) { n += 1 } } return n }
fn check(name, bare, explicit, looped) {
    if bare == explicit && bare == looped { print(name, bare) }
    else { print(name, bare, "DIFFERS:", explicit, looped) }
}
check("gecko", ds | where (onum == 7325551212) && (bsid == 34) | count,
      ds | where (onum == 7325551212) && any(tags, bsid == 34) | count,
      loop(fn(r) { return r.onum == 7325551212 && some(r.tags, fn(t) { return t.bsid == 34 }) }))
check("bsid", ds | where bsid == 34 | count, ds | where any(tags, bsid == 34) | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.bsid == 34 }) }))
# Each condition quantifies on its own: two tags may satisfy the two sides.
check("each", ds | where sys == "RICS" && status == 1 | count,
      ds | where any(tags, sys == "RICS") && any(tags, status == 1) | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.sys == "RICS" }) &&
                          some(r.tags, fn(t) { return t.status == 1 }) }))
check("same-tag", ds | where any(tags, sys == "RICS" && status == 1) | count,
      ds | where any(tags, sys == "RICS" && status == 1) | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.sys == "RICS" && t.status == 1 }) }))
check("not", ds | where !(bsid == 1) && state == "open" | count,
      ds | where !any(tags, bsid == 1) && state == "open" | count,
      loop(fn(r) { return !some(r.tags, fn(t) { return t.bsid == 1 }) && r.state == "open" }))
check("or", ds | where bsid in [2, 3] || dur + 1 > 890 | count,
      ds | where any(tags, bsid in [2, 3]) || any(tags, dur + 1 > 890) | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.bsid == 2 || t.bsid == 3 || t.dur + 1 > 890 }) }))
check("regex", ds | where dnum ~ /^201/ | count, ds | where any(tags, dnum ~ /^201/) | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.dnum ~ /^201/ }) }))
check("between", ds | where between(dur, 100, 120) && state != "closed" | count,
      ds | where any(tags, between(dur, 100, 120)) && state != "closed" | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.dur >= 100 && t.dur <= 120 }) && r.state != "closed" }))
check("range", ds | where dur in 100..120 | count, ds | where any(tags, dur in 100..120) | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.dur >= 100 && t.dur < 120 }) }))
check("group", str(rows(ds | where bsid == 34 | group by state { n: count() })),
      str(rows(ds | where any(tags, bsid == 34) | group by state { n: count() })),
      str(rows(all_rows | where any(tags, bsid == 34) | group by state { n: count() })))
let e = ds | where (onum == 7325551212) && (bsid == 34) | explain
print(e.where)
print(e.zone_ranges, e.partitions_read, e.blocks_read < e.blocks)
print((ds | where !(bsid == 1 || sys in ["RICS", "BILL"]) && first(tags, dur > 3).status == 1 | explain).where)
print((ds | where between(dur, 3, 4) | explain).where)
let t = ds | where state == "open" | tags | where bsid == 34 && dnum ~ /^201/ | explain
print(t.where, "|", t.tag_where)
END
# A condition mixing tag and tagset fields is an error; so is a tag field
# where no condition quantifies it.
"$COMB" -e 'open("calls") | where bsid == cid | count' 2>&1 | head -1
"$COMB" -e 'open("calls") | where sys == "RICS" && state < sys | count' 2>&1 | head -1
"$COMB" -e 'open("calls") | sort bsid | take 1' 2>&1 | head -1
# A quantifier reads at the tagset level: beside a bare tag field it mixes
# too (wrapped in any(tags, ...) it would run per tag).
"$COMB" -e 'open("calls") | where count(tags, true) > dur | count' 2>&1 | head -1
"$COMB" -e 'open("calls") | where first(tags, sys == "RICS").dur > dur | count' 2>&1 | head -1
"$COMB" -e 'fn f(a, b) { return a > b }
print(open("calls") | where f(count(tags, true), dur) | count)' 2>&1 | head -1
