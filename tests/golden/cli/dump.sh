# --dump prints the bytecode and does not run the program.
"$COMB" --dump -e 'fn inc(x) { return x + 1 }
let n = inc(41)
if n == 42 { print("yes") }'
