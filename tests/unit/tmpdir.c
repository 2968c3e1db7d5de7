/* tmpdir: scratch directories for the store's unit tests. */
#include "config.h"
#include "tests/unit/tmpdir.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/mem.h"
#include "store/sysio.h"

void tmp_make(const char *tag, char *path)
{
    const char *t = getenv("TMPDIR");
    snprintf(path, PATH_MAX, "%s/comb-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    if (!mkdtemp(path)) {
        perror(path);
        abort();
    }
}

static int nfiles, ndir;

static int count_one(const char *p, const struct stat *sb, int type, struct FTW *f)
{
    (void)p, (void)sb;
    if (type == FTW_F || type == FTW_SL)
        nfiles++;
    else if (f->level > 0)
        ndir++;
    return 0;
}

int tmp_count(const char *dir, int *ndirs)
{
    nfiles = ndir = 0;
    nftw(dir, count_one, 16, FTW_PHYS);
    if (ndirs)
        *ndirs = ndir;
    return nfiles;
}

static int remove_one(const char *p, const struct stat *sb, int type, struct FTW *f)
{
    (void)sb, (void)type, (void)f;
    remove(p);
    return 0;
}

void tmp_remove(const char *dir)
{
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tmp_reset(const char *dir)
{
    st_sys_fail_reset();
    mem_fail_after(0);
    tmp_remove(dir);
}
