# lib.sh: TAP helpers shared by the shell test suites (golden, integration).
tap_n=0
tap_failed=0

# tap_result OK DESCRIPTION [DIAGNOSTIC-FILE]
tap_result() {
    tap_n=$((tap_n + 1))
    if [ "$1" = 0 ]; then
        echo "ok $tap_n - $2"
    else
        tap_failed=$((tap_failed + 1))
        echo "not ok $tap_n - $2"
        [ -n "$3" ] && [ -s "$3" ] && sed 's/^/# /' "$3"
    fi
    return 0
}

tap_done() {
    echo "1..$tap_n"
    [ "$tap_failed" = 0 ]
}

: "${COMB:?COMB must name the comb binary}"
: "${COMB_SRCDIR:?COMB_SRCDIR must name the source tree}"
