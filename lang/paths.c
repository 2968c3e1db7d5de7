/* paths: where comb finds its stdlib, installed or run from the build tree. */
#include "config.h"
#include "lang/paths.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* True when the running executable is the uninstalled one in the build tree:
 * then the stdlib is read from the source tree, so edits show at once. */
static int running_uninstalled(void)
{
    char self[PATH_MAX], built[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0)
        return 0;
    self[n] = '\0';
    if (!realpath(COMB_BUILD_DIR, built))
        return 0;
    size_t len = strlen(built);
    return strncmp(self, built, len) == 0 && self[len] == '/' && !strchr(self + len + 1, '/');
}

const char *paths_stdlib(void)
{
    const char *env = getenv("COMB_STDLIB");
    if (env && *env)
        return env;
    return running_uninstalled() ? COMB_SRC_STDLIB : COMB_INSTALLED_STDLIB;
}
