# cycle-pg.sh: the daily cycle done by PostgreSQL, for `scripts/bench cycle`
# (its peer) and tests/integration/gen-pg.tap (an independent check of the
# generator's expected reports). Sourced by sh; defines:
#
#   pg_start DIR PORT   initdb a cluster in DIR (fsync on, as shipped) and
#                       start it on PORT, its socket in DIR; as the user
#                       postgres when run by root (the server refuses root)
#   pg_stop             stop it
#   pg_schema           make the tables
#   pg_day DAY IN WORK OUT KEEP
#                       one cycle: the dock in sh (as docs/TAPS.md says:
#                       duplicate, size, sha256, ctl), then in one SQL
#                       transaction the load (COPY of the accepted files),
#                       the update (tags, tagsets, exits, deletes at KEEP
#                       days into history) and the reports, written as
#                       OUT/{dock,flow,inprocess,disposition}.tsv, then
#                       VACUUM ANALYZE and CHECKPOINT (autovacuum is off,
#                       so each day pays for its own upkeep). WORK
#                       keeps the archive, the quarantine and the names
#                       accepted.
#   pg_server_cpu       the server's CPU seconds so far (user+sys of the
#                       postmaster, its reaped backends and live children)
#   PG_RSS_FILE         where pg_day writes its backend's peak RSS (VmHWM, KB);
#                       it returns once that backend has ended and been reaped
#
# Needs PGBIN (default /usr/lib/postgresql/15/bin).

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

pg_as() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
    PG_DIR=$1
    PG_PORT=$2
    mkdir -p "$PG_DIR"
    [ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
    pg_as "$PGBIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C \
        >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log" >&2; return 1; }
    pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
        -o "-p $PG_PORT -k $PG_DIR -c listen_addresses='' -c fsync=on -c shared_buffers=256MB -c max_wal_size=4GB -c work_mem=64MB -c maintenance_work_mem=256MB -c autovacuum=off" \
        start >/dev/null || { cat "$PG_DIR/server.log" >&2; return 1; }
    PG_RSS_FILE=$PG_DIR/rss
}

pg_stop() {
    [ -n "${PG_DIR:-}" ] && pg_as "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1
    PG_DIR=
}

pg_sql() {
    "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U postgres -d postgres "$@"
}

