# exit(): a file written but never closed is flushed when the program exits.
dir=$(mktemp -d) || exit 99
"$COMB" -e "let f = open(\"$dir/x\", \"w\"); write(f, \"kept\\n\"); exit(0)"
echo "status $?"
cat "$dir/x"
"$COMB" -e "let f = open(\"$dir/y\", \"w\"); write(f, \"kept at the end\\n\")"
cat "$dir/y"
rm -r "$dir"
