# comb - reads the program from standard input.
printf 'let x = 6\nprint(x * 7)\n' | "$COMB" -
