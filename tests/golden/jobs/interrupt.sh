# ^C during jobs_run stops the program (exit 130); the job it started goes
# on under its spawner, and the next jobs() of the directory adopts it or
# finds it finished: it ran once.
tmp=$(mktemp -d)
"$COMB" -e "let d = jobs(\"$tmp/run\")
job(d, {name: \"slow\", run: \"touch $tmp/started; sleep 0.5; echo ran >> $tmp/out\"})
jobs_run(d)
print(\"not reached\")" 2>"$tmp/err" &
pid=$!
n=0
while [ ! -e "$tmp/started" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
kill -INT $pid
wait $pid
echo "status $?"
cat "$tmp/err"
"$COMB" -e "let d = jobs(\"$tmp/run\")
let r = jobs_run(d)
print(r.done, jobs_status(d, \"slow\").runs)"
cat "$tmp/out"
rm -rf "$tmp"
