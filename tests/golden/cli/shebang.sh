# A #! first line is a comment, so scripts can be executable.
f=$(mktemp) && trap 'rm -f "$f"' EXIT
printf '#!/usr/bin/env comb\nprint("shebang ok")\n' >"$f"
"$COMB" "$f"
