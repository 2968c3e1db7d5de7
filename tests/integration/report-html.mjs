// report-html.mjs: opens a cycle's report.html in headless Chromium through
// the DevTools protocol (node --experimental-websocket; no other dependency)
// and checks what a person would see, in TAP (numbered from argv[4]):
//   node report-html.mjs CHROMIUM REPORT_DIR SCREENSHOT FIRST [MAX]
// the page loads with no console error, no exception and no request but the
// file itself; no script; each chart's marks are there, one per TSV number,
// sized in proportion to it (read back from the layout); every drill link
// leads to a page listing the cell's tagsets (at most MAX, as many as the
// cell counts up to it), each of which is in the cell by the report's rule;
// a narrow window does not scroll sideways; a screenshot is written.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [chromium, dir, shot, first, maxArg] = process.argv.slice(2);
const MAX = Number(maxArg || 100);
const SYSTEMS = ["SW", "AMA", "RAMP", "RICS", "BILL", "SETL"];
const AGES = [[0, 1, "0-1"], [2, 3, "2-3"], [4, 7, "4-7"], [8, 14, "8-14"], [15, 30, "15-30"], [31, 1e9, "31+"]];
let n = Number(first) - 1;
const ok = (cond, what, diag) => {
    n++;
    console.log(`${cond ? "ok" : "not ok"} ${n} - ${what}`);
    if (!cond && diag) console.log(String(diag).split("\n").map((l) => "# " + l).join("\n"));
    return cond;
};
const tsv = (name) => {
    const [head, ...rows] = readFileSync(join(dir, name), "utf8").trimEnd().split("\n");
    const h = head.split("\t");
    return rows.map((r) => Object.fromEntries(r.split("\t").map((v, i) => [h[i], v])));
};

