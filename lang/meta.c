/* meta: the prompt's dot commands, dispatched from lang/commands.def. */
#include "config.h"
#include "lang/meta.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lang/help.h"
#include "vm/opcodes.h"
#include "vm/query/query.h"

#define ARG_MAX 4096

typedef RunStatus (*meta_fn)(Session *s, const char *arg);

#define X(name, args, help) static RunStatus cmd_##name(Session *s, const char *arg);
#include "lang/commands.def"
#undef X

const MetaCommand meta_commands[] = {
#define X(name, args, help) {#name, args, help},
#include "lang/commands.def"
#undef X
};
const size_t meta_ncommands = sizeof meta_commands / sizeof meta_commands[0];

static const meta_fn handlers[] = {
#define X(name, args, help) cmd_##name,
#include "lang/commands.def"
#undef X
};

__attribute__((format(printf, 1, 2)))
static RunStatus fail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return RUN_ERROR;
}

static RunStatus cmd_help(Session *s, const char *arg)
{
    (void)s;
    return help_show(stdout, arg) ? RUN_OK : RUN_ERROR;
}

static RunStatus cmd_schema(Session *s, const char *arg)
{
    const char *name = *arg ? arg : "ds";
    Value v;
    if (!session_global(s, name, strlen(name), &v))
        return fail("no store bound to %s", name);
    if (!session_store_ops.schema || !session_store_ops.schema(s->vm, v, stdout))
        return fail("%s is not a store", name);
    return RUN_OK;
}

static RunStatus cmd_tables(Session *s, const char *arg)
{
    (void)arg;
    if (!session_tables(s, stdout))
        printf("no store or tagset file is bound to a name (let ds = open(\"DIR\"))\n");
    return RUN_OK;
}

static RunStatus cmd_timer(Session *s, const char *arg)
{
    if (!strcmp(arg, "on") || !strcmp(arg, "off"))
        s->timer = arg[1] == 'n';
    else if (*arg)
        return fail(".timer takes on or off, not '%s'", arg);
    else
        printf("timer %s\n", s->timer ? "on" : "off");
    return RUN_OK;
}

/* .confirm: count before select; on asks above the screen's height. */
static RunStatus cmd_confirm(Session *s, const char *arg)
{
    char *end;
    long n = strtol(arg, &end, 10);
    if (!strcmp(arg, "on") || !strcmp(arg, "off"))
        s->confirm = arg[1] == 'n' ? -1 : 0;
    else if (*arg && (*end || n <= 0))
        return fail(".confirm takes on, off or a number of rows above 0, not '%s'", arg);
    else if (*arg)
        s->confirm = n;
    else if (s->confirm < 0)
        printf("confirm on (above the screen's height)\n");
    else if (s->confirm)
        printf("confirm above %ld rows\n", s->confirm);
    else
        printf("confirm off\n");
    return RUN_OK;
}

static RunStatus cmd_mode(Session *s, const char *arg)
{
    if (!*arg) {
        printf("mode %s\n", table_format_name(s->mode));
        return RUN_OK;
    }
    int f = table_format_parse(arg);
    if (f < 0)
        return fail("unknown mode '%s'; modes: table tsv csv json line", arg);
    s->mode = (TableFormat)f;
    return RUN_OK;
}

/* .output FILE, .once FILE: results into FILE, written anew. */
static RunStatus open_output(Session *s, const char *path, bool once)
{
    if (!session_output_close(s))
        return RUN_ERROR;
    if (!*path)
        return once ? fail("%s", ".once needs a file name") : RUN_OK;
    FILE *f = fopen(path, "w");
    if (!f)
        return fail("cannot write %s: %s", path, strerror(errno));
    int by_name = vm_text_format_of(path, strlen(path));
    s->out = f;
    s->out_once = once;
    s->out_mode = by_name ? (TableFormat)by_name : s->mode;
    return RUN_OK;
}

static RunStatus cmd_output(Session *s, const char *arg)
{
    return open_output(s, arg, false);
}

static RunStatus cmd_once(Session *s, const char *arg)
{
    return open_output(s, arg, true);
}

static RunStatus cmd_read(Session *s, const char *arg)
{
    if (!*arg)
        return fail("%s", ".read needs a file name");
    return session_run_file(s, arg, false);
}

static RunStatus cmd_dump(Session *s, const char *arg)
{
    (void)arg;
    VProto *p = session_last(s);
    if (!p)
        return fail("%s", "no statement has run yet");
    vm_disasm(p, stdout);
    return RUN_OK;
}

static RunStatus cmd_quit(Session *s, const char *arg)
{
    (void)arg;
    s->quit = true;
    return RUN_OK;
}

/* The argument: the rest of the line up to a `#` comment (one that starts
 * the argument or follows a space, outside quotes), trimmed, quotes around
 * it dropped. */
static const char *argument(const char *p, const char *end, char *buf)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    bool quoted = false;
    for (const char *c = p; c < end; c++) {
        if (*c == '"')
            quoted = !quoted;
        else if (*c == '#' && !quoted && (c == p || c[-1] == ' ' || c[-1] == '\t')) {
            end = c;
            break;
        }
    }
    while (end > p && strchr(" \t\r\n", end[-1]))
        end--;
    if (end - p >= 2 && *p == '"' && end[-1] == '"') {
        p++;
        end--;
    }
    if (end - p >= ARG_MAX)
        return NULL;
    memcpy(buf, p, (size_t)(end - p));
    buf[end - p] = '\0';
    return buf;
}

RunStatus meta_run(Session *s, const char *line, size_t len)
{
    const char *end = line + len, *p = line + 1, *name = p;
    while (p < end && !strchr(" \t\r\n", *p))
        p++;
    size_t n = (size_t)(p - name);
    char buf[ARG_MAX];
    const char *arg = argument(p, end, buf);
    if (!arg)
        return fail("%s", "the command's argument is too long");
    for (size_t i = 0; i < meta_ncommands; i++)
        if (strlen(meta_commands[i].name) == n && !memcmp(meta_commands[i].name, name, n)) {
            RunStatus st = handlers[i](s, arg);
            fflush(stdout);
            return st;
        }
    snprintf(buf, sizeof buf, "%.*s", (int)(n > 64 ? 64 : n), name);
    return fail("unknown command .%s; .help commands lists them", buf);
}
