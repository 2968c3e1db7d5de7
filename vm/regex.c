/* regex: PCRE2 regular expressions as native handles, for `~` and natives. */
#include "config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "store/mem.h"
#include "vm/regex.h"

#define RE_CACHE_MAX 64

typedef struct Regex {
    pcre2_code *code;
    pcre2_match_data *md;
    VStr *src;
    bool jit;
    char flags[8];
} Regex;

/* PCRE2 frees without a size; mem_free wants one, kept before the block. */
#define RE_HDR 16

static void *re_malloc(PCRE2_SIZE size, void *ud)
{
    (void)ud;
    char *p = mem_alloc(size + RE_HDR);
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    return p + RE_HDR;
}

static void re_free(void *q, void *ud)
{
    (void)ud;
    if (!q)
        return;
    char *p = (char *)q - RE_HDR;
    PCRE2_SIZE size;
    memcpy(&size, p, sizeof size);
    mem_free(p, size + RE_HDR);
}

bool vm_regex_init(VM *vm)
{
    vm->re_gctx = pcre2_general_context_create(re_malloc, re_free, NULL);
    if (!vm->re_gctx)
        return false;
    vm->re_cctx = pcre2_compile_context_create(vm->re_gctx);
    vm->re_mctx = pcre2_match_context_create(vm->re_gctx);
    return vm->re_cctx && vm->re_mctx;
}

void vm_regex_fini(VM *vm)
{
    pcre2_match_context_free(vm->re_mctx);
    pcre2_compile_context_free(vm->re_cctx);
    pcre2_general_context_free(vm->re_gctx);
    vm->re_gctx = vm->re_cctx = vm->re_mctx = NULL;
}

static void regex_free(VM *vm, void *data)
{
    (void)vm;
    Regex *r = data;
    pcre2_match_data_free(r->md);
    pcre2_code_free(r->code);
}

static void regex_mark(VM *vm, void *data)
{
    Regex *r = data;
    if (r->src)
        vm_mark_obj(vm, &r->src->hdr);
}

static void regex_show(VM *vm, void *data, VStrBuf *sb)
{
    Regex *r = data;
    vm_sb_add(vm, sb, "/", 1);
    vm_sb_add(vm, sb, r->src->data, r->src->len);
    vm_sb_add(vm, sb, "/", 1);
    vm_sb_addc(vm, sb, r->flags);
}

const VHandleType vm_regex_type = {
    .name = "regex",
    .free = regex_free,
    .mark = regex_mark,
    .show = regex_show,
};

static bool parse_flags(const char *flags, uint32_t *opts, char *err, size_t errsize)
{
    *opts = 0;
    if (strlen(flags) >= sizeof ((Regex *)0)->flags) {
        snprintf(err, errsize, "too many regex flags");
        return false;
    }
    for (const char *f = flags; *f; f++) {
        switch (*f) {
        case 'i': *opts |= PCRE2_CASELESS; break;
        case 'm': *opts |= PCRE2_MULTILINE; break;
        case 's': *opts |= PCRE2_DOTALL; break;
        case 'x': *opts |= PCRE2_EXTENDED; break;
        default:
            snprintf(err, errsize, "unknown regex flag '%c'", *f);
            return false;
        }
    }
    return true;
}

VHandle *vm_regex_new(VM *vm, const char *pat, size_t len, const char *flags, char *err,
                      size_t errsize)
{
    uint32_t opts;
    if (!parse_flags(flags, &opts, err, errsize))
        return NULL;
    /* The handle first, so a failure below leaves only garbage behind. */
    VStr *src = vm_str_new(vm, pat, len);
    VHandle *h = vm_handle_new(vm, &vm_regex_type, sizeof(Regex));
    Regex *r = handle_data(h);
    r->src = src;
    strcpy(r->flags, flags);
    int code;
    PCRE2_SIZE off;
    r->code = pcre2_compile((PCRE2_SPTR)pat, len, opts, &code, &off, vm->re_cctx);
    if (!r->code) {
        PCRE2_UCHAR msg[120];
        pcre2_get_error_message(code, msg, sizeof msg);
        snprintf(err, errsize, "invalid regex: %s at offset %zu", (char *)msg, (size_t)off);
        return NULL;
    }
    r->jit = pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
    r->md = pcre2_match_data_create_from_pattern(r->code, vm->re_gctx);
    if (!r->md)
        vm_throw(vm, v_obj(vm->oom));
    return h;
}

void *vm_regex_code(VHandle *re)
{
    return ((Regex *)handle_data(re))->code;
}

bool vm_regex_find(VM *vm, VHandle *re, const char *s, size_t len, size_t start, size_t *ms,
                   size_t *me)
{
    Regex *r = handle_data(re);
    int rc = r->jit ? pcre2_jit_match(r->code, (PCRE2_SPTR)s, len, start, 0, r->md, vm->re_mctx)
                    : pcre2_match(r->code, (PCRE2_SPTR)s, len, start, 0, r->md, vm->re_mctx);
    if (rc >= 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
        *ms = ov[0];
        *me = ov[1] < ov[0] ? ov[0] : ov[1];   /* \K in a lookahead can end before the start */
        return true;
    }
    if (rc == PCRE2_ERROR_NOMATCH)
        return false;
    PCRE2_UCHAR msg[120];
    pcre2_get_error_message(rc, msg, sizeof msg);
    vm_error(vm, "regex match failed: %s", (char *)msg);
}

bool vm_regex_match(VM *vm, VHandle *re, const char *s, size_t len)
{
    size_t ms, me;
    return vm_regex_find(vm, re, s, len, 0, &ms, &me);
}

static VHandle *cached(VM *vm, VStr *pat)
{
    Value hit;
    if (vm_map_get(vm, vm->re_cache, v_obj(pat), &hit))
        return AS_HANDLE(hit);
    char err[200];
    VHandle *h = vm_regex_new(vm, pat->data, pat->len, "", err, sizeof err);
    if (!h)
        vm_error(vm, "%s", err);
    if (vm->re_cache->live >= RE_CACHE_MAX)
        vm->re_cache = vm_map_new(vm, RE_CACHE_MAX);
    vm_map_set(vm, vm->re_cache, v_obj(pat), v_obj(h));
    return h;
}

bool vm_match(VM *vm, Value subject, Value pattern)
{
    VHandle *re;
    if (IS_HANDLE(pattern) && AS_HANDLE(pattern)->type == &vm_regex_type)
        re = AS_HANDLE(pattern);
    else if (IS_STR(pattern))
        re = cached(vm, AS_STR(pattern));
    else
        vm_error(vm, "cannot apply '~' to %s and %s", v_type_name(subject), v_type_name(pattern));
    if (IS_STR(subject))
        return vm_regex_match(vm, re, AS_STR(subject)->data, AS_STR(subject)->len);
    if (IS_INT(subject)) {
        /* Numbers match by their decimal text: dnum ~ /^20155/. */
        char buf[24];
        int n = snprintf(buf, sizeof buf, "%lld", (long long)subject.as.i);
        return vm_regex_match(vm, re, buf, (size_t)n);
    }
    vm_error(vm, "cannot apply '~' to %s and %s", v_type_name(subject), v_type_name(pattern));
}
