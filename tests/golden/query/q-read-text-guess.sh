# read_text without a schema guesses one from the first file's header and
# first rows (text_schema shows it): bool, i64, f64, time (dates, not bare
# seconds), else char[N] at twice the longest value; names made field
# names; the first column the key unless option key names others; option
# types sets a column's type. Header names matched regardless of case
# with ignore_case; columns that name no field skipped with extra:
# "ignore"; an empty symbol is an error, not the first symbol.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'Call Id,start,ok,rate,who,2nd\n1,2026-12-01T10:00:00Z,true,1.5,ann,7\n2,2026-12-02,false,2,bob,\n' > x.csv
printf 'ONUM,Ts,State,Junk\n7325551212,2026-12-01,open,x\n7325551213,2026-12-02,,y\n' > y.csv
"$COMB" - <<'END' 2>&1
print(text_schema("x.csv"))
print(read_text("x.csv"))
print(text_schema("x.csv", {key: ["start", "Call Id"], types: {who: "enum(ann, bob)", rate: "f32"}, sample: 1}))
let r = read_text("x.csv", {key: ["Call_Id"], types: {who: "enum(ann, bob)"}})
print(r[1].who, r[1].start == 2026-12-02, r[0].rate)
try { read_text("x.csv", {types: {who: "u8"}}) } catch e { print(e) }
try { text_schema("x.csv", {key: ["nope"]}) } catch e { print(e) }
try { text_schema("x.csv", {types: {who: "int"}}) } catch e { print(e) }
schema calls { key onum: u64; key ts: time; tagset state: enum(open, billed, closed) }
try { read_text("y.csv", calls) } catch e { print(e) }
print(read_text("y.csv", calls, {ignore_case: true, extra: "ignore"}))
try { read_text("y.csv", calls, {extra: "maybe"}) } catch e { print(e) }
try { read_text("y.csv", calls, {key: ["onum"]}) } catch e { print(e) }
END
