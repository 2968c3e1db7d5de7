# comb gre: the command line (tests/integration/gre.tap compares it with GNU
# grep at length; this runs without grep).
t=$(mktemp -d)
printf 'foo bar\nbaz\nFoo qux\nfoobar\n' >"$t/a"
printf 'x\0foo\n' >"$t/b"
cd "$t"
"$COMB" gre -n -e foo -e qux a; echo "status $?"
"$COMB" gre -c -i -w foo a b; echo "status $?"
"$COMB" gre -o -b bar a; echo "status $?"
"$COMB" gre foo b 2>&1; echo "status $?"
"$COMB" gre -q zzz a; echo "status $?"
"$COMB" gre zzz missing a 2>&1; echo "status $?"
"$COMB" gre -P -o 'fo+b?a?' a; echo "status $?"
"$COMB" gre -k x a 2>&1; echo "status $?"
printf 'foo\n' | "$COMB" gre -H --count foo; echo "status $?"
rm -rf "$t"
