# The generator's product exceeds 2^53, where awk's doubles lose digits, so
# it is formed in two exact halves: 1103515245 = 16838 * 2^16 + 20077, and
# (x * 16838 * 2^16) mod 2^31 = ((x * 16838) mod 2^15) * 2^16.
BEGIN {
    x = 12345
    for (i = 1; i <= 1000000; i++) {
        x = ((x * 16838 % 32768) * 65536 + x * 20077 + 12345) % 2147483648
        a[i] = x
    }
    n = asort(a)
    printf "%.0f %.0f %.0f\n", a[1], a[500001], a[1000000]
}
