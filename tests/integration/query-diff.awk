# query-diff.awk: random queries for the differential test, each written
# twice: for comb (q.comb) and for sqlite3 (q.sql), with a marker line
# before each so their answers can be paired. Run with -v seed=N -v n=N.
function pick(a, k) { return a[int(rand() * k) + 1] }
function num(lo, hi) { return lo + int(rand() * (hi - lo + 1)) }
function digits(k,   s, i) { s = ""; for (i = 0; i < k; i++) s = s int(rand() * 10); return s }

# An atom over a tagset's fields: sets C (comb) and S (SQL).
function tagset_atom(   r, f, op, v, lo, hi, list, i, k, d, form) {
    r = int(rand() * 15)
    if (r <= 2) {
        f = pick(intf, 4); op = pick(ops, 6)
        v = f == "onum" ? num(7325551190, 7325551510) : f == "ts" ? num(1796083200, 1796083200 + 190000) : f == "bsid" ? num(0, 12) * 17 : num(0, 1000)
        # a float constant: ints and floats compare exactly, in SQL too
        if (rand() < 0.3) v = v (rand() < 0.5 ? ".5" : ".0")
        C = f " " op " " v; S = f " " sqlop[op] " " v
    } else if (r == 3) {
        op = pick(ops, 6); v = num(0, 400) / 4
        C = "score " op " " v; S = "score " sqlop[op] " " v
    } else if (r == 4) {
        op = pick(ops, 6); v = pick(states, 3)
        C = "state " op " \"" v "\""; S = "state " sqlop[op] " '" v "'"
    } else if (r == 5) {
        k = num(1, 5); list = ""
        for (i = 0; i < k; i++) list = list (i ? ", " : "") num(7325551200, 7325551499)
        C = "onum in [" list "]"; S = "onum IN (" list ")"
    } else if (r == 6) {
        lo = num(0, 900); hi = lo + num(0, 300)
        if (rand() < 0.5) { C = "dur in " lo ".." hi; S = "(dur >= " lo " AND dur < " hi ")" }
        else { C = "between(dur, " lo ", " hi ")"; S = "dur BETWEEN " lo " AND " hi }
    } else if (r == 7) {
        d = digits(num(1, 2))
        C = "onum ~ /" d "$/"; S = "CAST(onum AS TEXT) GLOB '*" d "'"
    } else if (r == 8) {
        v = "C" num(0, 89)
        if (rand() < 0.5) { C = "cid == \"" v "\""; S = "cid = '" v "'" }
        else { d = num(1, 8); C = "cid ~ /^C" d "/"; S = "cid GLOB 'C" d "*'" }
    } else if (r <= 10) {
        tag_pred(2)
        form = int(rand() * 3)
        if (form == 0) { C = "any(tags, " TC ")"; S = "EXISTS(SELECT 1 FROM g WHERE g.id = t.id AND (" TS "))" }
        else if (form == 1) { C = "all(tags, " TC ")"; S = "NOT EXISTS(SELECT 1 FROM g WHERE g.id = t.id AND NOT (" TS "))" }
        else { k = num(0, 3); op = pick(ops, 6)
               C = "count(tags, " TC ") " op " " k; S = "(SELECT count(*) FROM g WHERE g.id = t.id AND (" TS ")) " sqlop[op] " " k }
    } else if (r == 11) {
        k = num(0, 4); op = pick(ops, 6)
        C = "count(tags) " op " " k; S = "(SELECT count(*) FROM g WHERE g.id = t.id) " sqlop[op] " " k
    } else if (r >= 13) {
        # a bare tag-field condition: Gecko's rule makes it any(tags, COND)
        tag_atom(4)
        C = TC; S = "EXISTS(SELECT 1 FROM g WHERE g.id = t.id AND (" TS "))"
    } else {
        tag_pred(1); op = pick(ops, 6); v = num(0, 3)
        f = rand() < 0.5 ? "first" : "last"
        C = f "(tags, " TC ").status " op " " v
        # comb's nil compares false: COALESCE keeps SQL's NULL from spreading through NOT
        S = "COALESCE((SELECT status FROM g WHERE g.id = t.id AND (" TS ") ORDER BY seq " (f == "first" ? "ASC" : "DESC") " LIMIT 1) " sqlop[op] " " v ", 0)"
    }
}

