#!/bin/sh
# cycle-fixture.sh DIR: four days of hand-made tap deliveries for the cycle
# with --keep-days 2, in the layout of `comb gen taps` (docs/CYCLE.md):
# DIR/deliveries/DATE/ (moved into the incoming folder before DATE's cycle)
# and DIR/expected/DATE/*.tsv, the reports worked out by hand below.
#
# Calls (onum ts cid; the tags as SYS@seen):
#   A 7325550001 20261101100000 1  SW BILL SETL on Nov 1: billed_once, exits Nov 1,
#                                   deleted by the Nov 3 cycle (Nov 1 <= Nov 3 - 2)
#   B 7325550002 20261101110000 2  SW Nov 1, RICS status 1 Nov 2: rejected, exits
#                                   Nov 2, deleted Nov 4
#   C 7325550003 20261101120000 3  SW Nov 1, AMA Nov 2: in process
#   D 7325550004 20261030120000 4  SW Nov 1, a call of Oct 30: in process, ages 2, 3, 4, 5
#   E 7325550005 20261101130000 5  SW, BILL twice (two tags) Nov 1, SETL Nov 2:
#                                   billed_multi, deleted Nov 4
#   F 7325550006 20261101140000 6  SW and AMA seen at the same second: the last
#                                   system is AMA (later in flow order)
#   G 7325550007 20261101160000 7  RAMP: its tap arrives Nov 1, its .ctl Nov 2
#   H 7325550008 20261104080000 8  SETL only, Nov 4: never_billed
# Deliveries besides: AMA.20261101.001 corrupted on Nov 1 (sha256 mismatch),
# re-sent right on Nov 2; BILL.20261101.001 delivered again Nov 2 (duplicate);
# RAMP.20261102.001 with the wrong size and SW.20261102.001 with a bad .ctl
# (Nov 2); two malformed records in SW.20261101.001; nothing on Nov 3.
set -e
d=$1
H='onum|ts|cid|dnum|bsid|dur|status|seen'
# tap DAY NAME [good|size|sha|bad|none]: NAME.tap from stdin and its .ctl
tap() {
    dir=$d/deliveries/$1
    mkdir -p "$dir"
    { echo "$H"; cat; } >"$dir/$2.tap"
    size=$(wc -c <"$dir/$2.tap")
    sha=$(sha256sum "$dir/$2.tap" | cut -d' ' -f1)
    case ${3:-good} in
    good) echo "$size $sha $2.tap" >"$dir/$2.ctl" ;;
    size) echo "$((size + 1)) $sha $2.tap" >"$dir/$2.ctl" ;;
    sha) echo "$size $sha $2.tap" >"$dir/$2.ctl"
         sed -i 's/7325550006/7325550009/' "$dir/$2.tap" ;;
    bad) echo "$size $sha" >"$dir/$2.ctl" ;;
    none) ;;
    esac
}
# expect DAY NAME: the report from stdin, tabs written as |
expect() {
    mkdir -p "$d/expected/$1"
    tr '|' '\t' >"$d/expected/$1/$2.tsv"
}

tap 20261101 SW.20261101.001 <<'EOF'
7325550001|20261101100000|1|2015550100|34|60|0|20261101100100
7325550002|20261101110000|2|2015550101|34|30|0|20261101110100
7325550003|20261101120000|3|012015550102|7|5|0|20261101120100
this is not a record
7325550004|20261030120000|4|2015550103|999|0|0|20261101090000
7325550005|20261101130000|5|2015550104|34|4294967295|0|20261101130100
7325550010|20261131120000|10|2015550105|34|30|0|20261101120100
7325550006|20261101140000|6|2015550106|34|30|0|20261101150000
EOF
tap 20261101 BILL.20261101.001 <<'EOF'
7325550001|20261101100000|1|2015550100|34|60|0|20261101120000
7325550005|20261101130000|5|2015550104|34|61|0|20261101140000
7325550005|20261101130000|5|2015550104|34|61|0|20261101140000
EOF
tap 20261101 SETL.20261101.001 <<'EOF'
7325550001|20261101100000|1|2015550100|34|60|0|20261101130000
EOF
tap 20261101 AMA.20261101.001 sha <<'EOF'
7325550006|20261101140000|6|2015550106|34|30|0|20261101150000
EOF
tap 20261101 RAMP.20261101.001 none <<'EOF'
7325550007|20261101160000|7|2015550107|34|30|0|20261101170000
EOF
# Nov 2: the RAMP tap's .ctl, the AMA tap re-sent, the day's taps, a duplicate
# and two bad deliveries.
size=$(wc -c <"$d/deliveries/20261101/RAMP.20261101.001.tap")
sha=$(sha256sum "$d/deliveries/20261101/RAMP.20261101.001.tap" | cut -d' ' -f1)
mkdir -p "$d/deliveries/20261102"
echo "$size $sha RAMP.20261101.001.tap" >"$d/deliveries/20261102/RAMP.20261101.001.ctl"
tap 20261102 AMA.20261101.001 <<'EOF'
7325550006|20261101140000|6|2015550106|34|30|0|20261101150000
EOF
tap 20261102 RICS.20261102.001 <<'EOF'
7325550002|20261101110000|2|2015550101|34|30|1|20261102090000
EOF
tap 20261102 AMA.20261102.001 <<'EOF'
7325550003|20261101120000|3|012015550102|7|5|0|20261102100000
EOF
tap 20261102 SETL.20261102.001 <<'EOF'
7325550005|20261101130000|5|2015550104|34|61|0|20261102110000
EOF
cp "$d/deliveries/20261101/BILL.20261101.001.tap" "$d/deliveries/20261101/BILL.20261101.001.ctl" \
    "$d/deliveries/20261102/"
