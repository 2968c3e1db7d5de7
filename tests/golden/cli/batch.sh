# comb with no program and standard input not a terminal runs it as a batch:
# statement by statement, values of expressions printed, rows as TSV.
printf 'let x = 6\nx * 7\n[{"a": 1, "b": "x"}]\n' | "$COMB" --norc
# comb - reads the same as one program: values are not printed.
printf 'let x = 6\nx * 7\nprint(x)\n' | "$COMB" -
# an empty batch does nothing
"$COMB" --norc </dev/null; echo "status $?"
