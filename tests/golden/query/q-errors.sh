# Query errors name the file, line and column of what is wrong: unknown
# fields (with a suggestion), type mismatches, a condition mixing tag and
# tagset fields, a tag field as a group key over tagsets, aggregates
# outside group by, a verb in the wrong place, an unknown verb, bad take
# counts, sets and regexes; and a failing row step.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" "$COMB_SRCDIR/tests/golden/query/calls.inc" || exit 1
run() { printf '%s\n' "$1" > q.comb; "$COMB" q.comb 2>&1 | head -1; }
run 'let ds = open("calls")
ds | where bsdi == 34 | count'
run 'open("calls") | where (onum == "7325551212") && (bsid == 34) | count'
run 'open("calls") | where sys == "RICS" && status > dur | count'
run 'open("calls") | group by sys { n: count() }'
run 'open("calls") | where any(tags, sys == 5) | count'
run 'open("calls") | where dur | count'
run 'open("calls") | where dur + "x" > 1 | count'
run 'open("calls") | select n: sum(dur)'
run 'open("calls") | group by bsid { n: count(sum(dur)) }'
run 'open("calls") | group by bsid { n: sum(state) }'
run 'open("calls") | count | where bsid == 1'
run 'open("calls") | wher bsid == 1 | count'
run 'open("calls") | take -1'
run 'open("calls") | take dur'
run 'open("calls") | where onum in 5 | count'
run 'open("calls") | where onum in ["x"] | count'
run 'open("calls") | where dnum ~ 5 | count'
run 'open("calls") | where first(tags, true) == 1 | count'
run 'open("calls") | where any(bsid, true) | count'
run 'open("calls") | tags | where any(tags, true) | count'
run 'open("calls") | where myfn(onum) | count'
run 'open("calls") | group by bsid | where nn > 1'
run '[{a: 1}, {a: "x"}] | where a > 0 | count'
run '5 | count'
run 'open("calls") | explain | count'
run 'open("calls") | select 1 + 2'
run 'let q = open("calls") | count
q | where bsid == 1'
run 'open("calls") | group bsid'
# a group's items are made of aggregates: a row's value outside one (it
# has no row after the scan; count(tags) there crashed)
run 'open("calls") | group by bsid { n: count(tags) }'
run 'open("calls") | group by bsid { n: count(), d: dur }'
run '[{a: 1, tags: [{b: 2}]}] | group by a { n: count(tags, b == 2) }'
# a tag field where the rows are tagsets: named as such, in a select too
run 'open("calls") | select onum, sys'
run 'open("calls") | select onum, d: status + 1'
# `tags` after a step that made rows without tags
run 'open("calls") | group by state | tags | count'
run 'open("calls") | select onum | tags | count'
