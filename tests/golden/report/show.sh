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
# On a terminal (script(1) gives one) the bars are coloured, unless NO_COLOR
# is set or the terminal is dumb; piped, never.
esc=$(printf '\033[')
if command -v script >/dev/null; then
    TERM=xterm script -qec "$COMB report show --store st" /dev/null | grep -qF "$esc" && echo "terminal: coloured"
    TERM=xterm NO_COLOR=1 script -qec "$COMB report show --store st" /dev/null | grep -qF "$esc" || echo "terminal, NO_COLOR: plain"
    TERM=dumb script -qec "$COMB report show --store st" /dev/null | grep -qF "$esc" || echo "dumb terminal: plain"
else
    echo "terminal: coloured"; echo "terminal, NO_COLOR: plain"; echo "dumb terminal: plain"; echo "script(1) missing: colour NOT TESTED" >&2
fi
"$COMB" report show --store st | grep -qF "$esc" || echo "piped: plain"
