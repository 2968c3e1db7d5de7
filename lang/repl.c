/* repl: comb's interactive prompt on GNU Readline, and batch input.
 *
 * Readline runs in its callback mode: the prompt waits in ppoll() with
 * SIGINT and SIGWINCH unblocked only there, so Ctrl-C while typing clears
 * the line at once, and during a statement the same SIGINT sets the VM's
 * interrupt flag (vm_install_sigint) and the statement stops. */
#include "config.h"
#include "lang/repl.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "lang/complete.h"
#include "lang/multiline.h"
#include "lang/session.h"
#include "lang/text.h"
#include "vm/progress.h"

#define PROMPT "comb> "
#define PROMPT_MORE "  ..> "
#define WORD_BREAKS " \t\n\"'`@$><=;|&{(,[+*%!~:)]}"

/* Readline's state is global, and so is the prompt's. */
static struct {
    Session *s;
    Text pending;           /* the lines of the statement being typed */
    Text last;              /* the statement that ran last, for a line starting with '|' */
    RunStatus why;          /* why it goes on: RUN_MORE or RUN_MORE_EOF */
    char *line;             /* what readline's callback got; NULL at the end */
    bool got_line;
    bool asking;            /* a question is asked: Ctrl-C answers no */
    char history[4096];     /* the history file; empty: none */
    int appended;           /* entries appended since the file was rewritten */
    bool history_warned;    /* said once that the file cannot be written */
    CompleteList matches;   /* for readline's generator */
    size_t next_match;
} rp;

static volatile sig_atomic_t winched;

static void on_winch(int sig)
{
    (void)sig;
    winched = 1;
}

/* ---- history ---------------------------------------------------------- */

static void history_start(void)
{
    const char *env = getenv("COMB_HISTORY"), *home = getenv("HOME");
    if (env)
        snprintf(rp.history, sizeof rp.history, "%s", env);
    else if (home && *home)
        snprintf(rp.history, sizeof rp.history, "%s/.comb_history", home);
    using_history();
    /* A timestamp line starts each entry, so a statement of several lines
     * reads back as one entry. */
    history_comment_char = '#';
    history_write_timestamps = 1;
    history_multiline_entries = 1;
    if (!*rp.history)
        return;
    read_history(rp.history);
    if (history_length > REPL_HISTORY_MAX) {
        stifle_history(REPL_HISTORY_MAX);
        write_history(rp.history);
    }
    stifle_history(REPL_HISTORY_MAX);
    int fd = open(rp.history, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0)
        close(fd);      /* append_history needs the file to exist */
}

/* A whole statement: one history entry, in the file at once. */
static void remember(const char *src, size_t len)
{
    Text entry = {0};
    while (len && (src[len - 1] == '\n' || src[len - 1] == '\r'))
        len--;
    if (!len || text_add(&entry, src, len))
        return;
    HIST_ENTRY *last = history_length ? history_get(history_base + history_length - 1) : NULL;
    if (!last || strcmp(last->line, entry.p)) {
        add_history(entry.p);
        int err = 0;
        if (*rp.history && ++rp.appended >= REPL_HISTORY_MAX) {
            err = write_history(rp.history);    /* keeps the file bounded */
            rp.appended = 0;
        } else if (*rp.history) {
            err = append_history(1, rp.history);
        }
        if (err && !rp.history_warned) {
            fprintf(stderr, "comb: cannot write the history to %s: %s\n", rp.history,
                    strerror(err));
            rp.history_warned = true;
        }
    }
    text_free(&entry);
}

/* ---- completion ------------------------------------------------------- */

static char *next_match(const char *text, int state)
{
    (void)text;
    if (!state)
        rp.next_match = 0;
    if (rp.next_match >= rp.matches.n)
        return NULL;
    const char *m = rp.matches.items[rp.next_match++];
    /* Readline frees the matches with free(): they must come from malloc. */
    size_t n = strlen(m) + 1;
    char *copy = malloc(n);
    if (copy)
        memcpy(copy, m, n);
    return copy;
}

static char **attempt_completion(const char *text, int start, int end)
{
    (void)end;
    rl_attempted_completion_over = 1;   /* no file names unless asked for */
    Text before = {0};
    if ((rp.pending.len && text_add(&before, rp.pending.p, rp.pending.len)) ||
        text_add(&before, rl_line_buffer, (size_t)start))
        return NULL;
    CompleteContext ctx = complete_context(rp.s->vm, before.p, before.len, text);
    char **m = NULL;
    if (ctx.kind == COMPLETE_FILE) {
        m = rl_completion_matches(text, rl_filename_completion_function);
    } else {
        complete_free(&rp.matches);
        if (!complete_candidates(rp.s, &ctx, text, &rp.matches))
            m = rl_completion_matches(text, next_match);
    }
    text_free(&before);
    return m;
}

