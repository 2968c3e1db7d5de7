# A value that does not parse is refused with the same words by `comb store
# load` (which stops) and read_text (which skips the row): f32 text beyond
# its range, which store load once stored as inf; f64 overflow; integers
# beyond their type, also u64 beyond 2^64-1; a date that is not one; an
# unknown symbol; an empty symbol (once the first one); a blank inside a
# number; an empty key.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u32\ntagset t: time\ntagset f: f32\ntagset d: f64\ntagset u: u64\ntagset e: enum(open, closed)\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key id >/dev/null || exit 1
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >bad.tsv; }
try() {
    "$COMB" store load s bad.tsv 2>&1 >/dev/null
    "$COMB" -e 'read_text("bad.tsv", schema(open("s")), {header: false})' 2>&1 | sed 1q
}
row 1 1796216700 1e39 1 1 open; try
row 1 1796216700 1 1e999 1 open; try
row 1 1796216700 1 1 18446744073709551616 open; try
row 1 1796216700 1 1 -1 open; try
row 4294967296 1796216700 1 1 1 open; try
row 1 2026-02-29 1 1 1 open; try
row 1 2026-12-02T13:05:00.5 1 1 1 open; try
row 1 1796216700 1 1 1 opne; try
row 1 1796216700 1 1 1 ''; try
row 1 1796216700 '1 5' 1 1 open; try
row '' 1796216700 1 1 1 open; try
"$COMB" store info s | grep '^generation'
