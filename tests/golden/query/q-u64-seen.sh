# u64 values above 2^63-1 read as their nearest float, so several can be
# one value (2^63 and 2^63+1 are both 9.223372036854776e+18): the scan
# compares them with float constants, groups them, counts them distinct
# (distinct() and stat) and sorts them (equal ones in the order read) as
# comb does over the same rows; and an int constant compares exactly with
# the u64s beside 2^63.
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT && cd "$d" || exit 99
printf 'key id: u64\ntagset s: i64\n' >u.schema
"$COMB" store create u --schema u.schema --partition-key id --partitions 3 >/dev/null || exit 1
printf '%s\t%s\n' 9223372036854775806 0 9223372036854775807 1 9223372036854775808 2 \
    9223372036854775809 3 9223372036854776832 4 9223372036854776833 5 18446744073709549568 6 \
    18446744073709550591 7 18446744073709550592 8 18446744073709551615 9 >u.tsv
"$COMB" store load u u.tsv >/dev/null || exit 1
consts='9223372036854775807 9223372036854775806 9.223372036854775808e18 9.223372036854777856e18
1.8446744073709549568e19 1.8446744073709551616e19 9.2233720368547748e18 -1.5 inf'
{
    echo 'let ds = open("u")'
    echo 'let r = rows(ds)'
    echo 'let inf = float("inf")'
    echo 'let n = 0'
    echo 'fn chk(what, x, y) { n += 1; if x != y { print(what, x, "DIFFERS from", y) } }'
    for c in $consts; do
        for op in '==' '!=' '<' '<=' '>' '>='; do
            echo "chk(\"id $op $c\", ds | where id $op $c | count, r | where id $op $c | count)"
        done
    done
    echo 'print(n, "comparisons")'
    echo 'chk("group", str(ds | group by id), str(r | group by id))'
    echo 'chk("distinct", str(ds | group by { d: distinct(id) }), str(r | group by { d: distinct(id) }))'
    echo 'chk("stat", (ds | stat)[0].distinct, (r | stat)[0].distinct)'
    echo 'chk("sort", str(rows(ds | sort id | select s)), str(rows(r | sort id | select s)))'
    echo 'chk("sort desc", str(rows(ds | sort id desc | select s)), str(rows(r | sort id desc | select s)))'
    echo 'print(ds | group by id)'
    echo 'print(ds | group by { d: distinct(id) }, (ds | stat)[0].distinct)'
} >q.comb
"$COMB" q.comb
