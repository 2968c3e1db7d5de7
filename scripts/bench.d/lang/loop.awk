BEGIN { s = 0; for (i = 0; i < 100000000; i++) s += i; printf "%.0f\n", s }
