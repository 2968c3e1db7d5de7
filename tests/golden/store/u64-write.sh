# A u64 above comb's ints (2^63 and up) reads as a float (read_text, rows)
# and writes back to a u64 field as the same number, into a tagset file and
# into a store; a float of 2^64 or more is still out of range.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u32\ntagset u: u64\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key id >/dev/null || exit 1
printf '1\t9223372036854775808\n2\t18446744073709549568\n3\t7\n' >in.tsv
"$COMB" - <<'END'
let sc = schema(open("s"))
let read = read_text("in.tsv", sc, {header: false})
print(read | write("f.tags", {schema: sc}), read | write(open("s")))
print(str(rows(open("f.tags"))) == str(read), str(rows(open("s") | sort id)) == str(read))
print(read)
[{id: 4, u: pow(2, 64)}] | write("g.tags", {schema: sc})
END
