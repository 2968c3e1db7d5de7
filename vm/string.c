/* string: comb's immutable byte strings, their hash, and string building. */
#include "config.h"

#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "vm/vm.h"

/* A concatenation at least this long gets spare room, so that a loop of
 * `s += t` costs amortised O(len(t)) per step instead of copying s. So does
 * a shorter one onto a concatenation's result: then a chain
 * `a + b + c + d` makes one string with room and views into it, not a new
 * string per step (a single `a + b` stays exact: short strings are often
 * kept, as map keys for instance). */
#define CONCAT_ROOM_MIN 64
#define STR_MAX ((size_t)1 << 46)

static VStr *owner_new(VM *vm, size_t cap)
{
    if (cap > STR_MAX)
        vm_error(vm, "string too long (%zu bytes)", cap);
    VStr *s = vm_new_obj(vm, sizeof(VStr) + cap + 1, VT_STR);
    s->data = s->chars;
    s->cap = cap;
    s->len = 0;
    s->used = 0;
    return s;
}

VStr *vm_str_alloc(VM *vm, size_t len)
{
    VStr *s = owner_new(vm, len);
    s->len = s->used = len;
    s->chars[len] = '\0';
    return s;
}

VStr *vm_str_new(VM *vm, const char *p, size_t len)
{
    VStr *s = vm_str_alloc(vm, len);
    if (len)
        memcpy(s->chars, p, len);
    return s;
}

/* The mapping of a mapped string of len bytes starting skip bytes into a
 * page: the file's pages, then one more page, anonymous, so that the byte
 * after the string can be read whatever the file's size (code that
 * checks for a terminating NUL reads it). */
static size_t mapped_span(size_t skip, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (skip + len + page) / page * page;
}

/* A live mapping, held in its string's chars[] (so it goes with the
 * string) and on the list the SIGBUS handler walks: a file truncated while
 * mapped faults on the pages past its new end. */
typedef struct Mapping {
    struct Mapping *prev, *next;
    char *base;
    size_t span;
    volatile sig_atomic_t cut;  /* 1: zeros mapped over the rest; 2: raised */
    char name[];                /* the file's, for the error */
} Mapping;

static Mapping *live;
static size_t page_size;        /* sysconf is not for a signal handler */
static struct sigaction bus_before;
/* the name of a cut mapping collected before its error was raised */
static char cut_gone[512];

/* A fault inside a live mapping: zeros over the rest of it, so that the read
 * goes on, and the VM told (it raises at its next poll). Any other: as if
 * never caught (the handler before, or the default, on the same fault). */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char *a = si->si_addr;
    for (Mapping *m = live; m; m = m->next) {
        if (a < m->base || a >= m->base + m->span)
            continue;
        char *from = m->base + (size_t)(a - m->base) / page_size * page_size;
        if (mmap(from, (size_t)(m->base + m->span - from), PROT_READ,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
            break;
        m->cut = 1;
        vm_poll_flag |= POLL_CUT;
        return;
    }
    sigaction(SIGBUS, &bus_before, NULL);
    if (si->si_code <= 0)   /* sent, not a fault that returning repeats */
        raise(sig);
}

/* Installs on_sigbus unless it is the handler now (something, a test
 * harness for one, may have set another since). */
static void install_sigbus(void)
{
    struct sigaction sa;
    if (sigaction(SIGBUS, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) &&
        sa.sa_sigaction == on_sigbus)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);     /* its handler also sets vm_poll_flag */
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    sigaction(SIGBUS, &sa, &bus_before);
}

VStr *vm_str_mapped(VM *vm, int fd, uint64_t at, size_t len, const VStr *name)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), skip = (size_t)(at % page);
    if (len == 0 || len > STR_MAX)
        return NULL;
    _Static_assert(offsetof(VStr, chars) % _Alignof(Mapping) == 0, "a Mapping fits chars[]");
    /* first a string holding the record (so that a failure leaves garbage
     * the collector can free), then its bytes mapped */
    VStr *s = vm_str_alloc(vm, sizeof(Mapping) + name->len);
    Mapping *m = (Mapping *)(void *)s->chars;
    memcpy(m->name, name->data, name->len);
    m->name[name->len] = '\0';
    s->len = s->used = 0;
    size_t span = mapped_span(skip, len);
    char *base = mmap(NULL, span, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    if (mmap(base, skip + len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, (off_t)(at - skip)) ==
        MAP_FAILED) {
        munmap(base, span);
        return NULL;
    }
    install_sigbus();
    m->base = base;
    m->span = span;
    m->cut = 0;
    m->prev = NULL;
    m->next = live;
    if (live)
        live->prev = m;
    live = m;
    s->hdr.flags = STR_MAPPED;
    s->data = base + skip;
    s->len = len;
    vm_count_outside(vm, span, true);
    return s;
}

