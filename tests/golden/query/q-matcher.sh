# `f in M` with M a matcher: a comb function s -> bool (matcher(fn)), here
# gre's many-keyword matchers (gre.query_matcher). The kernels run the other
# conjuncts first; the matcher's conjuncts run last, on the VM's thread,
# over the rows those kept. Each count is checked against the same
# selection by a regex and by a comb loop over the rows with gre.matches.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 20000 --seed 4 --volumes 2 --partitions 2 >/dev/null || exit 1
"$COMB" - <<'END'
import "gre"
let ds = open("calls")
let all_rows = rows(ds)
# overlapping keywords, one a prefix of another, some absent
let words = ["2012742", "201274", "6094", "97390179", "55512", "0000000", "x!"]
let m = gre.compile(words, nil)
let qm = gre.query_matcher(m)
let re = /2012742|201274|6094|97390179|55512|0000000|x!/
print(type(qm), qm)
fn some(tags, p) { for t in tags { if p(t) { return true } } return false }
fn loop(p) { let n = 0; for r in all_rows { if p(r) { n += 1 } } return n }
fn check(name, a, b, c) {
    if a == b && a == c { print(name, a) } else { print(name, a, "DIFFERS:", b, c) }
}
check("any", ds | where any(tags, dnum in qm) | count, ds | where any(tags, dnum ~ re) | count,
      loop(fn(r) { return some(r.tags, fn(t) { return gre.matches(m, t.dnum) }) }))
check("bare", ds | where dnum in qm | count, ds | where dnum ~ re | count,
      loop(fn(r) { return some(r.tags, fn(t) { return gre.matches(m, t.dnum) }) }))
check("and", ds | where dnum in qm && state == "open" | count,
      ds | where dnum ~ re && state == "open" | count,
      loop(fn(r) { return r.state == "open" && some(r.tags, fn(t) { return gre.matches(m, t.dnum) }) }))
check("or-not", ds | where !(dnum in qm) || onum < 5000000000 | count,
      ds | where !(dnum ~ re) || onum < 5000000000 | count,
      loop(fn(r) { return !some(r.tags, fn(t) { return gre.matches(m, t.dnum) }) || r.onum < 5000000000 }))
let n = 0
for r in all_rows { for t in r.tags { if gre.matches(m, t.dnum) { n += 1 } } }
check("tags", ds | tags | where dnum in qm | count, ds | tags | where dnum ~ re | count, n)
check("group", str(rows(ds | where dnum in qm | group by state { n: count() })),
      str(rows(ds | where dnum ~ re | group by state { n: count() })),
      str(rows(all_rows | where any(tags, dnum ~ re) | group by state { n: count() })))
check("take", len(rows(ds | where dnum in qm | take 7)), len(rows(ds | where dnum ~ re | take 7)), 7)
# an enum field, case folded
let ric = gre.query_matcher(gre.compile(["ric", "AUD"], {icase: true}))
check("enum", ds | where sys in ric | count, ds | where sys ~ /(?i)ric|aud/ | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.sys == "RICS" || t.sys == "AUDIT" }) }))
# any comb function
let nines = matcher(fn(s) { return len(s) == 10 && s ~ /^9/ })
check("fn", ds | where dnum in nines | count, ds | where dnum ~ /^9.........$/ | count,
      loop(fn(r) { return some(r.tags, fn(t) { return t.dnum ~ /^9/ }) }))
# an array source: row steps ask the matcher too
let few = rows(ds | take 300)
check("rows", few | where any(tags, dnum in qm) | count, few | where any(tags, dnum ~ re) | count,
      len(rows(few | where any(tags, dnum ~ re))))
# the matcher's conjunct comes last, and one thread asks comb
let e = ds | where dnum in qm && onum == 7325551212 | explain
print(e.where, e.threads, e.partitions_read)
# how many times comb was asked: only for the rows the kernels kept
let asked = 0
let counting = matcher(fn(s) { asked += 1; return gre.matches(m, s) })
let kept = ds | where onum == 7325551212 && dnum in counting | count
print(kept, asked, asked == (ds | where onum == 7325551212 | tags | count))
END
# Errors: raised inside the function (reported where they happen, and
# catchable), a function that does not return a bool, a matcher for ints.
cat > q.comb <<'END'
let ds = open("calls")
let bad = matcher(fn(s) { if s > "5" { error("boom at " + s) } return false })
try { print(ds | where dnum in bad | count) } catch e { print("caught:", e) }
print(ds | where state == "closed" | where dnum in bad | count)
END
"$COMB" q.comb 2>&1
"$COMB" -e 'open("calls") | where dnum in matcher(fn(s) { return 1 }) | count' 2>&1 | head -1
"$COMB" -e 'open("calls") | where onum in matcher(fn(s) { return true }) | count' 2>&1 | head -1
"$COMB" -e 'matcher(5)' 2>&1 | head -1