tap 20261102 RAMP.20261102.001 size <<'EOF'
7325550003|20261101120000|3|012015550102|7|5|0|20261102080000
EOF
tap 20261102 SW.20261102.001 bad <<'EOF'
7325550011|20261102120000|11|2015550111|34|30|0|20261102120100
EOF
mkdir -p "$d/deliveries/20261103"
tap 20261104 SETL.20261104.001 <<'EOF'
7325550008|20261104080000|8|2015550108|34|30|0|20261104090000
EOF

expect 20261101 dock <<'EOF'
name|outcome|records|rejected
AMA.20261101.001.tap|quarantined: sha256 mismatch|0|0
BILL.20261101.001.tap|accepted|3|0
SETL.20261101.001.tap|accepted|1|0
SW.20261101.001.tap|accepted|8|2
EOF
expect 20261101 flow <<'EOF'
sys|tags
SW|6
BILL|3
SETL|1
EOF
expect 20261101 inprocess <<'EOF'
last_sys|age|tagsets
SW|0-1|3
SW|2-3|1
BILL|0-1|1
EOF
expect 20261101 disposition <<'EOF'
disposition|tagsets
billed_once|1
billed_multi|1
never_billed|0
rejected|0
in_process|4
EOF

expect 20261102 dock <<'EOF'
name|outcome|records|rejected
AMA.20261101.001.tap|accepted|1|0
AMA.20261102.001.tap|accepted|1|0
BILL.20261101.001.tap|duplicate|0|0
RAMP.20261101.001.tap|accepted|1|0
RAMP.20261102.001.tap|quarantined: size mismatch|0|0
RICS.20261102.001.tap|accepted|1|0
SETL.20261102.001.tap|accepted|1|0
SW.20261102.001.tap|quarantined: bad ctl|0|0
EOF
expect 20261102 flow <<'EOF'
sys|tags
AMA|2
RAMP|1
RICS|1
SETL|1
EOF
expect 20261102 inprocess <<'EOF'
last_sys|age|tagsets
SW|2-3|1
AMA|0-1|2
RAMP|0-1|1
EOF
expect 20261102 disposition <<'EOF'
disposition|tagsets
billed_once|1
billed_multi|1
never_billed|0
rejected|1
in_process|4
EOF

expect 20261103 dock <<'EOF'
name|outcome|records|rejected
EOF
expect 20261103 flow <<'EOF'
sys|tags
EOF
expect 20261103 inprocess <<'EOF'
last_sys|age|tagsets
SW|4-7|1
AMA|2-3|2
RAMP|2-3|1
EOF
expect 20261103 disposition <<'EOF'
disposition|tagsets
billed_once|1
billed_multi|1
never_billed|0
rejected|1
in_process|4
EOF

expect 20261104 dock <<'EOF'
name|outcome|records|rejected
SETL.20261104.001.tap|accepted|1|0
EOF
expect 20261104 flow <<'EOF'
sys|tags
SETL|1
EOF
expect 20261104 inprocess <<'EOF'
last_sys|age|tagsets
SW|4-7|1
AMA|2-3|2
RAMP|2-3|1
EOF
expect 20261104 disposition <<'EOF'
disposition|tagsets
billed_once|1
billed_multi|1
never_billed|1
rejected|1
in_process|4
EOF
