# A function of the program called with fields in a where: a condition the
# kernels cannot run, so it is a residual conjunct asked on the VM's thread
# for the rows the other conjuncts kept (like a matcher). Each count is
# checked against the same selection written with the query language; on
# the generated store, where dnum, dur and status are tag fields, a call
# with tag fields quantifies like any other condition (any(tags, f(...))).
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
"$COMB" store gen calls --tagsets 20000 --seed 4 --volumes 2 --partitions 2 >/dev/null || exit 1
"$COMB" - <<'END'
let ds = open("calls")
fn check(name, a, b) { if a == b { print(name, a) } else { print(name, a, "DIFFERS:", b) } }
fn long_call(dur, status) { return dur > 600 && status == 1 }
fn nines(s) { return s ~ /^9/ }
fn early(t, st) { return hr(t) < 6 && st != "closed" }
fn hr(t) { return t / 3600 % 24 }
check("two-fields", ds | where long_call(dur, status) | count, ds | where any(tags, dur > 600 && status == 1) | count)
check("and", ds | where nines(dnum) && state == "open" | count, ds | where dnum ~ /^9/ && state == "open" | count)
check("tagset", ds | where early(ts, state) | count, ds | where ts % 86400 < 21600 && state != "closed" | count)
check("tags", ds | tags | where nines(dnum) | count, ds | tags | where dnum ~ /^9/ | count)
check("not-or", ds | where !nines(dnum) || onum < 3000000000 | count, ds | where !(dnum ~ /^9/) || onum < 3000000000 | count)
let lim = 5
check("closure", ds | where any(tags, fn(s) { return s > lim }(status)) | count, ds | where any(tags, status > 5) | count)
check("group", str(rows(ds | where nines(dnum) | group by state)), str(rows(ds | where dnum ~ /^9/ | group by state)))
let few = rows(ds | take 200)
check("rows", few | where any(tags, nines(dnum)) | count, few | where any(tags, dnum ~ /^9/) | count)
let e = ds | where nines(dnum) && state == "open" | explain
print(e.where, e.threads)
END
# Errors: an unknown function, a value that is not one, a result that is
# not a bool, an error inside (reported where it happened), a function
# that a field's name shadows.
run() { printf '%s\n' "$1" > q.comb; "$COMB" q.comb 2>&1 | head -1; }
run 'open("calls") | where nosuch(dnum) | count'
run 'let x = 5
open("calls") | where x(dnum) | count'
run 'fn f(a) { return a }
open("calls") | where f(dnum) | count'
run 'fn f(a) { if a > "5" { error("bad " + a) } return true }
open("calls") | where f(dnum) | count'
run 'fn state(a) { return true }
open("calls") | where state(dnum) | count'
run 'fn f(a) { return true }
open("calls") | where f(onum) > 3 | count'
# Over rows, a call's arguments are held while a later one calls comb: with
# a collection at every safe point, f still gets state + "xyzw" intact.
COMB_GC_STRESS=1 "$COMB" - <<'END'
let few = rows(open("calls") | take 200)
fn g(n) { let a = []; for i in 0..40 { push(a, str(n) + str(i)) } return len(a) > 3 }
fn f(st, s, b) { return s == st + "xyzw" && b }
let n = few | where f(state, state + "xyzw", g(onum)) | count
let m = few | where g(onum) | count
if n == m { print("gc-args", n) } else { print("gc-args", n, "DIFFERS:", m) }
END
