# compress_file and decompress_file: a file there and back byte for byte (an
# empty one too, and one of several pieces), the frame a standard LZ4 one
# (its magic number, which lz4 -d looks for); a frame cut
# short, a file that is not LZ4, a missing file and a folder that is not
# there raise with the path and the reason, leaving no output begun.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
awk 'BEGIN { for (i = 0; i < 30000; i++) printf "7325550%03d|20261101100000|%d|2015550100|34|60|0|20261101100100\n", i % 1000, i }' >big.txt
: >empty.txt
"$COMB" - <<'END' 2>&1
for f in ["big.txt", "empty.txt"] {
    compress_file(f, f + ".lz4")
    decompress_file(f + ".lz4", f + ".back")
    print(f, sha256_file(f) == sha256_file(f + ".back"), stat(f + ".lz4").size < stat(f).size || f == "empty.txt")
}
print(sha256(sub(read(open("big.txt.lz4")), 0, 4)) == sha256("\x04\x22\x4d\x18"))
let w = open("cut.lz4", "w")
write(w, sub(read(open("big.txt.lz4")), 0, 5000))
close(w)
for a in [["cut.lz4", "x"], ["big.txt", "x"], ["nope.lz4", "x"]] {
    try { decompress_file(a[0], a[1]) } catch e { print(e, stat("x")) }
}
try { compress_file("big.txt", "no/such/dir") } catch e { print(e) }
END
