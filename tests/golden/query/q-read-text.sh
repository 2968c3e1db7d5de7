# read_text: |-separated taps with a header and quoted fields (a delimiter,
# a newline inside quotes); rows that do not parse are reported with
# file:line and counted, the rest written into a store through the sort;
# when no row parses (here: one column named for six), read_text fails.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
mkdir taps
printf 'onum|ts|bsid|sys|status|dnum\n7325551212|2026-12-02T13:05:00Z|34|RICS|1|2015551212\n7325551212|2026-12-02T13:05:00Z|34|BILL|0|"20|15"\n7325551213|2026-12-02|35|RICZ|1|x\n7325551214|1000|x|RICS|1|x\n\n7325551215|1000|36|SWITCH|2|"two\nlines"\n7325551216|1000|36\n' > taps/a.tap
printf 'onum|ts|bsid|sys|status|dnum\n7325551299|0|1|BILL|1|\n' > taps/b.tap
printf '1,1970-01-01,5,RICS,1,"a,b"\n' > c.csv
"$COMB" - <<'END' 2>&1
schema calls {
    key onum: u64; key ts: time
    tagset bsid: u16
    tag sys: enum(RICS, BILL, SWITCH); tag status: u8; tag dnum: char[16]
}
let r = read_text("taps/*.tap", calls, {delim: "|", header: true})
for x in r { print(x) }
let ds = create_store("rt", calls, {partitions: 2})
print(r | write(ds))
print(open("rt") | where any(tags, sys == "BILL") | select onum, n: count(tags))
print(read_text("c.csv", calls, {header: false}))
try { read_text("none/*.tap", calls) } catch e { print(e) }
try { read_text("taps/a.tap", calls, {delim: "|", columns: ["onum"], header: false, max_errors: 1}) } catch e { print(e) }
try { read_text("c.csv", calls, {columns: ["onum", "tss"], header: false}) } catch e { print(e) }
END
