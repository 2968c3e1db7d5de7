# comb gen's usage errors (status 2), a directory it will not write into and
# one left by an unfinished run (status 1), another start date and seed.
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
run() { "$COMB" gen "$@" 2>&1; echo "status $?"; }
run
run taps
run taps "x" --days 2 --calls-per-day 5
run taps "x" --days 0 --calls-per-day 5 --seed 1
run taps "x" --days 2 --calls-per-day 5 --seed -1
run taps "x" --days 2 --calls-per-day 5 --seed 1 --start 20270229
run taps "x" --days 2 --calls-per-day 5 --seed 1 --keep-days 2
run taps "x" --days 2 --calls-per-day 5 --seed 1 --bogus 1
mkdir "full"; : >"full/f"
run taps "full" --days 2 --calls-per-day 5 --seed 1
mkdir "y.partial"
run taps "y" --days 2 --calls-per-day 5 --seed 1
mkdir "empty"
run taps "empty" --days 2 --calls-per-day 5 --seed 3 --start 20280228 --keep-days 3
ls "empty/deliveries" "empty/expected"
ls "empty/deliveries/20280229" | head -3
run events
run events "ev" --events 10 --runs 2
run events "ev" --events 0 --runs 1 --seed 1
run events "ev" --events 3 --runs 4 --seed 1
run events "ev" --events 3 --runs 1 --seed 1 --sets 2
run events "full" --events 3 --runs 1 --seed 1
run events "ev" --events 3 --runs 1 --seed 1 --partitions 1001
