#!/bin/sh
# cycle-slurm.sh: `scripts/bench cycle --backend slurm`: the overhead of the
# Slurm backends (docs/CLUSTER.md) against the embedded dispatcher for the
# same cycle, day by day, interleaved (embedded, then `--backend slurm`, the
# units as steps of one allocation, then `--backend slurm-jobs`, a batch job
# per unit, on three copies of the same deliveries), on a private one-node
# localhost Slurm (tests/integration/slurm-lib.sh). Prints a markdown table:
# for each, the wall seconds; for the Slurm ones the added wall time, and the
# time the units' jobs took on the critical path (each stage's longest unit,
# from its first job's start to its last job's end in the unit's journal) and
# so the backend's own overhead (its wall time less that, which the load of a
# shared machine disturbs much less than the walls); CPU seconds: the
# embedded run's process tree, and for `slurm` the submitting `comb cycle`'s
# plus its units' (they run under slurmstepd: `comb cycle status` has each
# unit's). The reports of all are compared with the generator's.
# Env: BENCH_DAYS (3), BENCH_CALLS (50000), BENCH_SEED, BENCH_KEEP, BENCH_VOLUMES (2),
# BENCH_PARTITIONS (4), BENCH_DIR (where the data goes; default a new folder in /tmp).
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
tmp=$(mktemp -d "${BENCH_DIR:-/tmp}/bench-slurm.XXXXXX")
trap 'set +e; slurm_stop; rm -rf "$tmp"' EXIT    # (set -e would stop it at a daemon already gone)
trap 'exit 130' INT TERM HUP PIPE
slurm_start "$tmp/slurm" 1 || { echo "bench cycle --backend slurm: no Slurm here: ${slurm_why:-}" >&2; exit 1; }

timed() { /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$@"; }
wall_of() { awk '{ printf "%.2f", $1 }' "$tmp/time"; }
cpu_of() { awk '{ printf "%.2f", $2 + $3 }' "$tmp/time"; }
added() { awk -v e="$1" -v s="$2" 'BEGIN { printf "%+.2f s (%+.1f%%)", s - e, 100 * (s - e) / e }'; }
overhead() { awk -v w="$1" -v u="$(slurm_critical_path "$2")" 'BEGIN { printf "%.2f", w - u }'; }
# the CPU seconds of a day's units, from `comb cycle status`
units_cpu() {
    "$COMB" cycle status --store "$1" | sed -n "/^$2/,/^2/p" |
        awk '$1 == "slurm" { for (i = 1; i < NF; i++) if ($i == "cpu") c += $(i + 1) } END { printf "%.2f", c }'
}

"$COMB" gen taps "$tmp/gen" --days "$days" --calls-per-day "$calls" --seed "$seed" --keep-days "$keep" >/dev/null
cp -al "$tmp/gen/deliveries" "$tmp/sl-deliveries"
cp -al "$tmp/gen/deliveries" "$tmp/sj-deliveries"
mkdir -p "$tmp/in" "$tmp/sl-in" "$tmp/sj-in"
layout="--keep-days $keep --volumes $vols --partitions $parts"

echo "| day | tags in store | embedded wall s | embedded CPU s | slurm wall s | added wall | overhead s | CPU s (submitter + units) | slurm-jobs wall s | added wall | overhead s | reports |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
tags=0
for d in $(ls "$tmp/gen/deliveries"); do
    tags=$((tags + $(awk 'NR > 1 { n += $2 } END { print n + 0 }' "$tmp/gen/expected/$d/flow.tsv")))
    mv "$tmp/gen/deliveries/$d"/* "$tmp/in/"
    timed "$COMB" cycle --store "$tmp/emb" --incoming "$tmp/in" --date "$d" $layout >/dev/null
    ew=$(wall_of) ec=$(cpu_of)
    mv "$tmp/sl-deliveries/$d"/* "$tmp/sl-in/"
    timed "$COMB" cycle --store "$tmp/sl" --incoming "$tmp/sl-in" --date "$d" $layout --backend slurm >/dev/null
    sw=$(wall_of) sc=$(cpu_of)
    su=$(units_cpu "$tmp/sl" "$d")
    mv "$tmp/sj-deliveries/$d"/* "$tmp/sj-in/"
    timed "$COMB" cycle --store "$tmp/sj" --incoming "$tmp/sj-in" --date "$d" $layout --backend slurm-jobs >/dev/null
    jw=$(wall_of)
    same=ok
    for f in "$tmp/gen/expected/$d"/*; do
        cmp -s "$f" "$tmp/emb/reports/$d/${f##*/}" || same="embedded DIFFER"
        cmp -s "$f" "$tmp/sl/reports/$d/${f##*/}" || same="slurm DIFFER"
        cmp -s "$f" "$tmp/sj/reports/$d/${f##*/}" || same="slurm-jobs DIFFER"
    done
    echo "| $d | $tags | $ew | $ec | $sw | $(added "$ew" "$sw") | $(overhead "$sw" "$tmp/sl/cycle/$d/jobs") |" \
         "$sc + $su | $jw | $(added "$ew" "$jw") | $(overhead "$jw" "$tmp/sj/cycle/$d/jobs") | $same |"
done
