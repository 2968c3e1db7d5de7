# Ctrl-C stops a long scan within about a block: a store of 100,000
# generated tagsets (48 blocks) is scanned with a regex that takes
# tens of microseconds a tag (nested quantifiers, PCRE2's shortcuts off),
# some 15 s of CPU in all; SIGINT comes 0.3 s into the scan. comb must
# exit with 130 saying "interrupted", well within 3 s of the signal (it
# takes about half a second here, a few times that when loaded).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 100000 --seed 4 --volumes 2 --partitions 4 >/dev/null || exit 1
slow='(*NO_START_OPT)(*NO_AUTO_POSSESS)^(\d+)+(\d+)+(\d+)+x'
"$COMB" -e "print(\"scanning\"); flush(); open(\"calls\") | tags | where dnum ~ /$slow/ | count" \
    >out 2>err &
pid=$!
i=0
while [ ! -s out ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.3
t0=$(date +%s%N)
kill -INT $pid || echo "the scan ended before the signal"
wait $pid
status=$?
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
cat out
echo "exit status $status"
grep -o interrupted err
if [ $ms -lt 3000 ]; then echo "stopped within 3 s"; else echo "stopped after $ms ms"; fi
