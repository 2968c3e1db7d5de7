# `comb store load` and read_text read the same text as the same values
# (store/fieldtext.c is their one parser): every form of time, also the
# short ones store load once refused (2026-12-02), and the language's time
# literals and totime agree (totime reads what isotime writes, in every
# year; a zone other than Z is not a time); a u64 above 2^63, which
# read_text once refused; f32 text that rounds to the largest f32; empty
# number fields as zero (an empty enum is an error: text-errors.sh);
# spaces and tabs around numbers and times skipped.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u32\ntagset t: time\ntagset f: f32\ntagset u: u64\ntagset e: enum(open, closed)\n' >s.schema
"$COMB" store create s --schema s.schema --partition-key id >/dev/null || exit 1
printf '%s\t%s\t%s\t%s\t%s\n' \
    1 2026-12-02 1.5 18446744073709551615 open \
    2 2026-12-02T13:05 1e-50 9223372036854775808 closed \
    3 '2026-12-02 13:05:07Z' inf 0 open \
    4 1796216700 -2.5 '' open \
    5 +10000-01-01T00:00:00Z 3.4028235e38 7 closed \
    6 ' 2026-12-03 ' ' -1.25' '8 ' open >good.tsv
"$COMB" store load s good.tsv || exit 1
"$COMB" - <<'END'
let loaded = rows(open("s") | sort id)
let read = read_text("good.tsv", schema(open("s")), {header: false})
for r in loaded { print(r.id, isotime(r.t), r.f, r.u, r.e) }
if str(read) == str(loaded) { print("read_text reads the same") } else { print(read) }
print(totime(isotime(-62167219201)) == -62167219201, totime("2026-12-02T13:05:00+01:00"))
print(2026-12-02 == loaded[0].t, 2026-12-02T13:05 == loaded[1].t, totime("2026-12-02 13:05:07Z") == loaded[2].t)
END
