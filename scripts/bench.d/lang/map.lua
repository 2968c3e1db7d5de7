local m = {}
for i = 0, 999999 do m["k" .. i] = i end
local s = 0
for i = 0, 999999 do s = s + m["k" .. i] end
print(s)
