# A tag-level time range (when a tag was seen) can skip blocks only where
# blocks hold few times: a store placed by time windows of its key's time
# (create_store's bucket, comb store create --partition-bucket) puts each
# day's calls in a partition of their own, so the zone maps of `seen` skip
# the other days' blocks; placed by hash, every block holds every day and
# nothing is skipped. explain counts the blocks the tag ranges skip
# (blocks_skipped_by_tags); the answers are the same either way.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" - <<'END' 2>&1
schema calls {
    key onum: u64; key ts: time
    tag sys: enum(RICS, BILL, SWITCH); tag dur: u32; tag seen: time
}
let recs = []
let x = 12345
for i in 0..4000 {
    x = (x * 1103515245 + 12345) % 2147483648
    let ts = 2026-12-01 + (x % (8 * 86400))
    push(recs, {onum: 7320000000 + (x % 100000), ts: ts, sys: ["RICS", "BILL", "SWITCH"][i % 3],
                dur: x % 3600, seen: ts + (x % 600)})
}
let byhash = create_store("hash", calls, {partitions: 8})
let bytime = create_store("time", calls, {partkey: "ts", bucket: 86400, partitions: 8})
load(byhash, recs, {block_size: 4096})
load(bytime, recs, {block_size: 4096})
print(info(bytime).bucket, info(byhash).bucket)
for ds in [byhash, bytime] {
    let e = ds | tags | explain where seen in 2026-12-03T00:00..2026-12-03T06:00
    print(e.blocks, e.blocks_read, e.blocks_skipped_by_tags)
    print(rows(ds | tags | where seen in 2026-12-03T00:00..2026-12-03T06:00 | group by sys { n: count(), d: avg(dur) }))
    let q = ds | explain where any(tags, seen >= 2026-12-05 && seen < 2026-12-05T06:00)
    print(q.blocks_read, q.blocks_skipped_by_tags, ds | where any(tags, seen >= 2026-12-05 && seen < 2026-12-05T06:00) | count)
}
try { create_store("bad", schema("key dnum: char[8]; tag seen: time"), {bucket: 86400}) } catch e { print(e) }
END
