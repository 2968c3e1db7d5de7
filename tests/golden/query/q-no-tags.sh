# A store whose schema has no tag fields: rows collected from several
# partitions (select, sort, take) come back whole. Each row record once
# reserved a tag count it never wrote, so the second row read garbage.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u64\ntagset n: u32\n' >n.schema
"$COMB" store create s --schema n.schema --partition-key id --partitions 8 >/dev/null || exit 1
printf '%s\t%s\n' 1 5 3 7 2 9 40 11 17 13 >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("s")
print(ds | select id, n)
print(ds | sort n desc | take 3 | select id, n)
print(ds | where n > 6 | count, ds | count)
for r in rows(ds | sort id) { print(r.id, r.n) }
END
