/* main: comb's command line; parses options and hands off to the right front end. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "lang/cmd_store.h"
#include "lang/paths.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: comb [options] [FILE [ARGS...]]\n"
            "\n"
            "comb is a query language, bytecode VM and prompt for stores of tagsets.\n"
            "\n"
            "options:\n"
            "  -h, --help        show this help and exit\n"
            "  -V, --version     show the version and exit\n"
            "\n"
            "stdlib: %s\n",
            paths_stdlib());
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "store"))
        return cmd_store(argc - 1, argv + 1);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("comb %s\n", PACKAGE_VERSION);
            return 0;
        }
        fprintf(stderr, "comb: unknown argument '%s'\n", a);
        usage(stderr);
        return 2;
    }
    usage(stderr);
    return 2;
}
