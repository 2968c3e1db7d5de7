# Bad usage exits 2: -e without CODE, or no program at all.
"$COMB" -e 2>&1 | head -1; echo "status $("$COMB" -e >/dev/null 2>&1; echo $?)"
"$COMB" 2>&1 | head -1; echo "status $("$COMB" >/dev/null 2>&1; echo $?)"
