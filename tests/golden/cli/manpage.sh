# The manual page (docs/comb.1, installed by make install) documents every
# option `comb --help` lists, and every command; it renders
# without warnings where man(1) is there.
cd "$COMB_SRCDIR" || exit 99
for opt in $("$COMB" --help | sed '/^commands/,$d' | grep -o -- ' --*[a-zA-Z][-a-zA-Z]*' | sort -u); do
    o=$(printf '%s' "$opt" | sed 's/-/\\-/g')     # troff writes - as \-
    grep -qF -- "$o" docs/comb.1 || echo "comb --help lists $opt; docs/comb.1 does not"
done
for cmd in cycle gen gre report store jobs; do
    grep -q "^\.B comb $cmd" docs/comb.1 || echo "docs/comb.1 does not describe comb $cmd"
done
if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
    MANWIDTH=80 man --warnings -l docs/comb.1 2>&1 >/dev/null | head -5
fi
echo checked
