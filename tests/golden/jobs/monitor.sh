# jobs_run with a monitor: PRS_LIMIT starts at 0, so nothing using it could
# start and the run would stop stuck; the tagcache monitor, run every 0.1 s
# by the embedded dispatcher, finds the cache small and opens it.
tmp=$(mktemp -d)
mkdir "$tmp/cache"
COMB_TAGCACHE=$tmp/cache COMB_TAGCACHE_MAX=1000000 COMB_PRS_LIMIT=2 "$COMB" -e "
let d = jobs(\"$tmp/run\")
jobs_limit(d, \"PRS_LIMIT\", 0)
for i in 0..4 { job(d, {name: \"parse\" + str(i), run: \"true\", uses: \"PRS_LIMIT\"}) }
let r = jobs_run(d, {monitor: \"$COMB_SRCDIR/stdlib/monitors/tagcache.comb\", every: 0.1})
print(r.ok, r.done, r.resources[\"PRS_LIMIT\"][\"limit\"])"
rm -rf "$tmp"
