# first/last(tags, P).f read the picked tags' values at once: the picks are
# not a run of tags even when the first and last are n - 1 apart (a tagset
# without a hit picks tag 0), so each row reads its own pick. Here the
# picks of first are tags 0, 2, none and 3 of one block (the third tagset
# has no tags), as a group by's arguments (the scan's kernels); the row
# steps over the same rows say what each should be.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END'
schema s { key id: u64; tag st: u8; tag dd: i32 }
let ds = create_store("s", s, {partkey: "id", volumes: 1, partitions: 1})
load(ds, [{id: 1, tags: [{st: 9, dd: 100}]},
          {id: 2, tags: [{st: 0, dd: 1}, {st: 9, dd: 200}]},
          {id: 3, tags: []},
          {id: 4, tags: [{st: 9, dd: 300}]}])
let q = open("s")
print(rows(q | group by id { f: min(first(tags, st > 5).dd), l: max(last(tags, st < 5).dd) }))
print(rows(rows(q) | group by id { f: min(first(tags, st > 5).dd), l: max(last(tags, st < 5).dd) }))
END
