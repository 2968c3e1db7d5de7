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

# damage_last_index FILE: flips a bit of a tagset file's third byte before
# its footer (with one block, its last index's bytes), keeping FILE-ok as
# the copy before.
damage_last_index() {
    foot=$(tail -c 32 "$1" | od -An -tu8 -N8 | tr -d ' ')
    at=$((foot - 3))
    byte=$(od -An -tu1 -j "$at" -N1 "$1" | tr -d ' ')
    cp "$1" "${1%.ts}-ok.ts"
    printf "$(printf '\\%03o' $((byte ^ 64)))" | dd of="$1" bs=1 seek="$at" conv=notrunc 2>/dev/null
}
