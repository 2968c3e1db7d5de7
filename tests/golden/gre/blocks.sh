# Printing runs of matching lines across the blocks a file is searched in
# (32 KiB, then 256 KiB): a file of 500 KB where every line matches, and
# one where every third line does, searched as a mapped file, as stdin from
# the file, and from a pipe; each output compared with awk's.
dir=$(mktemp -d) || exit 99
trap 'rm -rf "$dir"' EXIT
awk 'BEGIN { for (i = 0; i < 50000; i++) printf "line %05d %s\n", i, (i % 3 ? "nope" : "yes") }' > "$dir/t"
awk '/yes/' "$dir/t" > "$dir/want3"
for how in file stdin pipe; do
    case $how in
    file) "$COMB" gre e "$dir/t" > "$dir/all"; "$COMB" gre -e yes -e zzz "$dir/t" > "$dir/third" ;;
    stdin) "$COMB" gre e < "$dir/t" > "$dir/all"; "$COMB" gre -e yes -e zzz < "$dir/t" > "$dir/third" ;;
    pipe) cat "$dir/t" | "$COMB" gre e > "$dir/all"; cat "$dir/t" | "$COMB" gre -e yes -e zzz > "$dir/third" ;;
    esac
    cmp -s "$dir/all" "$dir/t" && echo "$how: every line" || echo "$how: every line DIFFERS"
    cmp -s "$dir/third" "$dir/want3" && echo "$how: every third" || echo "$how: every third DIFFERS"
done
# the last line without its newline gets one
printf 'a yes\nno\nyes at the end' > "$dir/nonl"
"$COMB" gre yes "$dir/nonl"
