# `for` over a query reads its rows as they come: the same rows, in the
# same order, as rows(q) gives, for where/select/take/tags/sort pipelines;
# the scan's file is open while the loop runs and closed when it ends,
# however it ends: done, break, return, a raise in the body (then caught);
# 300 broken loops under a limit of 64 open files, then more queries.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 3000 --seed 4 --volumes 1 --partitions 2 >/dev/null || exit 1
(ulimit -n 64 && "$COMB" - <<'END'
let ds = open("calls")
fn same(q) {
    let a = []
    for r in q { push(a, r) }
    return [len(a), str(a) == str(rows(q))]
}
print(same(ds | where state == "open"))
print(same(ds | tags | where bsid < 20 | select onum, bsid, dur | take 5))
print(same(ds | where state == "billed" | select onum, n: count(tags) | where n > 2 | take 40))
print(same(ds | tags | sort dur desc, onum))
print(same(ds | sort state desc, ts))
print(same(ds | tags | sort dur, sys desc | take 7))
print(same(ds | take 0))
print(same(ds | select onum | take 0))
print(same(ds | group by state { n: count() }))
print(same(ds | where state == "billed" | select onum, n: count(tags) | sort n | take 4))
print(same([{a: 2}, {a: 1}] | sort a))
# a sort (and take) right after a select of fields runs in the scan, before
# the select: the order the row step gives the selected rows
let sel = rows(ds | tags | select onum, d: dur, sys)
let q = ds | tags | select onum, d: dur, sys | sort d desc, sys
print(same(q), str(rows(q)) == str(rows(sel | sort d desc, sys)))
print((q | take 3 | explain).then, (ds | select onum, n: count(tags) | sort n | explain).then)
# open files of this process: the scan's reader is open only inside the loop
# (a tagset file's: a store's readers stay open, idle, between scans)
load("f.ts", ds, {schema: schema(ds)})
let f = open("f.ts")
system("ls /proc/$PPID/fd | wc -l >base")
fn fds() { system("test $(ls /proc/$PPID/fd | wc -l) -le $(cat base) && echo closed || echo open") }
let k = 0
for r in f | where state == "open" { if k == 0 { fds() }; k += 1; if k == 5 { break } }
fds()
for r in f | tags | sort dur { k += 1 }
fds()
fn first(q) { for r in q { return r.onum } }
print(first(f | where state == "closed") == rows(f | where state == "closed" | take 1)[0].onum)
fds()
let caught = 0
for i in 0..300 {
    try { for r in f | tags | where dur > 5 { error("bad " + str(r.dur)) } } catch e { caught += 1 }
    for r in f | where state == "open" { break }
}
fds()
print("caught", caught)
let pairs = 0
for a in ds | where state == "open" | take 3 { for b in ds | where state == "open" | take 3 { pairs += 1 } }
print(pairs, ds | where state == "open" | count)
# load and write read a query the same way, and close it after
print(load("l.ts", ds | where state == "open", {schema: schema(ds)}), open("l.ts") | count)
print(ds | where state == "open" | sort ts desc | write("w.ts"), open("w.ts") | count)
fds()
for r in ds | count { }
END
)
