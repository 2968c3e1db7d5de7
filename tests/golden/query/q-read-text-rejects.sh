# read_text's options for records checked line by line (tap files, logs):
# compact times (YYYYMMDDhhmmss, checked strictly), no quoting (quote: ""),
# a pattern every line must match (a blank line too), fields no column gives
# (set) and the line number (line_field); the rows that do not parse go to
# the rejects array with file, line, text and reason, nothing on stderr, and
# a file none of whose rows parse is not an error then. Streamed into load,
# the same rows and rejects. A file of many pieces (its lines read whole,
# across the reads) with \r\n line ends. skip: lines skipped whatever they say.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'id|ts|n\n1|20261101120000|5\n\n2|20261131120000|6\n3|2026110112000a|7\n"4|20261101120001|8\n5|20261101120002|99999\n6|20261101|9\n' >a.log
printf 'id|ts|n\nx|y|z\n' >b.log
awk 'BEGIN { print "id|ts|n"; for (i = 1; i <= 20000; i++) printf "%d|20261101120000|%d\r\n", i, i % 7 }' >big.log
"$COMB" - <<'END' 2>&1
let s = schema("key id: u32; key ts: time; tag n: u16; tag src: char[8]; tag line: u32")
let opts = {delim: "|", quote: "", compact_time: true, pattern: /^[^|]*\|[0-9]+\|[0-9]+$/,
            set: {src: "a"}, line_field: "line"}
let rej = []
opts.rejects = rej
for r in read_text("a.log", s, opts) { print(r) }
for r in rej { print(r) }
let rej2 = []
opts.rejects = rej2
opts.stream = true
print(load("a.ts", read_text("a.log", s, opts), {schema: s}))
for t in open("a.ts") { print(t) }
print(len(rej2))
let rej3 = []
print(len(read_text("b.log", s, {delim: "|", rejects: rej3})), rej3[0].reason)
let big = read_text("big.log", s, {delim: "|", quote: "", compact_time: true, line_field: "line"})
let total = 0
for r in big { total += r.n }
print(len(big), big[19999], total)
# skip: the first line whatever it says (here not the columns' names), lines counted from the file's
let sk = read_text("b.log", s, {delim: "|", skip: 1, header: false, columns: ["id", "ts", "n"], rejects: []})
print(len(sk), read_text("a.log", s, {delim: "|", quote: "", skip: 3, header: false,
    columns: ["id", "ts", "n"], compact_time: true, line_field: "line", rejects: []}))
try { read_text("a.log", s, {skip: -1}) } catch e { print(e) }
try { read_text("a.log", s, {delim: "|", set: {id: 1}}) } catch e { print(e) }
try { read_text("a.log", s, {delim: "|", line_field: "nope"}) } catch e { print(e) }
try { read_text("a.log", s, {delim: "|", pattern: "x"}) } catch e { print(e) }
END