pg_server_cpu() {
    pid=$(head -1 "$PG_DIR/data/postmaster.pid")
    tck=$(getconf CLK_TCK)
    # the postmaster: its own and its reaped children's time (fields 14-17)
    t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pid/stat")
    for c in $(cat "/proc/$pid/task/$pid/children" 2>/dev/null); do
        t=$((t + $(awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    awk -v t="$t" -v k="$tck" 'BEGIN { printf "%.2f\n", t / k }'
}

pg_schema() {
    pg_sql <<'EOF'
CREATE UNLOGGED TABLE staging (file int NOT NULL DEFAULT current_setting('dock.file')::int,
                               id bigserial, line text);
CREATE TABLE files (id serial PRIMARY KEY, name text COLLATE "C", sys smallint, cycle int,
                    outcome text, records int, rejected int, first_id bigint);
CREATE TABLE tags (onum bigint, ts bigint, cid bigint, dnum text, bsid smallint, dur bigint,
                   status smallint, seen bigint, sys smallint, file int, line int, cycle int);
CREATE INDEX tags_key ON tags (onum, ts, cid);
-- one row per tagset in the store: what the reports need, kept up to date
-- by each cycle (last = seen * 8 + sys: the greatest is the last system,
-- ties to the later one)
CREATE TABLE tagsets (onum bigint, ts bigint, cid bigint, tsday date, bills int, setl bool,
                      rej bool, exit_day date, last bigint, ntags int,
                      PRIMARY KEY (onum, ts, cid));
CREATE INDEX tagsets_exit ON tagsets (exit_day);
CREATE TABLE history (onum bigint, ts bigint, cid bigint, disposition text, first_ts bigint,
                      last_seen bigint, last_sys smallint, ntags int, cycle int);
CREATE TABLE sysnames (sys smallint PRIMARY KEY, name text);
INSERT INTO sysnames VALUES (0, 'SW'), (1, 'AMA'), (2, 'RAMP'), (3, 'RICS'), (4, 'BILL'), (5, 'SETL');
CREATE TABLE dispositions (ord int, name text);
INSERT INTO dispositions VALUES (0, 'billed_once'), (1, 'billed_multi'), (2, 'never_billed'),
    (3, 'rejected'), (4, 'in_process');
CREATE TABLE buckets (ord int, lo int, hi int, name text);
INSERT INTO buckets VALUES (0, 0, 1, '0-1'), (1, 2, 3, '2-3'), (2, 4, 7, '4-7'),
    (3, 8, 14, '8-14'), (4, 15, 30, '15-30'), (5, 31, 1000000, '31+');
CREATE FUNCTION disposition(bills int, setl bool, rej bool) RETURNS text IMMUTABLE
LANGUAGE sql AS $$
    SELECT CASE WHEN setl AND bills = 1 THEN 'billed_once' WHEN bills >= 2 THEN 'billed_multi'
                WHEN setl AND bills = 0 THEN 'never_billed' WHEN rej THEN 'rejected'
                ELSE 'in_process' END $$;
-- the day of a YYYYMMDDhhmmss that the pattern below passed is one of its month
CREATE FUNCTION day_fits(t text) RETURNS bool IMMUTABLE LANGUAGE sql AS $$
    SELECT substr(t, 7, 2) <= '28' OR CASE substr(t, 5, 2)
        WHEN '02' THEN substr(t, 7, 2) = '29' AND substr(t, 1, 4)::int % 4 = 0
                       AND (substr(t, 1, 4)::int % 100 <> 0 OR substr(t, 1, 4)::int % 400 = 0)
        WHEN '04' THEN substr(t, 7, 2) <= '30' WHEN '06' THEN substr(t, 7, 2) <= '30'
        WHEN '09' THEN substr(t, 7, 2) <= '30' WHEN '11' THEN substr(t, 7, 2) <= '30'
        ELSE true END $$;
CREATE FUNCTION valid_record(l text) RETURNS bool IMMUTABLE LANGUAGE sql AS $$
    SELECT CASE WHEN l ~ '^[0-9]{10}\|(?:[0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])(?:[01][0-9]|2[0-3])[0-5][0-9][0-5][0-9])\|[0-9]{1,10}\|[0-9]{1,15}\|[0-9]{1,3}\|[0-9]{1,10}\|[01]\|(?:[0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])(?:[01][0-9]|2[0-3])[0-5][0-9][0-5][0-9])$'
                THEN split_part(l, '|', 3)::bigint < 4294967296
                     AND split_part(l, '|', 6)::bigint < 4294967296
                     AND day_fits(split_part(l, '|', 2)) AND day_fits(split_part(l, '|', 8))
                ELSE false END $$;
CREATE FUNCTION day_of(t bigint) RETURNS date IMMUTABLE LANGUAGE sql AS $$
    SELECT make_date((t / 10000000000)::int, (t / 100000000 % 100)::int, (t / 1000000 % 100)::int) $$;
EOF
}

# The dock: classifies every .tap of IN that has its .ctl, moves it out of
# IN, and prints the SQL that records and loads the day's files.
pg_dock() {
    day=$1 in=$2 work=$3
    mkdir -p "$work/archive" "$work/quarantine" "$work/duplicates"
    touch "$work/accepted"
    echo "BEGIN;"
    echo "TRUNCATE staging;"
    for tap in "$in"/*.tap; do
        [ -e "$tap" ] || continue
        name=${tap##*/}
        ctl=${tap%.tap}.ctl
        [ -f "$ctl" ] || continue
        if grep -qxF "$name" "$work/accepted"; then
            outcome=duplicate
        else
            set -- $(cat "$ctl")
            if [ $# != 3 ] || [ "$(wc -l <"$ctl")" != 1 ] || ! expr "$1" : '[0-9]*$' >/dev/null; then
                outcome="quarantined: bad ctl"
            elif [ "$(stat -c %s "$tap")" != "$1" ]; then
                outcome="quarantined: size mismatch"
            elif [ "$(sha256sum <"$tap" | cut -d' ' -f1)" != "$2" ]; then
                outcome="quarantined: sha256 mismatch"
            elif [ "$3" != "$name" ]; then
                outcome="quarantined: bad ctl"
            else
                outcome=accepted
            fi
        fi
        sys=$(echo "${name%%.*}" | sed 's/^SW$/0/;s/^AMA$/1/;s/^RAMP$/2/;s/^RICS$/3/;s/^BILL$/4/;s/^SETL$/5/')
        echo "INSERT INTO files (name, sys, cycle, outcome, records, rejected)
              VALUES ('$name', $sys, $day, '$outcome', 0, 0);"
        case $outcome in
            accepted)
                mv "$tap" "$ctl" "$work/archive/"
                echo "$name" >>"$work/accepted"
                echo "SELECT set_config('dock.file', currval('files_id_seq')::text, true) \\g /dev/null"
                echo "COPY staging (line) FROM '$work/archive/$name' WITH (FORMAT text, DELIMITER E'\\x01', HEADER true);"
                ;;
            duplicate) mv "$tap" "$ctl" "$work/duplicates/" ;;
            *) mv "$tap" "$ctl" "$work/quarantine/" ;;
        esac
    done
}

