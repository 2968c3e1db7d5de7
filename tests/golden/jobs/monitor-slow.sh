# A monitor slower than its period: the run still ends once its jobs are
# done (it used to start the next monitor before checking, and so never
# saw the monitor idle). timeout turns a hang into a failure.
tmp=$(mktemp -d)
timeout 30 "$COMB" -e "
let d = jobs(\"$tmp/run\")
for i in 0..3 { job(d, {name: \"j\" + str(i), run: \"true\"}) }
let r = jobs_run(d, {monitor: \"sleep 0.3; true\", every: 0.05})
print(r.ok, r.done)"
echo "status $?"
rm -rf "$tmp"
