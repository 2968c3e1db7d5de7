# Many groups: rows partitioned by hash into partitions folded each into a
# table of its own (past 65536 groups a worker, or from the first row with
# COMB_GROUP_PARTS=N) give the answers of the one table, on random data:
# keys of ints, strings, several fields and nil (a tagset without such a
# tag), aggregates of ints, floats and conditions (not sums of floats:
# their last bits hang on the rows' order), on 1 and 2 threads, with
# partitions' rows folded many times (a small COMB_SORT_MB) and spilled
# (1 MB), and top-N after them. Aggregates whose arguments are not
# words (a string's max) take the one table whatever is asked.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
cat > q.comb <<'END'
schema s {
    key id: u64
    tagset name: char[8]; tagset small: i16
    tag dd: i32; tag st: u8; tag x: f64
}
let ds = create_store("s", s, {partkey: "id", volumes: 1, partitions: 3})
srand(11)
let input = []
for i in 0..12000 {
    let tags = []
    for t in 0..random(0, 4) {
        push(tags, {dd: random(-20000, 20000), st: random(256), x: random(100000) / 7.0})
    }
    push(input, {id: i, name: "n" + str(random(3000)), small: random(-300, 300), tags: tags})
}
load(ds, input, {block_size: 4096})
let q = open("s")
fn show(r) { print(len(r), r) }
show(rows(q | tags | group by dd { n: count(), c: count(st > 100), s: sum(st), a: avg(st), lo: min(x), hi: max(dd), v: variance(st) }))
show(rows(q | tags | group by name, small { n: count(), lo: min(dd), hi: max(x) }))
show(rows(q | group by name { n: count(), hi: max(small) }))
show(rows(q | group by f: first(tags, st > 250).dd { n: count(), s: sum(small) }))
show(rows(q | tags | group by dd, st { n: count(), a: max(x) } | sort n desc, a | take 9))
show(rows(q | tags | group by dd { n: count(), m: max(name) }))
END
"$COMB" q.comb >plain || exit 1
rm -rf s
run() { COMB_THREADS=$1 COMB_GROUP_PARTS=$2 COMB_SORT_MB=$3 "$COMB" q.comb >"parts$1-$2-$3" &&
        rm -rf s && cmp plain "parts$1-$2-$3" &&
        echo "threads $1, $2 partitions, COMB_SORT_MB=$3: == one table"; }
run 2 4 256 && run 1 16 2 && run 2 16 2 && run 2 64 1 && run 1 256 1 || exit 1
awk '{ print substr($0, 1, 160) }' plain
