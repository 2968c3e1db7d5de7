# Bad usage exits 2: -e without CODE. (No program at all is not bad usage:
# it is the prompt, or a batch of standard input; see batch.sh.)
"$COMB" -e 2>&1 | head -1; echo "status $("$COMB" -e >/dev/null 2>&1; echo $?)"
