# comb -e CODE runs CODE; arguments after it are the program's, not comb's.
"$COMB" -e 'print("from -e", 1 + 2)' --not-an-option extra
