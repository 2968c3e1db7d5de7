# Group keys of few values (enum symbols, bools, u8 and i8 fields, also
# through first/last over tags, and several together) index a dense array
# of groups: the answers equal the group table's (COMB_GROUP_HASH=1), on
# random data with nils (tagsets without tags), for every aggregate, and
# for no rows at all.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
cat > q.comb <<'END'
schema s {
    key id: u64
    tagset st: enum(open, billed, closed); tagset ok: bool; tagset small: i8
    tagset dur: u32
    tag sys: enum(RICS, BILL, SWITCH, TAP); tag status: u8
}
let ds = create_store("calls", s, {partkey: "id", volumes: 1, partitions: 3})
srand(5)
let input = []
for i in 0..4000 {
    let tags = []
    for t in 0..random(0, 4) { push(tags, {sys: random(4), status: random(0, 300) % 256}) }
    push(input, {id: i, st: random(3), ok: random(2) == 1, small: random(-128, 128),
                 dur: random(100000), tags: tags})
}
load(ds, input, {block_size: 4096})
let q = open("calls")
print(rows(q | group by st { n: count() }))
print(rows(q | group by ok, st { n: count(), d: sum(dur), lo: min(dur), hi: max(dur) }))
print(rows(q | group by small { n: count(), a: avg(dur), k: distinct(st) }))
print(rows(q | group by s: last(tags, true).sys { n: count() }))
print(rows(q | group by s: first(tags, status > 100).status, st { n: count(), m: max(small) }))
print(rows(q | group by big: dur > 50000, ok { n: count() }))
print(rows(q | tags | group by sys, status { n: count(), d: distinct(st) }))
print(rows(q | where dur > 100000 | group by st { n: count() }))
print(rows(q | where dur > 100000 | group by { n: count() }))
print(rows(q | group by { n: count(), s: sum(dur) }))
END
mkdir a b && (cd a && "$COMB" ../q.comb >../dense) &&
    (cd b && COMB_GROUP_HASH=1 "$COMB" ../q.comb >../hash) || exit 1
cmp dense hash && echo "dense == hash" && cat dense
