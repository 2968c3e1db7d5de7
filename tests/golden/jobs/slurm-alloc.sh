# The Slurm steps backend's allocation (stdlib/cycle/slurm.comb), with
# stand-ins for salloc, squeue, scontrol and scancel (no Slurm here): while
# salloc waits in the queue, `comb cycle status` says the cycle is pending
# and shows its units waiting for the allocation; salloc granted with the
# nodes still booting, the run waits for them (a bounded wait), then cancels
# the allocation and fails naming it (status then shows the units with the
# allocation's state, STOPPED once Slurm forgot it); nodes that come up in time are used.
tmp=$(mktemp -d)
mkdir "$tmp/bin" "$tmp/in"
export FAKE=$tmp COMB
# squeue: allocation 42 in the state held in $FAKE/state, nodes n[1-2]
cat >"$tmp/bin/squeue" <<'X'
#!/bin/sh
[ -f "$FAKE/up" ] && n=$(cat "$FAKE/up") && [ "$n" -le 0 ] && echo RUNNING None >"$FAKE/state"
[ -f "$FAKE/up" ] && echo $((n - 1)) >"$FAKE/up"
[ -s "$FAKE/state" ] || exit 0    # (forgotten)
echo "42 $(cat "$FAKE/state") n[1-2]"
X
# salloc: 42 queued; meanwhile the status of the run (once its units name
# the allocation); then granted, its nodes booting
cat >"$tmp/bin/salloc" <<'X'
#!/bin/sh
echo "PENDING Resources" >"$FAKE/state"
echo "salloc: Pending job allocation 42"
echo "salloc: job 42 queued and waiting for resources"
if [ -n "$FAKE_STORE" ]; then
    i=0
    while ! grep -q ' 42 ' "$FAKE_STORE"/cycle/*/jobs/slurm/units 2>/dev/null && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i + 1))
    done
    "$COMB" cycle status --store "$FAKE_STORE" >"$FAKE/status" 2>&1
fi
echo "CONFIGURING None" >"$FAKE/state"
echo "salloc: Granted job allocation 42"
X
printf '#!/bin/sh\necho n1; echo n2\n' >"$tmp/bin/scontrol"
printf '#!/bin/sh\necho "scancel $*" >>"$FAKE/log"\necho CANCELLED None >"$FAKE/state"\n' >"$tmp/bin/scancel"
printf '#!/bin/sh\necho "srun $*" >>"$FAKE/log"\nexit 1\n' >"$tmp/bin/srun"
chmod +x "$tmp/bin/"*
export PATH="$tmp/bin:$PATH"

echo "-- a cycle whose allocation waits, then never gets its nodes running"
FAKE_STORE=$tmp/st COMB_SLURM_NODE_WAIT=0.4 "$COMB" cycle --store "$tmp/st" --incoming "$tmp/in" \
    --date 20260101 --volumes 1 --partitions 1 --backend slurm >"$tmp/out" 2>&1
echo "exit $?"
sed "s|$tmp|TMP|g" "$tmp/out"
cut -f 1,2,5 "$tmp/status" | sed "s|$tmp|TMP|g"
cat "$tmp/log"
cat "$tmp/st/cycle/20260101/jobs/slurm/allocation"
"$COMB" cycle status --store "$tmp/st" | cut -f 1,2,5 | sed "s|$tmp|TMP|g"
: >"$tmp/state"
"$COMB" jobs status "$tmp/st/cycle/20260101/jobs" -s | sed "s|$tmp|TMP|g"

echo "-- nodes booting that come up in time"
rm -f "$tmp/log"
echo 3 >"$tmp/up"
"$COMB" -e "import \"cycle/slurm\"
mkdir(\"$tmp/r\"); mkdir(\"$tmp/r/slurm\")
print(slurm.allocation(\"$tmp/r\", 2, fn(id) { print(\"named\", id) }))"
cat "$tmp/r/slurm/allocation"
echo "-- the same again: the allocation running is kept"
"$COMB" -e "import \"cycle/slurm\"
print(slurm.allocation(\"$tmp/r\", 2, fn(id) { print(\"named\", id) }))"
cat "$tmp/log" 2>/dev/null
rm -rf "$tmp"
