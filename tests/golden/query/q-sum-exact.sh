# sum, avg and stat's mean add ints exactly, so no order of the rows
# changes them: a sum is an int when it fits in one (however far the
# running sum strayed past the ints), else the error "integer overflow in
# sum" at the aggregate; avg and mean are the exact sum / count as a float.
# The scan (whose threads add partitions apart and then merge) and the row
# steps over the same rows agree. Floats make the sum a float.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u32\ntagset g: u8\ntagset y: i64\ntagset f: f64\n' >u.schema
"$COMB" store create s --schema u.schema --partition-key id >/dev/null || exit 1
# g 0: -1, MAX, -3, -7, 5, 0, MIN (sum -7, mean -1); g 1: MAX and -MAX
# by turns (sum 1); g 2: MAX twice (sum past the ints)
printf '%s\t%s\t%s\t%s\n' 1 0 -1 0.5 2 0 9223372036854775807 1.5 3 0 -3 0.25 4 0 -7 2 \
    5 0 5 1 6 0 0 0 7 0 -9223372036854775808 0.75 \
    11 1 9223372036854775807 1 12 1 -9223372036854775807 1 13 1 9223372036854775807 1 \
    14 1 -9223372036854775807 1 15 1 1 1 16 1 9223372036854775807 1 \
    17 1 -9223372036854775807 1 21 2 9223372036854775807 1 22 2 9223372036854775807 1 >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("s")
let a = rows(ds)
fn both(name, n, m) { if n == m { print(name, n) } else { print(name, n, "DIFFERS from", m) } }
both("g0", str(ds | where g == 0 | group by { s: sum(y), a: avg(y), t: sum(y) / count() }),
     str(a | where g == 0 | group by { s: sum(y), a: avg(y), t: sum(y) / count() }))
both("g01", str(ds | where g < 2 | group by g { s: sum(y), a: avg(y), f: sum(f), af: avg(f) }),
     str(a | where g < 2 | group by g { s: sum(y), a: avg(y), f: sum(f), af: avg(f) }))
both("avg-past", str(ds | group by g { a: avg(y), n: count() }), str(a | group by g { a: avg(y), n: count() }))
both("reversed", str(a | where g < 2 | group by g { s: sum(y), a: avg(y) }),
     str(reverse(rows(a | where g < 2)) | group by g { s: sum(y), a: avg(y) }))
fn col(st) { for c in st { if c.field == "y" { return str([c.min, c.max, c.mean]) } } }
both("stat-g0", col(ds | where g == 0 | stat), col(a | where g == 0 | stat))
both("stat", col(ds | stat), col(a | stat))
try { print(ds | group by g { s: sum(y) }) } catch e { print("scan:", e) }
try { print(a | group by g { s: sum(y) }) } catch e { print("rows:", e) }
END
# The error names the aggregate's place, in both.
"$COMB" -e 'print(open("s") | group by g { s: sum(y) })' 2>&1
"$COMB" -e 'print(rows(open("s")) | group by g { s: sum(y) })' 2>&1
# Comb values: the order of the rows does not matter; ints stay ints.
"$COMB" - <<'END'
print([{y: 9223372036854775807}, {y: 1}, {y: -9223372036854775807}] | group by { s: sum(y), a: avg(y) })
print([{y: 9223372036854775807}, {y: -9223372036854775807}, {y: 1}] | group by { s: sum(y), a: avg(y) })
print([{y: 1}, {y: 2.5}, {y: nil}, {y: 2}] | group by { s: sum(y), a: avg(y), n: count() })
print([{y: -9223372036854775807 - 1}, {y: -1}, {y: 1}] | group by { s: sum(y), a: avg(y) })
print([{y: 9223372036854775807}, {y: 9223372036854775807}, {y: -9223372036854775807}] | stat)
try { print([{y: -9223372036854775807 - 1}, {y: -1}] | group by { s: sum(y) }) } catch e { print(e) }
END
