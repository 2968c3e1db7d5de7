# Times in the rows read_text gives (an array, or its stream) show as times
# in tables, CSV and JSON, through queries over them (select, where, group
# by day, a time plus seconds) and in a text file written from them; the
# rows themselves keep ints (arithmetic works; print shows the number).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'id,ts,v\n1,2026-12-01T10:00:00Z,3.5\n2,2026-12-02T11:00:00Z,4\n3,2026-12-02T12:30:00Z,5\n' > t.csv
"$COMB" --norc <<'END'
.mode table
read_text("t.csv")
let a = read_text("t.csv")
a
a | select id, later: ts + 60 | where id > 1
a | group by d: day(ts) { n: count() }
read_text("t.csv", {stream: true}) | select ts | take 1
read_text("t.csv", schema("key id: u32; key ts: time; tagset v: f64")) | take 1
print(a[0].ts, a[1].ts - a[0].ts, type(a[2].ts))
a | write("out.json")
.mode csv
a | take 2
END
cat out.json
"$COMB" --format json -e 'read_text("t.csv") | take 1'
