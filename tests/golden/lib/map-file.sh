# map_file: the rest of a regular file as one string, mapped: the same
# bytes read would give (what was buffered first), the file left at its end,
# "" at the end, nil for a pipe; a file of whole pages (the byte after the
# string is read by natives that look for a NUL); strings made from it;
# mappings let go of by the collector; a file truncated while mapped: its
# bytes past the new end read as zeros, and the next call raises a read
# error naming it, once (caught here).
dir=$(mktemp -d) || exit 99
trap 'rm -rf "$dir"' EXIT
printf 'hello\nworld\n' > "$dir/small"
head -c 4096 /dev/zero | tr '\0' 'p' > "$dir/page"
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "line %d\n", i }' > "$dir/lines"
cp "$dir/lines" "$dir/cut"
"$COMB" - "$dir" <<'PROG'
let d = args()[0]
let f = open(d + "/small")
let s = map_file(f)
print(len(s), s == "hello\nworld\n", find(s, "world"), find(s, "o", 5, 7), find(s, "o", 5, 8))
print(read(f) == "", map_file(f) == "", read(f, 3))
close(f)
f = open(d + "/lines")
let head = read(f, 10)
let rest = map_file(f)
close(f)
print(head + rest == read(open(d + "/lines")), len(rest), sub(rest, 0, 8))
let t = rest + "more"
print(len(t), sub(t, len(t) - 12), len(rest))
f = open(d + "/page")
let p = map_file(f)
print(len(p), p == read(open(d + "/page")))
try { stat(p) } catch e { print("stat:", len(e) > 0) }
print(map_file(popen("echo hi")))
let n = 0
for i in 0..3000 {
    let g = open(d + "/small")
    n += len(map_file(g))
    close(g)
}
let maps = 0
for l in lines("/proc/self/maps") { if find(l, d + "/small") != nil { maps += 1 } }
print(n, maps < 500)
fn cut_error(e) { return sub(e, len("cannot read '" + d)) }
f = open(d + "/cut")
let c = map_file(f)
system("truncate -s 4096 " + d + "/cut")
let at = nil
try { at = find(c, "\0"); print("not raised") } catch e { print(cut_error(e)) }
print(at, len(c), find(c, "line 2999"), sub(c, 4090, 4100) == sub(c, 4090, 4096) + "\0\0\0\0")
close(f)
try { print(len(c)) } catch e { print("raised again") }
print("once")
PROG
