# --version names the program and a dotted version number.
"$COMB" --version | sed 's/[0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*/X.Y.Z/'
