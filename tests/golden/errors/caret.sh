# An error shows its source line with a caret under its place: syntax and
# runtime errors, in a file and in batch; under a tab, after multi-byte
# characters, in a long line (a window of it), in a function written in an
# earlier batch statement, in an imported module (its file); none for an
# error at the end of the input.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'let x = 1\n\tlet y = x + "s"\n' > tab.comb
"$COMB" tab.comb 2>&1
printf 'let t = "éé" + 1\n' > utf.comb
"$COMB" utf.comb 2>&1
"$COMB" -e 'print("let x = [" + repeat("1, ", 100) + "nosuch" + repeat(", 1", 100) + "]")' > long.comb
"$COMB" long.comb 2>&1
printf 'let x = (1 +\n' > eof.comb
"$COMB" eof.comb 2>&1
printf 'fn half(n) {\n    return n / 0\n}\nlet a = 1\nhalf(a)\n' | "$COMB" 2>&1
printf 'fn boom(v) {\n    return v.field\n}\n' > lib.comb
printf 'import "lib"\nlib.boom(3)\n' > main.comb
"$COMB" main.comb 2>&1
"$COMB" main.comb 2>&1 | sed -n 2,3p    # again, from the module cache
printf 'let a = 1 +* 2\nlet b = )\n' | "$COMB" 2>&1
exit 0
