# A program file that cannot be read: a message and exit status 1.
"$COMB" /nonexistent/prog.comb 2>&1
echo "status $?"
