/* progress: a progress bar on stderr for statements that scan for long. */
#include "config.h"
#include "vm/progress.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define BAR_MIN 10      /* columns of the bar itself, at least */
#define ECHO_ROOM 3     /* columns left free at the end of the line */

static double monotonic(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct {
    bool enabled;
    FILE *out;                  /* NULL: stderr */
    double (*clock)(void);
    int width;
    char what[32];
    uint64_t parts, blocks, bytes;          /* totals */
    _Atomic uint64_t parts_done, blocks_done, bytes_done;
    _Atomic bool active;
    atomic_flag drawing;        /* held by the one thread drawing */
    double start, last;         /* written under drawing (start: before active) */
    bool drawn;
} pg = {.clock = monotonic, .drawing = ATOMIC_FLAG_INIT};

void vm_progress_setup(FILE *out, double (*clock)(void), int width)
{
    pg.out = out;
    pg.clock = clock ? clock : monotonic;
    pg.width = width;
}

void vm_progress_enable(bool on)
{
    pg.enabled = on;
}

static FILE *out(void)
{
    return pg.out ? pg.out : stderr;
}

bool vm_progress_enabled(void) { return pg.enabled; }

void vm_progress_begin(const char *what, uint64_t parts, uint64_t blocks, uint64_t bytes)
{
    if (!pg.enabled)
        return;
    snprintf(pg.what, sizeof pg.what, "%s", what);
    pg.parts = parts;
    pg.blocks = blocks;
    pg.bytes = bytes;
    atomic_store(&pg.parts_done, 0);
    atomic_store(&pg.blocks_done, 0);
    atomic_store(&pg.bytes_done, 0);
    pg.start = pg.last = pg.clock();
    pg.drawn = false;
    atomic_store(&pg.active, true);
}

static int columns(void)
{
    struct winsize ws;
    if (pg.width)
        return pg.width;
    if (!ioctl(fileno(out()), TIOCGWINSZ, &ws) && ws.ws_col)
        return ws.ws_col;
    return 80;
}

/* How far along, 0..1, by the finest total known; -1 if none is. */
static double fraction(uint64_t parts, uint64_t blocks, uint64_t bytes)
{
    if (pg.bytes)
        return (double)bytes / (double)pg.bytes;
    if (pg.blocks)
        return (double)blocks / (double)pg.blocks;
    if (pg.parts)
        return (double)parts / (double)pg.parts;
    return -1;
}

static void add_count(char *buf, size_t size, uint64_t done, uint64_t total, const char *unit)
{
    size_t n = strlen(buf);
    if (total)
        snprintf(buf + n, size - n, "  %llu/%llu %s", (unsigned long long)done,
                 (unsigned long long)total, unit);
    else if (done)
        snprintf(buf + n, size - n, "  %llu %s", (unsigned long long)done, unit);
}

/* done, never shown above a known total (a file read twice, a scan that
 * reads more than it planned: the bar says how far, not what it counted). */
static uint64_t at_most(uint64_t done, uint64_t total)
{
    return total && done > total ? total : done;
}

static void draw(double now)
{
    uint64_t parts = at_most(atomic_load(&pg.parts_done), pg.parts),
             blocks = at_most(atomic_load(&pg.blocks_done), pg.blocks),
             bytes = at_most(atomic_load(&pg.bytes_done), pg.bytes);
    double elapsed = now - pg.start, f = fraction(parts, blocks, bytes);
    char tail[160] = "";
    add_count(tail, sizeof tail, parts, pg.parts, "parts");
    add_count(tail, sizeof tail, blocks, pg.blocks, "blocks");
    size_t n = strlen(tail);
    snprintf(tail + n, sizeof tail - n, "  %.1f MB/s", (double)bytes / 1e6 / elapsed);
    if (f > 0) {
        long eta = (long)(elapsed * (1 - (f > 1 ? 1 : f)) / f + 0.5);
        n = strlen(tail);
        snprintf(tail + n, sizeof tail - n, "  ETA %ld:%02ld", eta / 60, eta % 60);
    }
    /* Short of the last columns: a line that fills the screen leaves the
     * cursor waiting to wrap, and the "^C" the terminal echoes would push
     * the bar up a line, out of reach of vm_progress_clear's \r. */
    int bar = columns() - ECHO_ROOM - (int)strlen(pg.what) - (int)strlen(tail) - 3;
    if (bar < BAR_MIN)
        bar = BAR_MIN;
    int filled = f < 0 ? 0 : f > 1 ? bar : (int)(f * bar);
    FILE *o = out();
    fprintf(o, "\r%s [", pg.what);
    for (int i = 0; i < bar; i++)
        fputc(i < filled ? '#' : '.', o);
    fprintf(o, "]%s\033[K", tail);
    fflush(o);
    pg.drawn = true;
}

void vm_progress_add(uint64_t parts, uint64_t blocks, uint64_t bytes)
{
    if (!atomic_load(&pg.active))
        return;
    atomic_fetch_add(&pg.parts_done, parts);
    atomic_fetch_add(&pg.blocks_done, blocks);
    atomic_fetch_add(&pg.bytes_done, bytes);
    if (atomic_flag_test_and_set(&pg.drawing))
        return;     /* another thread is drawing */
    double now = pg.clock();
    if (atomic_load(&pg.active) && now - pg.start >= VM_PROGRESS_DELAY &&
        (!pg.drawn || now - pg.last >= VM_PROGRESS_EVERY)) {
        pg.last = now;
        draw(now);
    }
    atomic_flag_clear(&pg.drawing);
}

void vm_progress_clear(void)
{
    if (!atomic_exchange(&pg.active, false))
        return;
    while (atomic_flag_test_and_set(&pg.drawing))
        ;   /* a worker is drawing: it is nearly done */
    if (pg.drawn) {
        fputs("\r\033[K", out());
        fflush(out());
    }
    pg.drawn = false;
    atomic_flag_clear(&pg.drawing);
}
