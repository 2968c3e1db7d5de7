# --help prints usage on stdout and exits 0; the first lines are stable.
"$COMB" --help | head -3
