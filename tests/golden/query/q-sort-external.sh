# A sort without take whose rows pass COMB_SORT_MB goes to the external
# sort: sorted runs spilled to $TMPDIR, merged. Its rows are the in-memory
# sort's, byte for byte (several keys, desc, ties kept in scan order, nil
# keys first, tagsets with their tags, tag rows), for `for` and for rows();
# no temporary file is left; with a TMPDIR that cannot hold the runs the
# query fails with a clear error (so the small budget did spill), while the
# default budget sorts these rows in memory without it.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 20000 --seed 4 --volumes 2 --partitions 2 >/dev/null || exit 1
cat >q.comb <<'END'
let ds = open("calls")
for r in ds | sort state, first(tags, sys == "AUDIT").dur desc, cid { print(r) }
for r in ds | tags | sort dur desc, sys { print(r) }
for r in ds | where state != "open" | sort count(tags) { print(r.onum, r.ts) }
print(str(rows(ds | tags | where bsid < 50 | sort bsid desc)))
for r in ds | tags | select s: sys, d: dur, onum | sort d, s desc { print(r) }
END
# and a schema without tag fields (a record per row, no tag count)
printf 'key id: u64\ntagset n: u32\n' >n.schema
"$COMB" store create s --schema n.schema --partition-key id --partitions 4 >/dev/null || exit 1
awk 'BEGIN { for (i = 1; i <= 60000; i++) printf "%d\t%d\n", i * 7919 % 100003, i % 97 }' >d.tsv
"$COMB" store load s d.tsv >/dev/null || exit 1
echo 'for r in open("s") | sort n desc, id { print(r.id, r.n) }' >>q.comb
mkdir tmp
TMPDIR=$d/tmp COMB_SORT_MB=1 "$COMB" q.comb >small || exit 1
"$COMB" q.comb >big || exit 1
wc -l <big
cmp small big && echo same rows
ls -A tmp | wc -l
TMPDIR=$d/none COMB_SORT_MB=1 "$COMB" -e 'print(len(rows(open("calls") | tags | sort dur)))' 2>&1 |
    sed 's|'"$d"'|D|'
TMPDIR=$d/none "$COMB" -e 'print(len(rows(open("calls") | tags | sort dur)))'
TMPDIR=$d/none COMB_SORT_MB=1 "$COMB" -e 'for r in open("calls") | tags | select d: dur | sort d { }' 2>&1 |
    sed 's|'"$d"'|D|'
# Leaving the loop early removes the runs too: a raise in its body, and
# Ctrl-C (the process sends itself SIGINT from the body: exit 130).
TMPDIR=$d/tmp COMB_SORT_MB=1 "$COMB" -e '
    try { for r in open("calls") | tags | sort dur { error("stop") } } catch e { print(e) }
    let status = system("ls -A $TMPDIR | wc -l")'
TMPDIR=$d/tmp COMB_SORT_MB=1 "$COMB" -e '
    let n = 0
    for r in open("calls") | tags | sort dur {
        if n == 0 { system("ls -A $TMPDIR | wc -l; touch go") }
        n += 1
        for i in 0..3000 { }
    }' 2>err &
pid=$!
i=0
while [ ! -f go ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
# Again until it ends: system() ignores SIGINT until its command is done.
while kill -INT $pid 2>/dev/null; do sleep 0.3; done
wait $pid
echo "exit status $?"
grep -o interrupted err
ls -A tmp | wc -l
# and exit() in the body
TMPDIR=$d/tmp COMB_SORT_MB=1 "$COMB" -e 'for r in open("calls") | tags | sort dur { exit(3) }'
echo "exit status $?"
ls -A tmp | wc -l
