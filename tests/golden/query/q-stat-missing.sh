# stat over rows (maps) tells zero from missing: count is the rows holding
# a value, nulls those of them that are zero or empty (as a store's stat
# counts them), missing the rows holding nil or no such field; min, max,
# mean and distinct read the values only. A store's fields always hold a
# value (an empty field is zero), so its stat has no missing column.
"$COMB" --norc <<'END'
.mode table
[{a: 0, b: nil, s: ""}, {a: 1}, {b: 2, a: nil, s: "x"}, {a: 0.0, b: 0, s: nil}] | stat
[{a: nil}, {a: nil}] | stat
let r = [{k: 1, v: 5}, {k: 2}, {k: 3, v: 0}]
let st = r | stat
print(st[1].field, st[1].count + st[1].missing == len(r), st[1].nulls, st[1].missing)
END
