# The file system natives: ls sorts, stat tells files from directories and
# nothing, mkdir makes parents, rename replaces, remove says whether there was
# one, and sha256/sha256_file agree with coreutils' sha256sum.
dir=$(mktemp -d) || exit 99
printf 'hello\n' > "$dir/b.txt"
head -c 100000 /dev/zero | tr '\0' 'x' > "$dir/a.big"
("$COMB" - "$dir" <<'PROG'
let d = args()[0]
print(ls(d))
print(mkdir(d + "/x/y/z"), mkdir(d + "/x/y/z"))
print(stat(d + "/x").type, stat(d + "/b.txt").type, stat(d + "/b.txt").size, stat(d + "/none"))
rename(d + "/b.txt", d + "/x/c.txt")
print(ls(d), ls(d + "/x"))
print(remove(d + "/x/y/z"), remove(d + "/x/y/z"))
print(sha256("abc"))
print(sha256_file(d + "/x/c.txt") == sha256("hello\n"))
print(sha256_file(d + "/a.big"))
try { ls(d + "/none") } catch e { print(e) }
try { remove(d + "/x") } catch e { print(e) }
try { sha256_file(d + "/none") } catch e { print(e) }
PROG
) 2>&1 | sed "s#$dir#DIR#g"
sha256sum "$dir/a.big" | cut -c1-64
rm -r "$dir"
