# Ctrl-C stops a long scan within about a block: a store of 100,000
# generated tagsets (48 blocks) is scanned with a regex that takes tens of
# microseconds a tag (nested quantifiers, PCRE2's shortcuts off), some 15 s
# of CPU in all (0.3 s a block); SIGINT comes 0.3 s into the scan. comb
# must exit with 130 saying "interrupted" having used well under 4 s of
# CPU (about 1 s here). CPU time, not wall time, so that a loaded machine
# does not make the test flaky. Then the same for a `for` over that where.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 100000 --seed 4 --volumes 2 --partitions 4 >/dev/null || exit 1
# The CPU the shell's waited-for children used (`times` in this shell, not
# in a subshell), in ms.
cpu_ms() {
    awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
                   printf "%d\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }' "$1"
}
# interrupt PROGRAM: runs it, sends SIGINT 0.3 s after it says "scanning".
interrupt() {
    times >t0
    "$COMB" -e "print(\"scanning\"); flush(); $1" >out 2>err &
    pid=$!
    i=0
    while [ ! -s out ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
    sleep 0.3
    kill -INT $pid || echo "the scan ended before the signal"
    wait $pid
    status=$?
    times >t1
    ms=$(( $(cpu_ms t1) - $(cpu_ms t0) ))
    cat out
    echo "exit status $status"
    grep -o interrupted err
    if [ $ms -lt 4000 ]; then echo "stopped within 4 s of CPU"; else echo "stopped after $ms ms of CPU"; fi
}
slow='(*NO_START_OPT)(*NO_AUTO_POSSESS)^(\d+)+(\d+)+(\d+)+x'
interrupt "open(\"calls\") | tags | where dnum ~ /$slow/ | count"
# the same where read by a for, a block at a time on the VM's thread
interrupt "for r in open(\"calls\") | tags | where dnum ~ /$slow/ { print(r) }"
