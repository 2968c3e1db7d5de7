# cycle-lib.sh: shell functions shared by the cycle's tests and
# scripts/cycle-kill. Needs COMB (the binary).

# cycle_day DATA STORE INCOMING DATE [ARGS...]: DATE's deliveries moved into
# the incoming folder (unless moved already), then DATE's cycle.
cycle_day() {
    _d=$1 _s=$2 _in=$3 _date=$4
    shift 4
    if [ -d "$_d/deliveries/$_date" ]; then
        for _f in "$_d/deliveries/$_date"/*; do
            [ -e "$_f" ] && mv "$_f" "$_in/"
        done
    fi
    "$COMB" cycle --store "$_s" --incoming "$_in" --date "$_date" "$@"
}

# cycle_reports_match DATA STORE DATE: each expected report of DATE equals the
# cycle's, or the differences on stdout and status 1.
cycle_reports_match() {
    _ok=0
    for _r in "$1/expected/$3"/*.tsv; do
        diff -u "$_r" "$2/reports/$3/${_r##*/}" || _ok=1
    done
    return $_ok
}

# cycle_dump STORE: the store's whole state as text, to compare two runs: each
# current file (volume, partition, kind, label) with its tagsets, the history
# files, every report, the dock's records and where the files went. Not the
# generation numbers: parallel volumes commit in either order.
cycle_dump() {
    "$COMB" - "$1" <<'PROG'
let s = args()[0]
for f in files(open(s)) {
    print(f.volume, f.partition, f.kind, info(open(f.path)).label)
    for t in open(f.path) { print(t) }
}
# Every file under the store's own folders, in order: a tagset file's label and
# tagsets, an archive's digest, any other's text.
fn walk(p, name) {
    let st = stat(p)
    if st.type == "dir" {
        for f in ls(p) { walk(p + "/" + f, name + "/" + f) }
    } else if endswith(p, ".ts") {
        print(name, info(open(p)).label)
        for t in open(p) { print(t) }
    } else if endswith(p, ".lz4") {
        print(name, sha256_file(p))
    } else {
        print(name)
        print(read(open(p)))
    }
}
for dir in ["history", "reports", "dock"] {
    if stat(s + "/" + dir) { walk(s + "/" + dir, dir) }
}
PROG
}
