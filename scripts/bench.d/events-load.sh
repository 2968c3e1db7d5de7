# events-load.sh: the event store's rows into the peers of `scripts/bench events`
# (bench.d/events sources it), streamed and resumable. No CSV file is written:
# for each chunk of runs, one comb process writes the chunk's rows as CSV into
# a pipe that tee splits between PostgreSQL's `COPY ev FROM STDIN` (psql) and
# DuckDB's COPY from a FIFO (bench.d/events-duck.mjs LOAD), the three
# processes at once. A chunk is marked loaded in a peer once that peer has
# reported as many rows copied as comb counts in those runs; a chunk begun and
# not marked (the load stopped) has its runs deleted from the peer before it
# is loaded again, so a rerun picks up where the last one stopped. PostgreSQL
# loads with fsync and full-page writes off (nothing of the load needs to
# survive a crash: a stopped load is redone from its last marked chunk), and
# builds its run index after the rows are in, then checkpoints; only the
# queries are timed, after all this.
#
#   load_peers STORE DB RUNS EVENTS STEP DDL_DUCK
#       loads into DB/ev.duckdb and the cluster DB/pg (initdb'ed here, its
#       table made from DB/pg.sql) the rows of runs 1..RUNS, STEP runs a chunk;
#       marks DB/duck.done and DB/pg.done when each holds all EVENTS rows.
#
# Needs from bench.d/events: COMB, say, pg_up OPTIONS, pg_stop, pg_sql, PGBIN,
# events-duck.mjs in $dir.

# One chunk, runs A..B, into the peers named in the rest (duck, pg).
load_chunk() {
    a=$1 b=$2; shift 2
    n=$("$COMB" -e "open(\"$store\") | where between(run, $a, $b) | count")
    pids=
    for p in "$@"; do
        del=
        if grep -qx "$a-$b" "$db/$p.pending" 2>/dev/null; then del=1; else echo "$a-$b" >>"$db/$p.pending"; fi
        if [ $p = duck ]; then
            node "$dir/events-duck.mjs" "$db/ev.duckdb" "$db/duck.fifo" LOAD "$ddl_duck" "$n" ${del:+"$a" "$b"} &
        else
            # not quiet: psql prints "COPY N", the rows it copied
            "$PGBIN/psql" -X -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U postgres -d postgres \
                -c "${del:+DELETE FROM ev WHERE run BETWEEN $a AND $b; }SELECT 1" \
                -c "COPY ev FROM STDIN (FORMAT csv, HEADER true)" <"$db/pg.fifo" >"$db/pg.copied" &
        fi
        pids="$pids $!"
    done
    if [ $# = 2 ]; then
        "$COMB" --format csv -e "open(\"$store\") | where between(run, $a, $b)" | tee "$db/pg.fifo" >"$db/duck.fifo" &
    else
        "$COMB" --format csv -e "open(\"$store\") | where between(run, $a, $b)" >"$db/$1.fifo" &
    fi
    gen=$!
    ok=1
    for q in $pids; do wait "$q" || ok=; done
    if [ -z "$ok" ]; then
        # a peer that stopped before opening its FIFO would leave tee waiting
        # to open it: open each once so that the writers get EPIPE and end
        for f in "$db/pg.fifo" "$db/duck.fifo"; do exec 3<>"$f"; exec 3<&-; done
        wait "$gen" || :
        say "loading runs $a..$b failed; a rerun takes it up again"
        return 1
    fi
    wait "$gen"
    for p in "$@"; do
        if [ $p = pg ]; then
            got=$(awk '$1 == "COPY" { print $2 }' "$db/pg.copied")
            [ "$got" = "$n" ] || { say "PostgreSQL copied ${got:-no} rows of runs $a..$b, not $n"; return 1; }
        fi
        echo "$a-$b" >>"$db/$p.loaded"
        grep -vx "$a-$b" "$db/$p.pending" >"$db/$p.pending.new" || :
        mv "$db/$p.pending.new" "$db/$p.pending"
    done
}

load_peers() {
    store=$1 db=$2 nruns=$3 nevents=$4 step=$5 ddl_duck=$6
    [ -f "$db/duck.done" ] && [ -f "$db/pg.done" ] && return 0
    if [ ! -f "$db/pg.init" ]; then
        rm -rf "$db/pg" "$db/pg.loaded" "$db/pg.pending"
        mkdir -p "$db/pg"
        [ "$(id -u)" = 0 ] && chown postgres "$db/pg"
        pg_as "$PGBIN/initdb" -D "$db/pg/data" -U postgres --auth=trust -E UTF8 --locale=C \
            >"$db/pg/initdb.log" 2>&1 || { cat "$db/pg/initdb.log" >&2; return 1; }
        pg_up
        pg_sql <"$db/pg.sql"
        pg_stop
        touch "$db/pg.init"
    fi
    [ -f "$db/duck.loaded" ] || rm -f "$db/ev.duckdb" "$db/ev.duckdb.wal" "$db/duck.pending"
    [ -f "$db/pg.done" ] ||
        pg_up "-c fsync=off -c full_page_writes=off -c synchronous_commit=off -c wal_level=minimal -c max_wal_senders=0 -c checkpoint_timeout=1h"
    rm -f "$db/pg.fifo" "$db/duck.fifo"
    mkfifo "$db/pg.fifo" "$db/duck.fifo"
    t0=$(date +%s)
    a=1
    while [ $a -le "$nruns" ]; do
        b=$((a + step - 1))
        [ $b -le "$nruns" ] || b=$nruns
        to=
        [ -f "$db/duck.done" ] || grep -qx "$a-$b" "$db/duck.loaded" 2>/dev/null || to="$to duck"
        [ -f "$db/pg.done" ] || grep -qx "$a-$b" "$db/pg.loaded" 2>/dev/null || to="$to pg"
        if [ -n "$to" ]; then
            say "loading runs $a..$b into$to ($(($(date +%s) - t0)) s so far)"
            load_chunk $a $b $to
        fi
        a=$((b + 1))
    done
    rm -f "$db/pg.fifo" "$db/duck.fifo"
    say "rows loaded in $(($(date +%s) - t0)) s"
    if [ ! -f "$db/duck.done" ]; then
        got=$(node "$dir/events-duck.mjs" "$db/ev.duckdb" 0 summary "SELECT count(*) FROM ev" "SELECT 0" | cut -d' ' -f1)
        [ "$got" = "$nevents" ] || { say "DuckDB holds $got rows, not $nevents"; return 1; }
        touch "$db/duck.done"
    fi
    if [ ! -f "$db/pg.done" ]; then
        t1=$(date +%s)
        pg_sql -c "SET maintenance_work_mem = '1GB'" -c 'CREATE INDEX IF NOT EXISTS ev_run ON ev (run)' \
            -c 'VACUUM ANALYZE ev' -c 'CHECKPOINT'
        # counted, not VACUUM's reltuples (0.1% off on 5 M fresh rows)
        got=$(pg_sql -At -c 'SELECT count(*) FROM ev')
        [ "$got" = "$nevents" ] || { say "PostgreSQL holds $got rows, not $nevents"; return 1; }
        say "PostgreSQL's run index, VACUUM ANALYZE and checkpoint: $(($(date +%s) - t1)) s"
        pg_stop
        touch "$db/pg.done"
    fi
}
