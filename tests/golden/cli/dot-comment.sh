# A dot command's argument ends at a `#` comment (README's `.schema   # ...`),
# unless the `#` is inside quotes or inside a word.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 50 --seed 2 >/dev/null || exit 1
printf 'print("read")\n' > 'a#b.comb'
printf 'print("quoted")\n' > 'c #d.comb'
"$COMB" --norc calls <<'END'
.schema   # the store bound to ds
.mode csv # machine-readable
[{"a": 1, "b": 2}]
.mode     # which mode
.timer on # times go to stderr
.timer    # on or off
.timer off
.read a#b.comb   # a '#' inside a word is the file's
.read "c #d.comb" # in quotes too
.mode #
END
echo "status $?"