void vm_str_unmap(VM *vm, VStr *s)
{
    Mapping *m = (Mapping *)(void *)s->chars;
    if (m->prev)
        m->prev->next = m->next;
    else
        live = m->next;
    if (m->next)
        m->next->prev = m->prev;
    if (m->cut == 1)    /* collected before the poll that raises it: kept for that */
        snprintf(cut_gone, sizeof cut_gone, "%s", m->name);
    munmap(m->base, m->span);
    vm_count_outside(vm, m->span, false);
}

void vm_str_raise_cut(VM *vm)
{
    vm_poll_flag &= ~POLL_CUT;
    Mapping *first = NULL;
    for (Mapping *m = live; m; m = m->next)
        if (m->cut == 1) {
            if (first) {
                vm_poll_flag |= POLL_CUT;   /* the next poll raises this one */
                break;
            }
            first = m;
        }
    if (first) {
        first->cut = 2;
        vm_error(vm, "cannot read '%s': changed size while being read", first->name);
    }
    if (cut_gone[0]) {
        char name[sizeof cut_gone];
        memcpy(name, cut_gone, sizeof name);
        cut_gone[0] = '\0';
        vm_error(vm, "cannot read '%s': changed size while being read", name);
    }
}

VStr *vm_str_cstr(VM *vm, const char *c)
{
    return vm_str_new(vm, c, strlen(c));
}

VStr *vm_str_concat(VM *vm, VStr *a, VStr *b)
{
    if (b->len == 0)
        return a;
    if (a->len == 0)
        return b;
    size_t n = a->len + b->len;
    VStr *o = str_owner(a);
    if (o->used == a->len && o->cap >= n) {
        /* b may be a view of o too, but ends at or before a's end, so the
         * bytes it reads are never the ones written here. */
        memmove(o->chars + a->len, b->data, b->len);
        o->chars[n] = '\0';
        o->used = n;
        VStr *v = vm_new_obj(vm, sizeof(VStr), VT_STR);
        v->hdr.flags = STR_VIEW | STR_CAT;
        v->data = o->chars;
        v->len = n;
        v->cap = v->used = 0;
        return v;
    }
    VStr *s = owner_new(vm, n >= CONCAT_ROOM_MIN || (a->hdr.flags & STR_CAT) ? 2 * n : n);
    s->hdr.flags = STR_CAT;
    memcpy(s->chars, a->data, a->len);
    memcpy(s->chars + a->len, b->data, b->len);
    s->chars[n] = '\0';
    s->len = s->used = n;
    return s;
}

uint32_t str_hash(VStr *s)
{
    if (!s->hdr.hash) {
        uint32_t h = (uint32_t)XXH3_64bits(s->data, s->len);
        s->hdr.hash = h ? h : 1;
    }
    return s->hdr.hash;
}

bool str_equal(const VStr *a, const VStr *b)
{
    if (a == b)
        return true;
    if (a->len != b->len)
        return false;
    if (a->hdr.hash && b->hdr.hash && a->hdr.hash != b->hdr.hash)
        return false;
    return memcmp(a->data, b->data, a->len) == 0;
}

int str_compare(const VStr *a, const VStr *b)
{
    return ops_cmp_bytes(a->data, a->len, b->data, b->len);
}

bool str_eq_cstr(const VStr *s, const char *c)
{
    size_t n = strlen(c);
    return s->len == n && memcmp(s->data, c, n) == 0;
}

/* ---- building --------------------------------------------------------- */

void vm_sb_init(VM *vm, VStrBuf *sb, size_t hint)
{
    sb->s = owner_new(vm, hint < 16 ? 16 : hint);
}

static char *sb_room(VM *vm, VStrBuf *sb, size_t n)
{
    VStr *s = sb->s;
    if (s->cap - s->len < n) {
        size_t cap = s->cap * 2;
        if (cap < s->len + n)
            cap = s->len + n;
        VStr *t = owner_new(vm, cap);
        memcpy(t->chars, s->chars, s->len);
        t->len = s->len;
        sb->s = s = t;
    }
    return s->chars + s->len;
}

void vm_sb_add(VM *vm, VStrBuf *sb, const char *p, size_t n)
{
    if (!n)
        return;
    memcpy(sb_room(vm, sb, n), p, n);
    sb->s->len += n;
}

void vm_sb_addc(VM *vm, VStrBuf *sb, const char *c)
{
    vm_sb_add(vm, sb, c, strlen(c));
}

void vm_sb_printf(VM *vm, VStrBuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    char *p = sb_room(vm, sb, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->s->len += (size_t)n;
}

VStr *vm_sb_done(VM *vm, VStrBuf *sb)
{
    (void)vm;
    VStr *s = sb->s;
    s->used = s->len;
    s->chars[s->len] = '\0';
    sb->s = NULL;
    return s;
}
