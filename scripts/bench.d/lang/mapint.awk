BEGIN {
    for (i = 0; i < 1000000; i++) m[i] = i
    s = 0
    for (i = 0; i < 1000000; i++) s += m[i]
    printf "%.0f\n", s
}
