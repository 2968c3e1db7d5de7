# events-plot.sh RESULTS KIND XTITLE WHAT: the seed's plot of `scripts/bench events`
# as SVG on stdout: time (hot: CPU ms; cold: wall ms) against the rows counted
# or returned, both axes log10, a line per system and mode (hot solid, cold
# dashed; a circle for a 10% cut, a square for 1%), over the rows of RESULTS
# (bench.d/events' results.tsv) of KIND.
awk -F'\t' -v kind="$2" -v xtitle="$3" -v what="$4" '
function lg(v) { return log(v < 1e-3 ? 1e-3 : v) / log(10) }
function px(v) { return L + (lg(v) - x0) / (x1 - x0) * (W - L - R) }
function py(v) { return T + (y1 - lg(v)) / (y1 - y0) * (H - T - B) }
$1 == kind { n++; X[n] = $6 < 1 ? 1 : $6; Y[n] = ($4 == "hot") ? $7 : $8; S[n] = $5 " " $4; C[n] = $2; P[n] = $3 }
END {
    W = 720; H = 440; L = 70; R = 150; T = 30; B = 50
    x0 = 1e9; x1 = -1e9; y0 = 1e9; y1 = -1e9
    for (i = 1; i <= n; i++) {
        if (lg(X[i]) < x0) x0 = lg(X[i]); if (lg(X[i]) > x1) x1 = lg(X[i])
        if (lg(Y[i]) < y0) y0 = lg(Y[i]); if (lg(Y[i]) > y1) y1 = lg(Y[i])
    }
    x0 = int(x0 + 100) - 100; x1 = -int(-x1 + 100) + 100; if (x1 <= x0) x1 = x0 + 1
    y0 = int(y0 + 100) - 100; y1 = -int(-y1 + 100) + 100; if (y1 <= y0) y1 = y0 + 1
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
    printf "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H
    printf "<text x=\"%d\" y=\"18\" font-size=\"14\">%s: time against %s (log-log), %s</text>\n", L, toupper(kind), xtitle, what
    for (e = x0; e <= x1; e++) {
        x = px(10 ^ e)
        printf "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>", x, x, T, H - B
        printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, H - B + 16, 10 ^ e
    }
    for (e = y0; e <= y1; e++) {
        y = py(10 ^ e)
        printf "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", L, W - R, y, y
        printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, y + 4, 10 ^ e
    }
    printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", L, T, W - L - R, H - T - B
    printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", L + (W - L - R) / 2, H - 10, xtitle
    printf "<text transform=\"rotate(-90)\" x=\"%d\" y=\"16\" text-anchor=\"middle\">ms (hot: CPU; cold: wall)</text>\n", -(T + (H - T - B) / 2)
    col["comb"] = "#d62728"; col["duckdb"] = "#1f77b4"; col["postgres"] = "#2ca02c"
    ns = split("comb hot,comb cold,duckdb hot,duckdb cold,postgres hot,postgres cold", ser, ",")
    for (s = 1; s <= ns; s++) {
        split(ser[s], sm, " ")
        m = 0
        for (i = 1; i <= n; i++) if (S[i] == ser[s]) { m++; ix[m] = i }
        for (a = 2; a <= m; a++) for (b = a; b > 1 && X[ix[b]] < X[ix[b - 1]]; b--) { t = ix[b]; ix[b] = ix[b - 1]; ix[b - 1] = t }
        pts = ""
        for (a = 1; a <= m; a++) pts = pts sprintf("%.1f,%.1f ", px(X[ix[a]]), py(Y[ix[a]]))
        dash = sm[2] == "cold" ? " stroke-dasharray=\"6 4\"" : ""
        printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%s\"/>\n", col[sm[1]], dash, pts
        for (a = 1; a <= m; a++) {
            i = ix[a]
            if (C[i] == 1)
                printf "<rect x=\"%.1f\" y=\"%.1f\" width=\"6\" height=\"6\" fill=\"%s\">", px(X[i]) - 3, py(Y[i]) - 3, col[sm[1]]
            else
                printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">", px(X[i]), py(Y[i]), col[sm[1]]
            printf "<title>%s, %d%% of runs 1..%d: %d rows, %.3f ms</title></%s>\n", ser[s], C[i], P[i], X[i], Y[i], C[i] == 1 ? "rect" : "circle"
        }
        ly = T + 10 + 20 * s
        printf "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>", W - R + 10, W - R + 40, ly, ly, col[sm[1]], dash
        printf "<text x=\"%d\" y=\"%d\">%s</text>\n", W - R + 46, ly + 4, ser[s]
    }
    printf "<text x=\"%d\" y=\"%d\">circle: 10%% cut</text>\n", W - R + 10, T + 10 + 20 * (ns + 1) + 4
    printf "<text x=\"%d\" y=\"%d\">square: 1%% cut</text>\n", W - R + 10, T + 10 + 20 * (ns + 2) + 4
    print "</svg>"
}' "$1"
