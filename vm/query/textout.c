/* textout: `| write(path)` into a text file (CSV, TSV or JSON, by the
 * path's extension) rather than a tagset file; the text itself is the
 * prompt's table module's, through vm_text_writer. */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "vm/query/qplan.h"

int64_t (*vm_text_writer)(VM *vm, Value rows, VArray *times, VStr *path, int format);

int vm_text_format_of(const char *path, size_t len)
{
    static const struct { const char *ext; int f; } exts[] = {
        {".tsv", VM_TEXT_TSV}, {".csv", VM_TEXT_CSV}, {".json", VM_TEXT_JSON},
    };
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        size_t n = strlen(exts[i].ext);
        if (len > n && !strcasecmp(path + len - n, exts[i].ext))
            return exts[i].f;
    }
    return 0;
}

int qtext_format(Value target)
{
    return IS_STR(target) ? vm_text_format_of(AS_STR(target)->data, AS_STR(target)->len) : 0;
}

Value qtext_write(VM *vm, const QPlan *p, const QStep *s, Value rows)
{
    if (!vm_text_writer)
        vm_error(vm, "write: this program cannot write text files");
    if (s->write_opts)
        vm_error(vm, "write: a text file (%s) takes no options", AS_STR(s->write_target)->data);
    VArray *times = qp_time_columns(vm, p);
    vm_push_root(vm, v_obj(times));
    int64_t n = vm_text_writer(vm, rows, times, AS_STR(s->write_target), qtext_format(s->write_target));
    vm_pop_root(vm, 1);
    return v_int(n);
}