pg_day() {
    day=$1 in=$2 work=$3 out=$4 keep=$5
    mkdir -p "$out"
    {
        pg_dock "$day" "$in" "$work"
        cat <<EOF
\\set day $day
\\set keep $keep
SELECT to_date(:'day', 'YYYYMMDD') AS c \\gset
-- the dock's counts, the load and the update, in one pass over the day's records
WITH v AS MATERIALIZED (SELECT file, id, line, valid_record(line) AS ok FROM staging),
counted AS (
    UPDATE files f SET records = s.n, rejected = s.bad, first_id = s.first
    FROM (SELECT file, count(*) AS n, count(*) FILTER (WHERE NOT ok) AS bad, min(id) AS first
          FROM v GROUP BY file) s
    WHERE f.id = s.file
    RETURNING f.id, f.sys, f.first_id),
new AS (
    INSERT INTO tags
    SELECT f[1]::bigint, f[2]::bigint, f[3]::bigint, f[4], f[5]::smallint, f[6]::bigint,
           f[7]::smallint, f[8]::bigint, c.sys, s.file, (s.id - c.first_id + 2)::int, :day
    FROM (SELECT file, id, string_to_array(line, '|') AS f FROM v WHERE ok) s
         JOIN counted c ON c.id = s.file
    RETURNING onum, ts, cid, sys, status, seen)
INSERT INTO tagsets AS t
SELECT onum, ts, cid, day_of(ts), count(*) FILTER (WHERE sys = 4), bool_or(sys = 5),
       bool_or(status = 1), min(day_of(seen)) FILTER (WHERE sys = 5 OR status = 1),
       max(seen * 8 + sys), count(*)
FROM new GROUP BY onum, ts, cid
ON CONFLICT (onum, ts, cid) DO UPDATE SET
    bills = t.bills + excluded.bills, setl = t.setl OR excluded.setl,
    rej = t.rej OR excluded.rej, exit_day = least(t.exit_day, excluded.exit_day),
    last = greatest(t.last, excluded.last), ntags = t.ntags + excluded.ntags;
-- exits at keep-days: into history, out of the store
WITH gone AS (DELETE FROM tagsets WHERE exit_day <= :'c'::date - :keep RETURNING *)
INSERT INTO history
SELECT g.onum, g.ts, g.cid, disposition(g.bills, g.setl, g.rej), g.ts, g.last / 8,
       (g.last % 8)::smallint, g.ntags, :day FROM gone g;
DELETE FROM tags t USING history h
WHERE h.cycle = :day AND t.onum = h.onum AND t.ts = h.ts AND t.cid = h.cid;
COMMIT;
-- the batch's upkeep, in the day it is due to: statistics and dead rows
-- (autovacuum is off so that none of it lands in another day), and the
-- day's pages on disk
VACUUM (ANALYZE) tagsets;
VACUUM (ANALYZE) tags;
CHECKPOINT;
SELECT pg_backend_pid() AS pid \\gset
\\setenv PG_BACKEND :pid
\\! grep VmHWM /proc/\$PG_BACKEND/status | tr -dc 0-9 >$PG_RSS_FILE; echo \$PG_BACKEND >$PG_RSS_FILE.pid; awk '{ print \$14 + \$15 }' /proc/\$PG_BACKEND/stat >$PG_RSS_FILE.ticks
\\pset footer off
\\pset format unaligned
\\pset fieldsep '\t'
\\o $out/dock.tsv
SELECT name, outcome, records, rejected FROM files WHERE cycle = :day ORDER BY name;
\\o $out/flow.tsv
SELECT n.name AS sys, sum(f.records - f.rejected) AS tags
FROM files f JOIN sysnames n USING (sys)
WHERE f.cycle = :day AND f.outcome = 'accepted'
GROUP BY n.sys, n.name HAVING sum(f.records - f.rejected) > 0 ORDER BY n.sys;
\\o $out/inprocess.tsv
SELECT n.name AS last_sys, b.name AS age, count(*) AS tagsets
FROM tagsets t JOIN sysnames n ON n.sys = t.last % 8
     JOIN buckets b ON :'c'::date - t.tsday BETWEEN b.lo AND b.hi
WHERE t.exit_day IS NULL
GROUP BY n.sys, n.name, b.ord, b.name ORDER BY n.sys, b.ord;
\\o $out/disposition.tsv
SELECT d.name AS disposition, coalesce(sum(x.n), 0) AS tagsets
FROM dispositions d LEFT JOIN (
    SELECT disposition(bills, setl, rej) AS name, count(*) AS n FROM tagsets GROUP BY 1
    UNION ALL SELECT disposition, count(*) FROM history GROUP BY 1) x USING (name)
GROUP BY d.ord, d.name ORDER BY d.ord;
EOF
    } | pg_sql
    # until the postmaster has reaped the backend: its time is in the
    # postmaster's children's time from then on (pg_server_cpu)
    while [ -e "/proc/$(cat "$PG_RSS_FILE.pid")" ]; do sleep 0.05; done
    # a header even when a report has no rows (psql prints none then)
    for r in dock:name,outcome,records,rejected flow:sys,tags inprocess:last_sys,age,tagsets; do
        f=$out/${r%%:*}.tsv
        if [ ! -s "$f" ]; then echo "${r#*:}" | tr , '\t' >"$f"; fi
    done
}