const profile = mkdtempSync(join(tmpdir(), "comb-chromium-"));
const browser = spawn(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0", `--user-data-dir=${profile}`, "about:blank"], { stdio: ["ignore", "ignore", "pipe"], detached: true });
// The browser's process group ends with it; the profile goes when it can (the
// test runs this with TMPDIR in its own scratch folder, removed at its end).
const done = (code) => {
    try { process.kill(-browser.pid, "SIGKILL"); } catch (e) { }
    try { rmSync(profile, { recursive: true, force: true, maxRetries: 3 }); } catch (e) { }
    process.exit(code);
};
setTimeout(() => { ok(false, "the browser answered within 180 s"); done(1); }, 180000).unref();

const wsUrl = await new Promise((resolve, reject) => {
    let err = "";
    browser.stderr.on("data", (d) => {
        err += d;
        const m = /DevTools listening on (ws:\S+)/.exec(err);
        if (m) resolve(m[1]);
    });
    browser.on("exit", () => reject(new Error("chromium exited: " + err)));
});
const ws = new WebSocket(wsUrl);
await new Promise((r) => ws.addEventListener("open", r));
let id = 0;
const pending = new Map();
const events = [];
ws.addEventListener("message", (e) => {
    const m = JSON.parse(e.data);
    if (m.id && pending.has(m.id)) {
        const [res, rej] = pending.get(m.id);
        pending.delete(m.id);
        m.error ? rej(new Error(JSON.stringify(m.error))) : res(m.result);
    } else if (m.method) events.push(m);
});
const send = (method, params = {}, sessionId) => new Promise((res, rej) => {
    pending.set(++id, [res, rej]);
    ws.send(JSON.stringify({ id, method, params, sessionId }));
});
const { targetId } = await send("Target.createTarget", { url: "about:blank" });
const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
const page = (m, p) => send(m, p, sessionId);
for (const d of ["Page", "Runtime", "Log", "Network"]) await page(d + ".enable");
const evaluate = async (expr) => (await page("Runtime.evaluate", { expression: expr, returnByValue: true })).result.value;

// Opens a file, waits for its load; the errors and requests it caused.
async function open(path) {
    events.length = 0;
    const url = "file://" + path;
    await page("Page.navigate", { url });
    for (let i = 0; i < 600 && !events.some((e) => e.method === "Page.loadEventFired"); i++) {
        await new Promise((r) => setTimeout(r, 50));
    }
    const loaded = events.some((e) => e.method === "Page.loadEventFired");
    const errors = events.filter((e) => (e.method === "Runtime.consoleAPICalled" && e.params.type === "error") ||
        e.method === "Runtime.exceptionThrown" || (e.method === "Log.entryAdded" && e.params.entry.level === "error"))
        .map((e) => JSON.stringify(e.params).slice(0, 300));
    const requests = events.filter((e) => e.method === "Network.requestWillBeSent" && e.params.request.url !== url)
        .map((e) => e.params.request.url);
    return { loaded, errors, requests };
}

const report = join(dir, "report.html");
const r = await open(report);
ok(r.loaded && r.errors.length === 0, "report.html loads with no console error", r.errors.join("\n"));
ok(r.requests.length === 0, "report.html makes no request", r.requests.join("\n"));
ok(await evaluate("document.querySelectorAll('script').length === 0"), "report.html has no script (reads with JavaScript off)");

// The marks of each chart as laid out: section, category, series, value, size.
const marks = await evaluate(`[...document.querySelectorAll('.mark')].map((m) => {
    const svg = m.ownerSVGElement, b = m.getBoundingClientRect(), base = svg.querySelector('.baseline');
    const s = svg.getBoundingClientRect().height / svg.viewBox.baseVal.height;
    return { section: m.closest('section').id, chart: [...document.querySelectorAll('svg')].indexOf(svg), cat: m.dataset.cat, series: m.dataset.series, value: +m.dataset.value,
             h: b.height, w: b.width, cy: b.top + b.height / 2, base: base.getBoundingClientRect().top, scale: s,
             href: m.closest('a') && m.closest('a').getAttribute('href') };
})`);
// Sizes in proportion: size / value the same for every mark of a chart (to half a unit of its
// viewBox, as the numbers are written to 2 decimals and laid out to a pixel).
function proportional(list, size) {
    const ref = list.reduce((a, m) => (!a || m.value > a.value ? m : a), null);
    const k = ref && ref.value > 0 ? size(ref) / ref.value : 0;
    const bad = list.filter((m) => Math.abs(size(m) - k * m.value) > 1.0 * m.scale + 0.5);
    return bad.length === 0 ? "" : bad.map((m) => JSON.stringify(m)).join("\n");
}
const inproc = tsv("inprocess.tsv");
const ip = marks.filter((m) => m.section === "inprocess");
const want = inproc.map((x) => `${x.last_sys} ${x.age} ${x.tagsets}`).sort();
const got = ip.map((m) => `${m.cat} ${m.series} ${m.value}`).sort();
ok(JSON.stringify(want) === JSON.stringify(got), `in process: a bar segment per row of inprocess.tsv (${want.length})`,
   "want " + want.join(", ") + "\ngot  " + got.join(", "));
ok(proportional(ip, (m) => m.h) === "", "in process: the segments' heights are proportional to the counts", proportional(ip, (m) => m.h));
const flow = tsv("flow.tsv");
const fl = marks.filter((m) => m.section === "flow");
const date = dir.replace(/\/$/, "").split("/").pop();
const today = fl.filter((m) => m.cat === date && m.value > 0).map((m) => `${m.series} ${m.value}`).sort();
ok(JSON.stringify(today) === JSON.stringify(flow.map((x) => `${x.sys} ${x.tags}`).sort()),
   "tags added: the cycle's points are flow.tsv's rows", today.join(", "));
ok((fl.length > 0 || flow.length === 0) && proportional(fl, (m) => m.base - m.cy) === "", "tags added: the points' heights are proportional to the tags",
   proportional(fl, (m) => m.base - m.cy));
const disp = tsv("disposition.tsv");
const dp = marks.filter((m) => m.section === "disposition");
const dtoday = dp.filter((m) => m.cat === date).map((m) => `${m.series} ${m.value}`).sort();
ok(JSON.stringify(dtoday) === JSON.stringify(disp.filter((x) => x.tagsets !== "0").map((x) => `${x.disposition} ${x.tagsets}`).sort()),
   "disposition: the cycle's bar is disposition.tsv's non-zero rows", dtoday.join(", "));
ok((dp.length > 0 || disp.every((x) => x.tagsets === "0")) && proportional(dp, (m) => m.h) === "", "disposition: the segments' heights are proportional", proportional(dp, (m) => m.h));
const dock = tsv("dock.tsv");
const dk = Object.fromEntries(marks.filter((m) => m.section === "dock").map((m) => [m.cat, m.value]));
const count = (o) => dock.filter((x) => x.outcome.split(":")[0] === o).length;
const rej = dock.reduce((a, x) => a + Number(x.rejected), 0);
const recs = dock.reduce((a, x) => a + Number(x.records), 0);
ok(dk["accepted files"] === count("accepted") && dk["duplicate files"] === count("duplicate") &&
   dk["quarantined files"] === count("quarantined") && dk["records"] === recs && dk["rejected records"] === rej,
   "the dock: files by outcome, records and rejected records as dock.tsv counts them", JSON.stringify(dk));
const dockCharts = [...new Set(marks.filter((m) => m.section === "dock").map((m) => m.chart))];
const badDock = dockCharts.map((c) => proportional(marks.filter((m) => m.chart === c), (m) => m.w)).join("");
ok(dockCharts.length === 2 && badDock === "", "the dock: each chart's bars' lengths are proportional", badDock);

// Narrow: a phone's width does not scroll the page sideways; printing works.
await page("Emulation.setDeviceMetricsOverride", { width: 360, height: 800, deviceScaleFactor: 1, mobile: true });
await open(report);
const sw = await evaluate("document.documentElement.scrollWidth");
ok(sw <= 362, `a 360 px window: the page is ${sw} px wide`);
await page("Emulation.clearDeviceMetricsOverride");
await page("Emulation.setDeviceMetricsOverride", { width: 1200, height: 900, deviceScaleFactor: 1, mobile: false });
await open(report);
const pdf = await page("Page.printToPDF", {});
ok(pdf.data.length > 1000, "the report prints (PDF)");
const png = await page("Page.captureScreenshot", { format: "png", captureBeyondViewport: true,
    clip: { x: 0, y: 0, width: 1200, height: await evaluate("document.documentElement.scrollHeight"), scale: 1 } });
writeFileSync(shot, Buffer.from(png.data, "base64"));
ok(true, "a screenshot in " + shot);

// Every drill link: the cell's page, its tagsets in the cell.
const links = await evaluate("[...document.querySelectorAll('a.drill')].map((a) => [a.getAttribute('href'), +a.textContent])");
const bars = new Set(ip.map((m) => m.href));
ok(links.length === inproc.length && links.every(([h]) => bars.has(h)),
   `a drill link per cell, from the table and the chart (${links.length})`);
const dayOf = (t) => Math.floor(t / 86400);
const cycleDay = dayOf(Date.UTC(+date.slice(0, 4), +date.slice(4, 6) - 1, +date.slice(6, 8)) / 1000);
for (const [href, total] of links) {
    const [, sys, age] = /inprocess-([A-Z]+)-(.+)\.html$/.exec(href);
    const p = await open(join(dir, href));
    const v = await evaluate(`({ total: +document.getElementById('total').textContent,
        shown: +document.getElementById('shown').textContent,
        sets: [...document.querySelectorAll('tbody.tagset')].map((b) => ({ key: b.dataset.onum + ' ' + b.dataset.ts + ' ' + b.dataset.cid,
            ts: +b.dataset.ts, tags: [...b.querySelectorAll('tr.tag')].map((t) => ({ sys: t.dataset.sys, seen: +t.dataset.seen, status: +t.dataset.status })) })) })`);
    const wrong = v.sets.filter((s) => {
        const last = s.tags.reduce((a, t) => (!a || t.seen > a.seen || (t.seen === a.seen && SYSTEMS.indexOf(t.sys) > SYSTEMS.indexOf(a.sys))) ? t : a, null);
        const a = cycleDay - dayOf(s.ts);
        const b = AGES.find(([lo, hi]) => a >= lo && a <= hi);
        return !last || last.sys !== sys || b[2] !== age || s.tags.some((t) => t.sys === "SETL" || t.status === 1);
    });
    const keys = new Set(v.sets.map((s) => s.key));
    ok(p.loaded && p.errors.length === 0 && p.requests.length === 0 && v.total === total &&
       v.sets.length === Math.min(total, MAX) && v.shown === v.sets.length && keys.size === v.sets.length && wrong.length === 0,
       `${href}: ${v.sets.length} of ${total} tagsets, each in the cell`,
       JSON.stringify({ loaded: p.loaded, errors: p.errors, requests: p.requests, total: v.total, shown: v.shown, rows: v.sets.length, wrong: wrong.slice(0, 3) }));
}
console.log(`# next ${n + 1}`);
ws.close();
done(0);
