# read_text on text that is wrong in the ways real exports are: a directory
# among the files, an unknown option, a column named twice, a quote never
# closed (reported at its record, not read as the rest of the file), a
# number beyond its type's range, a UTF-8 byte order mark before the header
# (skipped), a value with newlines in a message (escaped).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
mkdir rt dir.csv
printf '\357\273\277id,c,f,t\n1,a,1.5,x\n2,"two\nlines and more than a char[16] holds",2.0,y\n3,b,1e999,z\n4,c,1e-400,w\n5,"open,2.0,y\n6,d,3.0,v\n' >rt/a.csv
printf 'id,id,c\n1,2,x\n' >dup.csv
"$COMB" - <<'END' 2>&1
let s = schema("key id: u32; tagset c: char[16]; tagset f: f64; tag t: char[8]")
for r in read_text("rt/a.csv", s) { print(r) }
try { read_text("*.csv", s) } catch e { print(e) }
try { read_text("rt/a.csv", s, {delimiter: ";"}) } catch e { print(e) }
try { read_text("dup.csv", s) } catch e { print(e) }
try { read_text("dup.csv", s, {header: false, columns: ["id", "c", "id"]}) } catch e { print(e) }
END
