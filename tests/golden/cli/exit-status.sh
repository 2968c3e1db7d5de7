# 0 on success, 1 on a runtime error or a syntax error.
"$COMB" -e 'print(1)' >/dev/null; echo "ok: $?"
"$COMB" -e 'error("x")' 2>/dev/null; echo "runtime error: $?"
"$COMB" -e 'let = ' 2>/dev/null; echo "syntax error: $?"