# A predicate over a tag's fields (and its tagset's bsid, unless only the
# first k kinds are asked for: tag fields only): TC and TS.
function tag_atom(k,   r, op, v) {
    r = int(rand() * (k ? k : 5))
    if (r == 0) { op = rand() < 0.5 ? "==" : "!="; v = pick(syss, 3); TC = "sys " op " \"" v "\""; TS = "g.sys " sqlop[op] " '" v "'" }
    else if (r == 1) { op = pick(ops, 6); v = num(0, 3) (rand() < 0.2 ? ".5" : rand() < 0.2 ? ".0" : "")
                       TC = "status " op " " v; TS = "g.status " sqlop[op] " " v }
    else if (r == 2) { v = digits(1); TC = "dnum ~ /" v "$/"; TS = "g.dnum GLOB '*" v "'" }
    else if (r == 3) { v = digits(2); TC = "dnum ~ /^20155500" v "/"; TS = "g.dnum GLOB '20155500" v "*'" }
    else { op = pick(ops, 6); v = num(0, 12) * 17; TC = "bsid " op " " v; TS = "t.bsid " sqlop[op] " " v }
}

function tag_pred(depth,   a, b, r) {
    tag_atom(0)
    if (depth <= 0 || rand() < 0.5) return
    a = TC; b = TS
    tag_pred(depth - 1)
    r = rand() < 0.5
    TC = "(" a (r ? " && " : " || ") TC ")"; TS = "(" b (r ? " AND " : " OR ") TS ")"
}

function pred(depth,   a, b, r) {
    if (depth <= 0 || rand() < 0.35) {
        tagset_atom()
        if (rand() < 0.15) { C = "!(" C ")"; S = "NOT (" S ")" }
        return
    }
    pred(depth - 1); a = C; b = S
    pred(depth - 1)
    r = rand() < 0.5
    C = "(" a (r ? " && " : " || ") C ")"; S = "(" b (r ? " AND " : " OR ") S ")"
    if (rand() < 0.1) { C = "!" C; S = "NOT " S }
}

BEGIN {
    srand(seed)
    split("onum ts bsid dur", intf, " ")
    split("== != < <= > >=", ops, " ")
    sqlop["=="] = "="; sqlop["!="] = "<>"; sqlop["<"] = "<"; sqlop["<="] = "<="; sqlop[">"] = ">"; sqlop[">="] = ">="
    split("open billed closed", states, " ")
    split("RICS BILL SWITCH", syss, " ")
    split("bsid state cid", keys, " ")
    print "let ds = open(\"s\")" > "q.comb"
    print "fn show(rows) {" > "q.comb"
    print "    for r in rows {" > "q.comb"
    print "        let line = nil" > "q.comb"
    print "        for k, v in r {" > "q.comb"
    print "            if k == \"a\" { v = int(v) }" > "q.comb"
    print "            if line == nil { line = str(v) } else { line = line + \"|\" + str(v) }" > "q.comb"
    print "        }" > "q.comb"
    print "        print(line)" > "q.comb"
    print "    }" > "q.comb"
    print "}" > "q.comb"
    for (q = 1; q <= n; q++) {
        pred(3)
        print "Q " q "\t" C > "q.txt"
        print "print(\"Q" q "\")" > "q.comb"
        print "print(ds | where " C " | count)" > "q.comb"
        print "SELECT 'Q" q "';" > "q.sql"
        print "SELECT count(*) FROM t WHERE " S ";" > "q.sql"
    }
    for (q = n + 1; q <= n + ngroups; q++) {
        pred(1)
        k = pick(keys, 3)
        print "G " q "\t" C " group by " k > "q.txt"
        print "print(\"Q" q "\")" > "q.comb"
        print "show(ds | where " C " | group by " k " { n: count(), s: sum(dur), lo: min(dur), hi: max(score), d: distinct(onum), t: sum(count(tags, status > 1)), a: avg(dur) * 1000 })" > "q.comb"
        print "SELECT 'Q" q "';" > "q.sql"
        print "SELECT " k ", count(*), sum(dur), min(dur), max(score), count(DISTINCT onum), sum((SELECT count(*) FROM g WHERE g.id = t.id AND g.status > 1)), CAST(avg(dur) * 1000 AS INTEGER) FROM t WHERE " S " GROUP BY " k " ORDER BY " k ";" > "q.sql"
    }
    q = n + ngroups + 1
    print "G " q "\ttags | group by sys, status" > "q.txt"
    print "print(\"Q" q "\")" > "q.comb"
    print "show(ds | where bsid > 50 | tags | group by sys, status { n: count(), s: sum(dur) })" > "q.comb"
    print "SELECT 'Q" q "';" > "q.sql"
    print "SELECT g.sys, g.status, count(*), sum(t.dur) FROM t JOIN g ON g.id = t.id WHERE t.bsid > 50 GROUP BY g.sys, g.status ORDER BY g.sys, g.status;" > "q.sql"
}