/* ---- reading ---------------------------------------------------------- */

static void on_line(char *line)
{
    rp.line = line;
    rp.got_line = true;
    rl_callback_handler_remove();   /* readline rests while the statement runs */
}

/* Ctrl-C while typing: drop the line and the statement it belongs to. */
static void clear_input(void)
{
    rp.pending.len = 0;
    rl_callback_sigcleanup();
    rl_crlf();      /* leave what was typed on the screen, as a shell does */
    rl_replace_line("", 0);
    rl_point = rl_mark = 0;
    rl_set_prompt(PROMPT);
    rl_on_new_line();
    rl_redisplay();
}

/* A line being typed that starts with '|' goes on with the statement
 * before it: the prompt says so as soon as the '|' arrives. */
static void prompt_follows_line(void)
{
    const char *p = rl_line_buffer;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '|' && strcmp(rl_prompt, PROMPT) == 0) {
        rl_set_prompt(PROMPT_MORE);
        rl_forced_update_display();
    }
}

/* ppoll returns input that is ready without delivering a signal that came
 * before it (a Ctrl-C and the keys after it, all there when comb next
 * runs): such signals are taken first, so those keys are not read as typed
 * before the Ctrl-C. Whether one was. */
static bool take_signals(const sigset_t *orig, const sigset_t *block)
{
    sigset_t pending;
    if (sigpending(&pending) || (!sigismember(&pending, SIGINT) && !sigismember(&pending, SIGWINCH)))
        return false;
    sigprocmask(SIG_SETMASK, orig, NULL);
    sigprocmask(SIG_BLOCK, block, NULL);
    return true;
}

/* The next line typed (readline's, to free()), or NULL at the end. After a
 * statement (follows), the prompt is the statement prompt until the line
 * shows it continues the one before. */
static char *read_line(const char *prompt, bool follows)
{
    sigset_t block, orig;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGWINCH);
    sigprocmask(SIG_BLOCK, &block, &orig);
    /* A Ctrl-C that came after the last statement ran is spent; one that
     * came while an unfinished statement was read drops that statement. */
    if (!rp.pending.len)
        vm_poll_flag &= ~POLL_SIGINT;
    rp.got_line = false;
    rp.line = NULL;
    rl_callback_handler_install(prompt, on_line);
    struct pollfd pfd = {fileno(rl_instream), POLLIN, 0};
    while (!rp.got_line) {
        if (vm_poll_flag & POLL_SIGINT) {
            vm_poll_flag &= ~POLL_SIGINT;
            if (rp.asking) {
                rl_callback_sigcleanup();
                rl_crlf();
                rl_callback_handler_remove();
                break;
            }
            clear_input();
        }
        if (winched) {
            winched = 0;
            rl_resize_terminal();
        }
        int n = ppoll(&pfd, 1, NULL, &orig);
        if (n > 0 && take_signals(&orig, &block))
            continue;
        if (n > 0) {
            rl_callback_read_char();
            if (follows && !rp.got_line)
                prompt_follows_line();
        } else if (n < 0 && errno != EINTR) {
            rl_callback_handler_remove();
            break;
        }
    }
    sigprocmask(SIG_SETMASK, &orig, NULL);
    return rp.line;
}

/* Session's ask: a line typed in answer; y or yes is yes (Ctrl-C, Ctrl-D:
 * no). */
static bool ask(const char *question)
{
    rp.asking = true;
    char *line = read_line(question, false);
    rp.asking = false;
    bool yes = line && (!strcmp(line, "y") || !strcmp(line, "yes"));
    free(line);
    return yes;
}

static void readline_setup(Session *s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_winch;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, NULL);
    rl_readline_name = "comb";
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_attempted_completion_function = attempt_completion;
    rl_completer_word_break_characters = WORD_BREAKS;
    rl_completer_quote_characters = "\"";
    rp.s = s;
    s->ready = remember;
    s->ask = ask;
}

/* Adds a line (and its newline) to the statement; false out of memory. */
static bool add_line(const char *line)
{
    if (!text_add(&rp.pending, line, strlen(line)) && !text_add(&rp.pending, "\n", 1))
        return true;
    fprintf(stderr, "comb: out of memory\n");
    rp.pending.len = 0;
    return false;
}

/* Whether more input comes at once: pasted lines (a person types the next
 * line much later than PASTE_MS after the Enter). */
