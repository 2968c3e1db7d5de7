# comb --help lists the subcommands, and each one's --help works, also after
# its own command word (`comb store gen --help`), on stdout with status 0.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT || exit 99
"$COMB" --help | sed -n '/^commands/,/^$/p'
for c in cycle "cycle status" gen "gen taps" gre jobs report "report show" store "store gen" "store load" "store load DIR --label x"; do
    "$COMB" $c --help >"$d/out" 2>"$d/err"
    echo "comb $c --help: status $? $(head -c 6 "$d/out") stderr $(wc -c <"$d/err")"
done
