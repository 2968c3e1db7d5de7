# comb report drill: the tagsets of inprocess cells with their tags and
# provenance, as TSV (piped), table, CSV and JSON; each cell's tagsets are as
# many as inprocess.tsv counts; report.drill() at the prompt goes on with
# verbs; errors.
. "$COMB_SRCDIR/tests/golden/report/fixture.inc"
cat st/reports/20261103/inprocess.tsv
"$COMB" report drill --store st inprocess AMA 0-1
"$COMB" report drill --store st --date 20261103 --format table inprocess SW 2-3
"$COMB" report drill --store st --format csv inprocess SW 2-3
"$COMB" report drill --store st --format json inprocess SW 2-3
tail -n +2 st/reports/20261103/inprocess.tsv | while read sys age n; do
    got=$("$COMB" report drill --store st inprocess $sys $age | tail -n +2 | cut -f1-3 | sort -u | wc -l)
    [ "$got" = "$n" ] || echo "drill $sys $age: $got tagsets, inprocess.tsv says $n"
done
"$COMB" -e 'import "report/report"
let q = report.drill("st", "20261103", "inprocess", "RICS", "0-1")
print(type(q), len(rows(q)))
q | where sys == "AMA" | select onum, cid, n: count(tags) | take 3'
run() { "$COMB" report "$@" 2>&1; echo "status $?"; }
run drill --store st inprocess RICS
run drill --store st inprocess XX 0-1
run drill --store st inprocess RICS 2-9
run drill --store st flow RICS 0-1
run drill --store st --format xml inprocess RICS 0-1
"$COMB" -e 'import "report/report"
report.drill("st", "2026", "inprocess", "RICS", "0-1")' 2>&1 | head -1 | sed "s|^$COMB_STDLIB/report/report.comb:[0-9:]*|report.comb|"
# comb report html --max N: drill pages of at most N tagsets, as many as the cell has up to N.
"$COMB" report html --store st --date 20261103 --max 2
for f in st/reports/20261103/drill/*.html; do
    echo "${f##*/} $(grep -c '<tbody class="tagset"' "$f")"
done
