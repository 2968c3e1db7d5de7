# query-flow.sh: the query benchmark's flow shapes (sourced by bench.d/query,
# which sets src, build, COMB, dir, runs, ftags and say): data the engine was
# not tuned on (flow-gen.c, a call-flow simulation loaded as text through
# `comb store load`, as a user would), and the shapes of issue 23:
# aggregates over tags, a 50,000-group and a 1,000,000-group group by,
# top-N over groups, quantifier counts, a tag-time range, the new
# aggregates. comb in one process, DuckDB warm in one process (a tag table
# flattened with its call's fields, and a call table), each query a
# warm-up then best of $runs; CPU time (user + sys, all threads) per
# query, so that a shared machine's waits do not count, and wall time
# beside it; answers compared (a digest of every number in the result).
# The store declares `tag seen: time index projection(sys, dur)` (an order
# index for tag-time ranges, and a projection of the tags by time carrying
# the fields the time-range reports read; docs/STORE.md). A store loaded
# before under another schema is loaded again (flow.schema is compared).

fdata=$dir/flow$ftags
mkdir -p "$fdata"
if [ ! -f "$fdata/done" ]; then
    say "generating $ftags flow tags in $fdata"
    cc -O2 -std=c11 -o "$fdata/flow-gen" "$here/flow-gen.c"
    "$fdata/flow-gen" "$fdata" "$ftags"
    rm -rf "$fdata/store" "$fdata/flow.duckdb"
    say "loading DuckDB"
    cat > "$dir/flow-load.mjs" <<'END'
import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(process.argv[2]);
const con = await inst.connect();
await con.run(`CREATE TABLE t AS SELECT * FROM read_csv('${process.argv[3]}/t.csv')`);
await con.run(`CREATE TABLE c AS SELECT * FROM read_csv('${process.argv[3]}/c.csv')`);
END
    node "$dir/flow-load.mjs" "$fdata/flow.duckdb" "$fdata"
    touch "$fdata/done"
fi
cat > "$fdata/want.schema" <<'END'
key onum: u64
key start: time
tagset cid: u64
tag seen: time index projection(sys, dur)
tag sys: enum(RICS, BILL, SETL, SWITCH, LEC, IXC, TAP)
tag status: u8
tag bsid: u16
tag dur: u32
tag peer: u64
END
if [ ! -d "$fdata/store" ] || ! cmp -s "$fdata/want.schema" "$fdata/flow.schema"; then
    say "loading comb"
    rm -rf "$fdata/store"
    mv "$fdata/want.schema" "$fdata/flow.schema"
    "$COMB" store create "$fdata/store" --schema "$fdata/flow.schema" --partition-key onum --partitions 8 >&2
    "$COMB" store load "$fdata/store" "$fdata/flow.tsv" >&2
fi
ncalls=$(($(wc -l <"$fdata/c.csv") - 1))
t0=$((1764547200 + ncalls / 2)) t1=$((1764547200 + ncalls / 2 + 21600))

# name;comb query (ds is the store);SQL
fshapes="agg-tags;ds | tags | group by { a: min(onum), b: max(onum), c: avg(dur), d: distinct(bsid), e: min(seen), f: max(seen) };SELECT min(onum), max(onum), avg(dur), count(DISTINCT bsid), min(seen), max(seen) FROM t
group-50k;ds | group by onum { n: count() };SELECT onum, count(*) FROM c GROUP BY onum ORDER BY onum
group-1m;ds | tags | group by peer { n: count(), d: max(dur) };SELECT peer, count(*), max(dur) FROM t GROUP BY peer ORDER BY peer
topn-50k;ds | tags | group by onum { n: count() } | sort n desc, onum | take 10;SELECT onum, count(*) n FROM t GROUP BY onum ORDER BY n DESC, onum LIMIT 10
any-bsid-dur;ds | where any(tags, bsid == 34 && dur > 1800) | count;SELECT count(*) FROM c WHERE cid IN (SELECT cid FROM t WHERE bsid = 34 AND dur > 1800)
any-rics-1;ds | where any(tags, sys == \"RICS\" && status == 1) | count;SELECT count(*) FROM c WHERE cid IN (SELECT cid FROM t WHERE sys = 'RICS' AND status = 1)
bill-no-setl;ds | where any(tags, sys == \"BILL\") && !any(tags, sys == \"SETL\") | count;SELECT count(*) FROM (SELECT cid FROM t GROUP BY cid HAVING bool_or(sys = 'BILL') AND NOT bool_or(sys = 'SETL'))
time-6h;ds | tags | where seen >= $t0 && seen < $t1 | group by sys { n: count(), a: avg(dur) };SELECT sys, count(*), avg(dur) FROM t WHERE seen >= $t0 AND seen < $t1 GROUP BY sys ORDER BY sys
new-aggs;ds | tags | group by sys { m: median(dur), s: stddev(dur), c: count(status == 1), f: avg(status > 0) };SELECT sys, median(dur), stddev_samp(dur), count(*) FILTER (WHERE status = 1), avg(CASE WHEN status > 0 THEN 1 ELSE 0 END) FROM t GROUP BY sys ORDER BY sys"
[ -n "${FLOW_ONLY:-}" ] && fshapes=$(printf '%s\n' "$fshapes" | grep -E "^($FLOW_ONLY);")

# comb: a script that times each query in this process.
{
    echo 'let ds = open("store")'
    cat <<'END'
fn digest(r) {
    if type(r) == "int" { return str(r) }
    let n = 0
    let sums = {}
    for row in r {
        n += 1
        for k, v in row {
            let x = nil
            if type(v) == "int" { x = v % 1000000007 * 1000 % 1000000007 }
            if type(v) == "float" { x = floor(v * 1000 + 0.5) % 1000000007 }
            if x != nil {
                if sums[k] == nil { sums[k] = 0 }
                sums[k] = (sums[k] + x) % 1000000007
            }
        }
    }
    let out = str(n)
    for k, v in sums { out = out + " " + str(v) }
    return out
}
fn best(name, f) {
    let r = f()
    let b = 1e18
    let bw = 1e18
    for i in 0..RUNS {
        let c = clock()
        let w = clock("wall")
        r = f()
        c = clock() - c
        w = clock("wall") - w
        if c < b { b = c }
        if w < bw { bw = w }
    }
    print(name, b, bw, digest(r))
}
END
    printf '%s\n' "$fshapes" | while IFS=';' read -r name q sql; do
        case $q in *"| count") echo "best(\"$name\", fn() { return $q })" ;;
                   *) echo "best(\"$name\", fn() { return rows($q) })" ;; esac
    done
} | sed "s/RUNS/$runs/" >"$fdata/flow.comb"

