# docs/LANGUAGE.md has an entry for every native in vm/natives.def, a built-in
# module's members too: the usage of its help string ("name(args)",
# "module.name(args)"), in backquotes.
cd "$COMB_SRCDIR" || exit 99
n=0
for usage in $(sed -n -e 's/^X([a-z_]*, [-0-9]*, [-0-9]*, "\([^:]*\):.*/\1/p' \
        -e 's/^M([a-z_]*, [a-z_]*, [-0-9]*, [-0-9]*, "\([^:]*\):.*/\1/p' vm/natives.def | tr ' ' '~'); do
    usage=$(echo "$usage" | tr '~' ' ')
    n=$((n + 1))
    grep -qF "\`$usage\`" docs/LANGUAGE.md || echo "not in docs/LANGUAGE.md: $usage"
done
[ "$n" -ge 60 ] || echo "only $n natives found in vm/natives.def"
