/* help: the prompt's .help and comb --reference, generated from the tables
 * of natives, verbs, dot commands and topics, so the two never disagree. */
#include "config.h"
#include "lang/help.h"

#include <string.h>

#include "lang/meta.h"
#include "vm/natives.h"
#include "vm/query/query.h"

const HelpEntry help_verbs[] = {
#define X(name, last, usage, text) {#name, usage, text},
#include "vm/verbs.def"
#undef X
};
const size_t help_nverbs = sizeof help_verbs / sizeof help_verbs[0];

const HelpEntry help_topics[] = {
#define X(name, summary, text) {#name, summary, text},
#include "lang/topics.def"
#undef X
};
const size_t help_ntopics = sizeof help_topics / sizeof help_topics[0];

const HelpEntry help_operators[] = {
#define X(names, usage, text) {names, usage, text},
#include "lang/operators.def"
#undef X
};
const size_t help_noperators = sizeof help_operators / sizeof help_operators[0];

/* The lists that are topics too. */
static const HelpEntry lists[] = {
    {"natives", "the built-in functions and modules", NULL},
    {"verbs", "the pipeline verbs", NULL},
    {"commands", "the prompt's dot commands", NULL},
    {"functions", "the functions of queries: quantifiers, aggregates, between", NULL},
    {"operators", "the operators, and the if-expression", NULL},
};
enum { LIST_NATIVES, LIST_VERBS, LIST_COMMANDS, LIST_FUNCTIONS, LIST_OPERATORS, NLISTS };

/* A native's help is "usage: text"; the usage ends at its "): ". */
static size_t usage_len(const VmNativeDef *d)
{
    const char *sep = strstr(d->help, "): ");
    return sep ? (size_t)(sep + 1 - d->help) : strlen(d->help);
}

static const char *native_text(const VmNativeDef *d)
{
    const char *sep = strstr(d->help, "): ");
    return sep ? sep + 3 : "";
}

static void list_members(FILE *out, const char *mod)
{
    for (size_t i = 0; i < vm_nnatives; i++)
        if (vm_native_in(&vm_natives[i], mod))
            fprintf(out, "  %-22.*s %s\n", (int)usage_len(&vm_natives[i]), vm_natives[i].help,
                    native_text(&vm_natives[i]));
}

static void show_module(FILE *out, const VmNativeModule *m)
{
    fprintf(out, "module %s (import \"%s\"): %s\n", m->name, m->name, m->help);
    list_members(out, m->name);
}

static void list_natives(FILE *out)
{
    list_members(out, NULL);
    for (size_t k = 0; k < vm_nnative_modules; k++) {
        fputc('\n', out);
        show_module(out, &vm_native_modules[k]);
    }
}

static void list_verbs(FILE *out)
{
    for (size_t i = 0; i < help_nverbs; i++)
        fprintf(out, "  %-34s %s\n", help_verbs[i].usage, help_verbs[i].text);
}

static void list_commands(FILE *out)
{
    char buf[64];
    for (size_t i = 0; i < meta_ncommands; i++) {
        snprintf(buf, sizeof buf, ".%s %s", meta_commands[i].name, meta_commands[i].args);
        fprintf(out, "  %-28s %s\n", buf, meta_commands[i].help);
    }
}

/* A query function's help is "usage: text" too. */
static void list_functions(FILE *out)
{
    for (size_t i = 0; i < QF__COUNT; i++)
        fprintf(out, "  %s\n", vm_query_funcs[i].help);
}

static void list_operators(FILE *out)
{
    for (size_t i = 0; i < help_noperators; i++)
        fprintf(out, "  %-30s %s\n", help_operators[i].usage, help_operators[i].text);
}

/* Whether topic is one of the space-separated names. */
static bool among(const char *topic, const char *names)
{
    size_t n = strlen(topic);
    for (const char *p = names; *p;) {
        size_t w = strcspn(p, " ");
        if (w == n && !memcmp(p, topic, n))
            return true;
        p += w + (p[w] == ' ');
    }
    return false;
}

static void overview(FILE *out)
{
    fputs("comb: a query language and prompt for stores of tagsets.\n"
          "Topics (.help TOPIC):\n", out);
    for (size_t i = 0; i < help_ntopics; i++)
        fprintf(out, "  %-10s %s\n", help_topics[i].name, help_topics[i].usage);
    for (size_t i = 0; i < NLISTS; i++)
        fprintf(out, "  %-10s %s\n", lists[i].name, lists[i].usage);
    fputs(".help NAME also explains one native, module, verb, command, query function or\n"
          "operator, e.g. .help len, .help any, .help &&\n", out);
}

static bool named(const char *a, const char *b)
{
    return !strcmp(a, b);
}

/* A native by its name, or a module's member by its name alone too. */
static bool names_native(const char *topic, const VmNativeDef *d)
{
    const char *dot = strchr(d->name, '.');
    return named(topic, d->name) || (dot && named(topic, dot + 1));
}

