// events-duck.mjs DB REPS KIND SQL CHECKSQL: one query of `scripts/bench events`
// in DuckDB (@duckdb/node-api). KIND summary: SQL gives a count; content: its rows,
// read into JS arrays (getRows). REPS 0: asked once in a fresh instance, the
// opening included (cold); else once to warm, then REPS times. Prints the rows,
// the CPU ms of one asking (process.cpuUsage, DuckDB's threads included), the
// wall ms (the fastest), and CHECKSQL's answer (untimed).
// With LOAD instead of KIND: DB ev.duckdb FILE LOAD DDL N [A B]: copies the CSV
// rows of FILE (a FIFO: bench.d/events-load.sh) into table ev (made by DDL if
// missing), in one transaction that commits only if N rows came, after
// deleting the rows of runs A..B (a chunk begun before and not marked).
import { DuckDBInstance } from '@duckdb/node-api';
const [db, reps0, kind, sql, check, ...more] = process.argv.slice(2);
if (kind === 'LOAD') {
    const inst = await DuckDBInstance.create(db, { memory_limit: '2GB' });
    const con = await inst.connect();
    await con.run(sql.replace(/^CREATE TABLE /, 'CREATE TABLE IF NOT EXISTS '));
    await con.run('BEGIN TRANSACTION');
    if (more.length === 2) await con.run(`DELETE FROM ev WHERE run BETWEEN ${Number(more[0])} AND ${Number(more[1])}`);
    const r = await con.runAndReadAll(`COPY ev FROM '${reps0}' (FORMAT csv, HEADER true)`);
    const n = Number(r.getRows()[0][0]);
    if (n !== Number(check)) {
        await con.run('ROLLBACK');
        console.error(`events-duck: ${n} rows copied from ${reps0}, not ${check}`);
        process.exit(1);
    }
    await con.run('COMMIT');
    process.exit(0);
}
const reps = Number(reps0);
const c0 = process.cpuUsage();
const w0 = process.hrtime.bigint();
const inst = await DuckDBInstance.create(db, { access_mode: 'READ_ONLY' });
const con = await inst.connect();
async function ask() {
    const r = await con.runAndReadAll(sql);
    const rows = r.getRows();
    return kind === 'summary' ? Number(rows[0][0]) : rows.length;
}
let n = 0, wall = Infinity, cpu;
if (reps === 0) {
    n = await ask();
    wall = Number(process.hrtime.bigint() - w0) / 1e6;
    const c = process.cpuUsage(c0);
    cpu = (c.user + c.system) / 1000;
} else {
    n = await ask();
    const c1 = process.cpuUsage();
    for (let i = 0; i < reps; i++) {
        const s = process.hrtime.bigint();
        n = await ask();
        wall = Math.min(wall, Number(process.hrtime.bigint() - s) / 1e6);
    }
    const c = process.cpuUsage(c1);
    cpu = (c.user + c.system) / 1000 / reps;
}
const k = (await con.runAndReadAll(check)).getRows()[0][0];
console.log(`${n} ${cpu.toFixed(3)} ${wall.toFixed(3)} ${k === null ? 0 : k}`);
