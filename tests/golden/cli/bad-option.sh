# An unknown option is a usage error: a message on stderr and exit status 2.
"$COMB" --no-such-option 2>&1 >/dev/null | head -1
exit $(( $("$COMB" --no-such-option >/dev/null 2>&1; echo $?) ))
