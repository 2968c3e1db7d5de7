# A module found neither beside the importer nor in the stdlib.
"$COMB" -e 'import "no_such_module_anywhere"' 2>&1 | sed "s|$COMB_STDLIB|STDLIB|"