cat > "$dir/flow-run.mjs" <<'END'
// Times each query (argv: db, runs, then name;comb;SQL lines) warm, best of
// runs: CPU seconds (process.cpuUsage, all threads) and wall; and the
// digest of its answer, as flow.comb makes it.
import { DuckDBInstance } from '@duckdb/node-api';
const [db, runs, text] = process.argv.slice(2);
const inst = await DuckDBInstance.create(db, { access_mode: 'READ_ONLY' });
const con = await inst.connect();
const P = 1000000007n;
function digest(rows) {
    const sums = [];
    for (const row of rows) row.forEach((v, i) => {
        if (typeof v === 'number' || typeof v === 'bigint') {
            const x = typeof v === 'bigint' || Number.isInteger(v) && Math.abs(v) > 2 ** 50
                ? BigInt(v) * 1000n % P : BigInt(Math.floor(Number(v) * 1000 + 0.5)) % P;
            sums[i] = ((sums[i] ?? 0n) + x) % P;
        }
    });
    return [rows.length, ...sums.filter(s => s !== undefined)].join(' ');
}
for (const line of text.split('\n')) {
    const [name, , sql] = line.split(';');
    let r = await con.runAndReadAll(sql), cpu = Infinity, wall = Infinity;
    for (let i = 0; i < Number(runs); i++) {
        const c = process.cpuUsage(), s = process.hrtime.bigint();
        r = await con.runAndReadAll(sql);
        const w = Number(process.hrtime.bigint() - s) / 1e9, u = process.cpuUsage(c);
        cpu = Math.min(cpu, (u.user + u.system) / 1e6);
        wall = Math.min(wall, w);
    }
    const rows = r.getRowsJS();
    const one = rows.length === 1 && rows[0].length === 1 && /^SELECT count\(\*\) FROM (c|\()/.test(sql);
    console.log(name, cpu, wall, one ? String(rows[0][0]) : digest(rows));
}
END

echo "# flow shapes: $(date -u +%Y-%m-%dT%H:%MZ), $ftags tags ($ncalls calls), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# ms, best of $runs, warm, one process each: CPU (user + sys, all threads) and wall; ratios DuckDB / comb"
printf '%-13s %9s %9s %7s %9s %9s %7s %8s\n' query "comb cpu" "duck cpu" ratio "comb wall" "duck wall" ratio answers
(cd "$fdata" && "$COMB" flow.comb) >"$fdata/comb.out"
node "$dir/flow-run.mjs" "$fdata/flow.duckdb" "$runs" "$fshapes" >"$fdata/duckdb.out"
while read -r name ccpu cwall cdig; do
    read -r dname dcpu dwall ddig <&3
    ok=differ
    [ "$cdig" = "$ddig" ] && ok=same
    awk -v q="$name" -v c="$ccpu" -v cw="$cwall" -v d="$dcpu" -v w="$dwall" -v ok="$ok" 'BEGIN {
        printf "%-13s %9.2f %9.2f %7.2f %9.2f %9.2f %7.2f %8s\n", q, c * 1000, d * 1000, (c > 0 ? d / c : 0),
            cw * 1000, w * 1000, (cw > 0 ? w / cw : 0), ok }'
    [ "$ok" = same ] || say "$name: comb $cdig, DuckDB $ddig"
done <"$fdata/comb.out" 3<"$fdata/duckdb.out"
