BEGIN { s = ""; for (i = 0; i < 1000000; i++) s = s "abc"; print length(s) }
