local m = {}
for i = 0, 999999 do m[i] = i end
local s = 0
for i = 0, 999999 do s = s + m[i] end
print(s)
