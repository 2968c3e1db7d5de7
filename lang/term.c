/* term: what the prompt asks of the terminal: colour, size, the pager. */
#include "config.h"
#include "lang/term.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lang/table.h"


bool term_color(int fd)
{
    const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
    if (no && *no)
        return false;
    if (term && !strcmp(term, "dumb"))
        return false;
    return isatty(fd);
}

bool term_size(int fd, int *rows, int *cols)
{
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) || ws.ws_row == 0 || ws.ws_col == 0)
        return false;
    *rows = ws.ws_row;
    *cols = ws.ws_col;
    return true;
}

/* The columns of a line, not counting colour escapes (ESC [ ... m). */
static size_t visible_width(const char *p, size_t n)
{
    size_t w = 0;
    const char *end = p + n;
    while (p < end) {
        const char *esc = memchr(p, '\033', (size_t)(end - p));
        const char *stop = esc ? esc : end;
        w += table_text_width(p, (size_t)(stop - p));
        if (!esc)
            break;
        const char *m = memchr(esc, 'm', (size_t)(end - esc));
        p = m ? m + 1 : end;
    }
    return w;
}

/* Whether text fits on the screen: fewer screen lines than rows (the
 * prompt needs one), a line wider than cols taking as many as it wraps to.
 * A wide line alone is no reason to page: the pager would wait at its end. */
static bool fits(const char *text, size_t len, int rows, int cols)
{
    size_t lines = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        size_t w = visible_width(p, (size_t)(e - p));
        lines += w > (size_t)cols ? (w + (size_t)cols - 1) / (size_t)cols : 1;
        if (lines >= (size_t)rows)
            return false;
        p = nl ? nl + 1 : end;
    }
    return true;
}

static void to_pager(const char *cmd, const char *text, size_t len)
{
    fflush(stdout);
    FILE *pipe = popen(cmd, "w");
    if (!pipe) {
        fwrite(text, 1, len, stdout);
        return;
    }
    /* Quitting the pager early closes the pipe: that is not an error. */
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old);
    fwrite(text, 1, len, pipe);
    pclose(pipe);
    sigaction(SIGPIPE, &old, NULL);
}

void term_page(const char *text, size_t len, bool terminal, bool chop)
{
    int rows, cols;
    const char *pager = getenv("PAGER");
    if (!pager)
        pager = chop ? TERM_DEFAULT_PAGER : TERM_WRAP_PAGER;
    if (!terminal || !*pager || !term_size(1, &rows, &cols) || fits(text, len, rows, cols)) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
        return;
    }
    to_pager(pager, text, len);
}
