# comb report show: the terminal summary of the last cycle and of an earlier
# one (piped: no colour), and its errors.
. "$COMB_SRCDIR/tests/golden/report/fixture.inc"
"$COMB" report show --store st
"$COMB" report show --store st --date 20261102 | head -12
run() { "$COMB" report "$@" 2>&1; echo "status $?"; }
run show
run show --store nope
run show --store st --date 20261130
run show --store st --date 2026-11-02
run show --store st extra
run bogus --store st