#define PASTE_MS 25
static bool input_waiting(void)
{
    struct pollfd pfd = {fileno(rl_instream), POLLIN, 0};
    return poll(&pfd, 1, PASTE_MS) > 0;
}

/* A line starting with '|' typed after a statement ran continues it, as in
 * a file: the statement runs again with the verbs added. False out of
 * memory. */
static bool continue_last(void)
{
    if (!rp.last.len)
        return true;
    rp.pending.len = 0;
    if (!text_add(&rp.pending, rp.last.p, rp.last.len))
        return true;
    rp.pending.len = 0;
    fprintf(stderr, "comb: out of memory\n");
    return false;
}

static void interactive(Session *s)
{
    /* With results going to a file, the prompt and echo stay on the screen. */
    rl_outstream = isatty(1) ? stdout : stderr;
    fprintf(rl_outstream, "comb %s: .help for help, Ctrl-D to leave\n", PACKAGE_VERSION);
    history_start();
    readline_setup(s);
    char *line, *held = NULL;
    bool eof = false;
    while (!s->quit && (line = held ? held : read_line(rp.pending.len ? PROMPT_MORE : PROMPT, false))) {
        held = NULL;
        bool empty = text_blank(line, strlen(line));
        /* An empty line ends a statement the compiler was waiting on. */
        bool final = rp.pending.len && empty && rp.why == RUN_MORE_EOF;
        char what[128];
        if (rp.pending.len && empty && rp.why == RUN_MORE &&
            ml_what_open(s->vm, rp.pending.p, rp.pending.len, what, sizeof what))
            fprintf(stderr, "(still open: %s; close it, or Ctrl-C to drop the statement)\n", what);
        if (!rp.pending.len && text_pipes_on(line, strlen(line)) && !continue_last()) {
            free(line);
            continue;
        }
        bool added = (!empty || rp.pending.len) && add_line(line);
        free(line);
        if (!added)
            continue;
        /* Pasted lines: one starting with '|' goes on with this statement. */
        while (text_lead(rp.pending.p, rp.pending.len) != '.' && input_waiting()) {
            char open[128];
            bool inside = ml_what_open(s->vm, rp.pending.p, rp.pending.len, open, sizeof open);
            if (!(held = read_line(inside ? PROMPT_MORE : PROMPT, !inside)))
                eof = true;
            if (!held || !text_pipes_on(held, strlen(held)))
                break;
            bool ok = add_line(held);
            free(held);
            held = NULL;
            if (!ok)
                break;
        }
        RunStatus st = session_run(s, rp.pending.p, rp.pending.len, 1, final);
        if (st == RUN_MORE || st == RUN_MORE_EOF) {
            rp.why = st;
        } else {
            rp.last.len = 0;
            if (text_lead(rp.pending.p, rp.pending.len) != '.' && text_add(&rp.last, rp.pending.p, rp.pending.len))
                rp.last.len = 0;
            rp.pending.len = 0;
        }
        if (eof)
            break;
    }
    free(held);
    if (!s->quit)
        fputc('\n', rl_outstream);
    s->ready = NULL;
    s->ask = NULL;
}

static int exit_status(RunStatus st)
{
    return st == RUN_OK ? 0 : st == RUN_INTERRUPTED ? 130 : 1;
}

static void run_rc(Session *s)
{
    const char *home = getenv("HOME");
    char path[4096];
    if (!home || !*home)
        return;
    snprintf(path, sizeof path, "%s/.combrc", home);
    session_run_file(s, path, true);
}

int repl_main(VM *vm, const ReplOptions *o)
{
    bool tty = isatty(0);
    Session s;
    if (session_init(&s, vm, tty ? "<prompt>" : "<stdin>", tty && isatty(1))) {
        fprintf(stderr, "comb: out of memory\n");
        return 1;
    }
    if (!tty) {     /* a batch: no prompt, no colour */
        s.color = s.color_err = false;
        s.mode = isatty(1) ? TABLE_ALIGNED : TABLE_TSV;
    }
    vm_progress_enable(isatty(2));
    int status = 0;
    if (o->store_dir && session_bind_store(&s, o->store_dir))
        return 1;
    if (!o->norc)
        run_rc(&s);
    if (s.quit)
        return 0;
    if (tty) {
        setlocale(LC_CTYPE, "");    /* readline reads UTF-8 as characters */
        interactive(&s);
    } else {
        status = exit_status(session_run_stream(&s, stdin, "<stdin>"));
    }
    if (!session_output_close(&s) && !status)
        status = 1;
    text_free(&rp.pending);
    text_free(&rp.last);
    complete_free(&rp.matches);
    return status;
}