bool help_show(FILE *out, const char *topic)
{
    if (!topic || !*topic) {
        overview(out);
        return true;
    }
    void (*const list[NLISTS])(FILE *) = {list_natives, list_verbs, list_commands, list_functions,
                                          list_operators};
    for (size_t i = 0; i < NLISTS; i++)
        if (named(topic, lists[i].name)) {
            list[i](out);
            return true;
        }
    for (size_t i = 0; i < help_ntopics; i++)
        if (named(topic, help_topics[i].name)) {
            fputs(help_topics[i].text, out);
            return true;
        }
    for (size_t k = 0; k < vm_nnative_modules; k++)
        if (named(topic, vm_native_modules[k].name)) {
            show_module(out, &vm_native_modules[k]);
            return true;
        }
    /* A name can be both a native and a pipeline verb (sort): show each. */
    bool found = false;
    for (size_t i = 0; i < vm_nnatives; i++)
        if (names_native(topic, &vm_natives[i])) {
            fprintf(out, "%s\n", vm_natives[i].help);
            found = true;
        }
    for (size_t i = 0; i < help_nverbs; i++)
        if (named(topic, help_verbs[i].name)) {
            fprintf(out, "%s%s: %s\n", found ? "| " : "", help_verbs[i].usage, help_verbs[i].text);
            found = true;
        }
    for (size_t i = 0; i < QF__COUNT; i++)
        if (named(topic, vm_query_funcs[i].name)) {
            fprintf(out, "%sin a query: %s\n", found ? "| " : "", vm_query_funcs[i].help);
            found = true;
        }
    for (size_t i = 0; i < help_noperators; i++)
        if (among(topic, help_operators[i].name)) {
            fprintf(out, "%s: %s\n", help_operators[i].usage, help_operators[i].text);
            found = true;
        }
    if (found)
        return true;
    for (size_t i = 0; i < meta_ncommands; i++)
        if (named(topic + (topic[0] == '.'), meta_commands[i].name)) {
            fprintf(out, ".%s %s: %s\n", meta_commands[i].name, meta_commands[i].args,
                    meta_commands[i].help);
            return true;
        }
    fprintf(out, "no help on '%s'; .help lists the topics\n", topic);
    return false;
}

void help_names(void (*add)(void *acc, const char *name, size_t len), void *acc)
{
    const HelpEntry *const tables[] = {help_topics, lists, help_verbs};
    const size_t sizes[] = {help_ntopics, NLISTS, help_nverbs};
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < sizes[t]; i++)
            add(acc, tables[t][i].name, strlen(tables[t][i].name));
    for (size_t i = 0; i < vm_nnatives; i++)
        add(acc, vm_natives[i].name, strlen(vm_natives[i].name));
    for (size_t k = 0; k < vm_nnative_modules; k++)
        add(acc, vm_native_modules[k].name, strlen(vm_native_modules[k].name));
    for (size_t i = 0; i < meta_ncommands; i++)
        add(acc, meta_commands[i].name, strlen(meta_commands[i].name));
    for (size_t i = 0; i < QF__COUNT; i++)
        add(acc, vm_query_funcs[i].name, strlen(vm_query_funcs[i].name));
}

/* ---- the reference, in Markdown ---------------------------------------- */

/* n bytes of s for a table cell: '|' escaped (even inside code). */
static void cell_n(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '|')
            fputc('\\', out);
        fputc(s[i], out);
    }
}

/* A table row: | `code` | text | */
static void row(FILE *out, const char *prefix, const char *code, size_t n, const char *text)
{
    fprintf(out, "| `%s", prefix);
    cell_n(out, code, n);
    fputs("` | ", out);
    cell_n(out, text, strlen(text));
    fputs(" |\n", out);
}

/* The natives of module mod (NULL: the globals) as table rows. */
static void native_rows(FILE *out, const char *mod)
{
    fputs("| native | what it does |\n|--------|--------------|\n", out);
    for (size_t i = 0; i < vm_nnatives; i++)
        if (vm_native_in(&vm_natives[i], mod))
            row(out, "", vm_natives[i].help, usage_len(&vm_natives[i]),
                native_text(&vm_natives[i]));
}

void help_reference(FILE *out)
{
    fputs("### Natives\n\n", out);
    native_rows(out, NULL);
    for (size_t k = 0; k < vm_nnative_modules; k++) {
        const VmNativeModule *m = &vm_native_modules[k];
        fprintf(out, "\n### Module %s\n\n`import \"%s\"`: %s.\n\n", m->name, m->name, m->help);
        native_rows(out, m->name);
    }
    fputs("\n### Pipeline verbs\n\n| verb | what it does |\n|------|--------------|\n", out);
    for (size_t i = 0; i < help_nverbs; i++)
        row(out, "", help_verbs[i].usage, strlen(help_verbs[i].usage), help_verbs[i].text);
    fputs("\n### Query functions\n\n| function | what it does |\n|----------|--------------|\n", out);
    for (size_t i = 0; i < QF__COUNT; i++) {
        const char *h = vm_query_funcs[i].help, *sep = strstr(h, ": ");
        size_t n = sep ? (size_t)(sep - h) : strlen(h);
        row(out, "", h, n, sep ? sep + 2 : "");
    }
    fputs("\n### Operators\n\n| operator | what it does |\n|----------|--------------|\n", out);
    for (size_t i = 0; i < help_noperators; i++)
        row(out, "", help_operators[i].usage, strlen(help_operators[i].usage), help_operators[i].text);
    fputs("\n### Prompt commands\n\n| command | what it does |\n|---------|--------------|\n",
          out);
    char name[64];
    for (size_t i = 0; i < meta_ncommands; i++) {
        const MetaCommand *c = &meta_commands[i];
        snprintf(name, sizeof name, ".%s%s", c->name, *c->args ? " " : "");
        row(out, name, c->args, strlen(c->args), c->help);
    }
    fputs("\n### Help topics\n", out);
    for (size_t i = 0; i < help_ntopics; i++)
        fprintf(out, "\n`.help %s`: %s\n\n```text\n%s```\n", help_topics[i].name,
                help_topics[i].usage, help_topics[i].text);
}
