# duckdb.sh, sourced by the benches with DuckDB as a peer (@duckdb/node-api,
# from npm): duckdb_modules DIR gives DIR a node_modules that holds it,
# linked to BENCH_DUCKDB_MODULES if set, else to the one scripts/setup
# installs in the tree's .peers, else installed into DIR by npm. Uses the
# sourcing script's $here (its own directory) and say().
duckdb_modules() {
    [ -d "$1/node_modules/@duckdb/node-api" ] && return 0
    modules=${BENCH_DUCKDB_MODULES:-}
    [ -n "$modules" ] || [ ! -d "$here/../../.peers/node_modules/@duckdb/node-api" ] ||
        modules=$(cd "$here/../../.peers/node_modules" && pwd)
    if [ -n "$modules" ]; then
        rm -rf "$1/node_modules"
        ln -s "$modules" "$1/node_modules"
    else
        say "npm install @duckdb/node-api into $1"
        (cd "$1" && npm install --silent @duckdb/node-api >&2)
    fi
}
