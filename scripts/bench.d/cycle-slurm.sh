#!/bin/sh
# cycle-slurm.sh: `scripts/bench cycle --backend slurm`: the overhead of the
# Slurm backend (docs/CLUSTER.md) against the embedded dispatcher for the same
# cycle, day by day, interleaved (embedded, then Slurm, on two copies of the
# same deliveries), on a private one-node localhost Slurm
# (tests/integration/slurm-lib.sh). Prints a markdown table: wall seconds of
# each, the Slurm path's added wall time, the Slurm jobs it submitted, the
# time the units' jobs took on the critical path (each stage's longest unit,
# from its first job's start to its last job's end in the unit's journal) and
# so the Slurm path's own overhead (its wall time less that, which the load of
# a shared machine disturbs much less than the walls), and the CPU seconds of
# the submitting `comb cycle` (its units run under slurmstepd, outside it).
# The reports of both are compared with the generator's.
# Env: BENCH_DAYS (3), BENCH_CALLS (50000), BENCH_SEED, BENCH_KEEP, BENCH_VOLUMES (2),
# BENCH_PARTITIONS (4).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
COMB=${COMB:-$top/comb}
days=${BENCH_DAYS:-3}
calls=${BENCH_CALLS:-50000}
seed=${BENCH_SEED:-1}
keep=${BENCH_KEEP:-30}
vols=${BENCH_VOLUMES:-2}
parts=${BENCH_PARTITIONS:-4}
. "$top/tests/integration/slurm-lib.sh"
tmp=$(mktemp -d /tmp/bench-slurm.XXXXXX)
trap 'slurm_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP PIPE
slurm_start "$tmp/slurm" 1 || { echo "bench cycle --backend slurm: no Slurm here: ${slurm_why:-}" >&2; exit 1; }

timed() { /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$@"; }
wall_of() { awk '{ printf "%.2f", $1 }' "$tmp/time"; }
cpu_of() { awk '{ printf "%.2f", $2 + $3 }' "$tmp/time"; }

"$COMB" gen taps "$tmp/gen" --days "$days" --calls-per-day "$calls" --seed "$seed" --keep-days "$keep" >/dev/null
cp -al "$tmp/gen/deliveries" "$tmp/sl-deliveries"
mkdir -p "$tmp/in" "$tmp/sl-in"
layout="--keep-days $keep --volumes $vols --partitions $parts"

echo "| day | tags in store | embedded wall s | embedded CPU s | Slurm wall s | added wall | Slurm jobs | in units s | Slurm overhead s | submitter CPU s | reports |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
tags=0
for d in $(ls "$tmp/gen/deliveries"); do
    tags=$((tags + $(awk 'NR > 1 { n += $2 } END { print n + 0 }' "$tmp/gen/expected/$d/flow.tsv")))
    mv "$tmp/gen/deliveries/$d"/* "$tmp/in/"
    timed "$COMB" cycle --store "$tmp/emb" --incoming "$tmp/in" --date "$d" $layout >/dev/null
    ew=$(wall_of) ec=$(cpu_of)
    mv "$tmp/sl-deliveries/$d"/* "$tmp/sl-in/"
    timed "$COMB" cycle --store "$tmp/sl" --incoming "$tmp/sl-in" --date "$d" $layout --backend slurm >/dev/null
    sw=$(wall_of) sc=$(cpu_of)
    n=$(wc -l <"$tmp/sl/cycle/$d/jobs/slurm/units")
    same=ok
    for f in "$tmp/gen/expected/$d"/*; do
        cmp -s "$f" "$tmp/emb/reports/$d/${f##*/}" || same="embedded DIFFER"
        cmp -s "$f" "$tmp/sl/reports/$d/${f##*/}" || same="Slurm DIFFER"
    done
    added=$(awk -v e="$ew" -v s="$sw" 'BEGIN { printf "%+.2f s (%+.0f%%)", s - e, 100 * (s - e) / e }')
    iu=$(slurm_critical_path "$tmp/sl/cycle/$d/jobs")
    ov=$(awk -v w="$sw" -v u="$iu" 'BEGIN { printf "%.2f", w - u }')
    echo "| $d | $tags | $ew | $ec | $sw | $added | $n | $iu | $ov | $sc | $same |"
done
