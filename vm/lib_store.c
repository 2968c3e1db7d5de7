/* lib_store: the store natives: schemas, tagset files (write, read,
 * iterate), datastores (create, open, load through the external sort),
 * info and verify. */
#include "config.h"
#include "vm/lib_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/cache.h"
#include "store/fieldtext.h"
#include "store/mem.h"
#include "store/record.h"
#include "vm/lib.h"
#include "vm/natives.h"
#include "vm/query/query.h"
#include "vm/query/reading.h"

/* ---- schemas ---------------------------------------------------------- */

static void schema_free(VM *vm, void *data)
{
    VSchema *vs = data;
    if (!vs->s)
        return;
    uint32_t n = vs->s->nfields;
    if (vs->syms)
        for (uint32_t f = 0; f < n; f++)
            if (vs->syms[f])
                vm_free_mem(vm, vs->syms[f], vs->s->fields[f].nsyms * sizeof(VStr *));
    vm_free_mem(vm, vs->syms, vs->syms ? n * sizeof(VStr **) : 0);
    vm_free_mem(vm, vs->names, vs->names ? n * sizeof(VStr *) : 0);
    mem_free(vs->text, vs->text ? vs->text_len + 1 : 0);
    st_schema_free(vs->s);
}

static void schema_mark(VM *vm, void *data)
{
    VSchema *vs = data;
    if (vs->tags_name)
        vm_mark_obj(vm, &vs->tags_name->hdr);
    for (uint32_t f = 0; vs->names && f < vs->s->nfields; f++) {
        if (vs->names[f])
            vm_mark_obj(vm, &vs->names[f]->hdr);
        for (uint32_t k = 0; vs->syms && vs->syms[f] && k < vs->s->fields[f].nsyms; k++)
            if (vs->syms[f][k])
                vm_mark_obj(vm, &vs->syms[f][k]->hdr);
    }
}

static void schema_show(VM *vm, void *data, VStrBuf *sb)
{
    VSchema *vs = data;
    size_t n;
    char *text = st_schema_format(vs->s, &n);
    if (!text)
        vm_throw(vm, v_obj(vm->oom));
    vm_sb_addc(vm, sb, "schema {\n");
    for (char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        vm_sb_addc(vm, sb, "    ");
        vm_sb_add(vm, sb, line, (size_t)(nl - line + 1));
    }
    mem_free(text, n + 1);
    vm_sb_addc(vm, sb, "}");
}

const VHandleType vm_schema_type = {
    .name = "schema", .free = schema_free, .mark = schema_mark, .show = schema_show,
};

VHandle *vm_schema_parse(VM *vm, const char *text, size_t len, int line, int col, st_err *err)
{
    /* The handle first: once it owns the schema, a raise below leaks nothing. */
    VHandle *h = vm_handle_new(vm, &vm_schema_type, sizeof(VSchema));
    VSchema *vs = handle_data(h);
    st_schema *s = st_schema_parse(text, len, line, col, err);
    if (!s) {
        if (err->code == ST_ENOMEM)
            vm_throw(vm, v_obj(vm->oom));
        return NULL;
    }
    vs->s = s;
    if (!(vs->text = st_schema_format(s, &vs->text_len)))
        vm_throw(vm, v_obj(vm->oom));
    vm_push_root(vm, v_obj(h));
    vs->names = vm_alloc(vm, s->nfields * sizeof(VStr *));
    memset(vs->names, 0, s->nfields * sizeof(VStr *));
    vs->syms = vm_alloc(vm, s->nfields * sizeof(VStr **));
    memset(vs->syms, 0, s->nfields * sizeof(VStr **));
    vs->tags_name = vm_str_cstr(vm, "tags");
    for (uint32_t f = 0; f < s->nfields; f++) {
        const st_field *fd = &s->fields[f];
        vs->names[f] = vm_str_cstr(vm, fd->name);
        if (fd->type != ST_ENUM)
            continue;
        VStr **syms = vm_alloc(vm, fd->nsyms * sizeof(VStr *));
        memset(syms, 0, fd->nsyms * sizeof(VStr *));
        vs->syms[f] = syms;
        for (uint32_t k = 0; k < fd->nsyms; k++)
            syms[k] = vm_str_cstr(vm, fd->syms[k]);
    }
    vm_pop_root(vm, 1);
    return h;
}

static VHandle *arg_schema(VM *vm, Value *argv, int i)
{
    VHandle *h = vm_schema_of(argv[i]);
    if (!h)
        vm_arg_error(vm, i, "a schema (or a tagset file or store)", argv[i]);
    return h;
}

_Noreturn static void store_error(VM *vm, const st_err *err)
{
    if (err->code == ST_ENOMEM)
        vm_throw(vm, v_obj(vm->oom));
    vm_error(vm, "%s", err->msg);
}

Value nat_schema(VM *vm, int argc, Value *argv)
{
    (void)argc;
    if (!IS_STR(argv[0]))
        return v_obj(arg_schema(vm, argv, 0));
    st_err err;
    VHandle *h = vm_schema_parse(vm, AS_STR(argv[0])->data, AS_STR(argv[0])->len, 1, 1, &err);
    if (!h)
        store_error(vm, &err);
    return v_obj(h);
}

static const char *const role_names[] = {[ST_KEY] = "key", [ST_TAGSET] = "tagset", [ST_TAG] = "tag"};

Value nat_fields(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VSchema *vs = vschema(arg_schema(vm, argv, 0));
    const st_schema *s = vs->s;
    VArray *a = vm_array_new(vm, s->nfields);
    Value av = v_obj(a);
    for (uint32_t f = 0; f < s->nfields; f++) {
        const st_field *fd = &s->fields[f];
        char type[32];
        VMap *m = vm_map_new(vm, 4);
        vm_array_push(vm, a, v_obj(m));
        vm_map_set(vm, m, v_obj(vm_str_cstr(vm, "name")), v_obj(vs->names[f]));
        vm_map_set(vm, m, v_obj(vm_str_cstr(vm, "type")),
                   v_obj(vm_str_cstr(vm, vm_field_type_name(fd, type, sizeof type))));
        vm_map_set(vm, m, v_obj(vm_str_cstr(vm, "role")), v_obj(vm_str_cstr(vm, role_names[fd->role])));
        if (fd->index)
            vm_map_set(vm, m, v_obj(vm_str_cstr(vm, "index")), v_bool(true));
        if (fd->type == ST_ENUM) {
            VArray *syms = vm_array_new(vm, fd->nsyms);
            vm_map_set(vm, m, v_obj(vm_str_cstr(vm, "symbols")), v_obj(syms));
            for (uint32_t k = 0; k < fd->nsyms; k++)
                vm_array_push(vm, syms, v_obj(vs->syms[f][k]));
        }
    }
    return av;
}

/* ---- options ---------------------------------------------------------- */

static Value opt(VM *vm, VMap *m, const char *key)
{
    Value v = v_nil();
    if (m)
        vm_map_get(vm, m, v_obj(vm_str_cstr(vm, key)), &v);
    return v;
}

static int64_t opt_int(VM *vm, VMap *m, const char *key, int64_t def, int64_t lo, int64_t hi)
{
    Value v = opt(vm, m, key);
    if (IS_NIL(v))
        return def;
    if (!IS_INT(v) || v.as.i < lo || v.as.i > hi)
        vm_error(vm, "option %s must be an int from %lld to %lld", key, (long long)lo, (long long)hi);
    return v.as.i;
}

static const char *opt_str(VM *vm, VMap *m, const char *key, const char *def)
{
    Value v = opt(vm, m, key);
    if (IS_NIL(v))
        return def;
    if (!IS_STR(v) || strlen(AS_STR(v)->data) != AS_STR(v)->len)
        vm_error(vm, "option %s must be a string", key);
    return AS_STR(v)->data;
}

/* Writing options: block_size, codec ("lz4", "lz4hc", "none"), level, label;
 * for sorts also parcel (bytes) and tmpdir. */
static void write_opts(VM *vm, VMap *m, st_fileload_opts *o)
{
    static const char *const known[] = {"block_size", "codec", "level", "label", "parcel",
                                        "tmpdir", "schema", "partkey", "volumes",
                                        "partitions", "name", "mode", "to_adds", NULL};
    lib_check_opts(vm, m, known);
    st_fileload_opts_default(o);
    o->write.block_size = (uint32_t)opt_int(vm, m, "block_size", o->write.block_size,
                                            ST_BLOCK_SIZE_MIN, ST_BLOCK_SIZE_MAX);
    const char *codec = opt_str(vm, m, "codec", "lz4");
    if (!strcmp(codec, "lz4"))
        o->write.codec = ST_CODEC_LZ4;
    else if (!strcmp(codec, "lz4hc"))
        o->write.codec = ST_CODEC_LZ4HC;
    else if (!strcmp(codec, "none"))
        o->write.codec = ST_CODEC_NONE;
    else
        vm_error(vm, "option codec must be \"lz4\", \"lz4hc\" or \"none\", got \"%s\"", codec);
    o->write.level = (int)opt_int(vm, m, "level", 0, 0, 65535);
    o->write.label = opt_str(vm, m, "label", NULL);
    /* 256 MiB by default, as `comb store load`'s: a load from the language
     * costs what the command's does, on a host shared with others */
    o->sort.parcel_bytes = (size_t)opt_int(vm, m, "parcel", (int64_t)256 << 20, 1 << 16, INT64_MAX);
    o->sort.tmpdir = opt_str(vm, m, "tmpdir", NULL);
}

static bool opt_bool(VM *vm, VMap *m, const char *key)
{
    Value v = opt(vm, m, key);
    if (!IS_NIL(v) && !IS_BOOL(v))
        vm_error(vm, "option %s must be true or false", key);
    return !IS_NIL(v) && AS_BOOL(v);
}

static VMap *opt_map(VM *vm, int argc, Value *argv, int i)
{
    return argc > i && !IS_NIL(argv[i]) ? vm_arg_map(vm, argv, i) : NULL;
}

static char *dup_path(VM *vm, VStr *s)
{
    if (strlen(s->data) != s->len || !s->len)
        vm_error(vm, "bad path");
    char *p = vm_alloc(vm, s->len + 1);
    memcpy(p, s->data, s->len + 1);
    return p;
}

static void free_path(VM *vm, char *p)
{
    if (p)
        vm_free_mem(vm, p, strlen(p) + 1);
}

/* ---- file writers: create, add, commit -------------------------------- */

typedef struct VWriter {
    st_writer *w;
    VHandle *schema;
    VRowBuf buf;
    char *path;
    bool done;
} VWriter;

static void writer_free(VM *vm, void *data)
{
    VWriter *w = data;
    if (w->w)
        st_writer_abort(w->w);   /* never committed: nothing appears under path */
    vm_rowbuf_free(vm, &w->buf);
    free_path(vm, w->path);
}

static void writer_mark(VM *vm, void *data)
{
    VWriter *w = data;
    if (w->schema)
        vm_mark_obj(vm, &w->schema->hdr);
}

static void writer_show(VM *vm, void *data, VStrBuf *sb)
{
    VWriter *w = data;
    vm_sb_printf(vm, sb, "<writer %s%s>", w->path, w->done ? " (committed)" : "");
}

const VHandleType vm_writer_type = {
    .name = "writer", .free = writer_free, .mark = writer_mark, .show = writer_show,
};

Value nat_create(VM *vm, int argc, Value *argv)
{
    VStr *path = vm_arg_str(vm, argv, 0);
    VHandle *sh = arg_schema(vm, argv, 1);
    st_fileload_opts o;
    write_opts(vm, opt_map(vm, argc, argv, 2), &o);
    VHandle *h = vm_handle_new(vm, &vm_writer_type, sizeof(VWriter));
    VWriter *w = handle_data(h);
    w->schema = sh;
    w->path = dup_path(vm, path);
    st_err err;
    if (!(w->w = st_writer_create(w->path, vschema(sh)->s, &o.write, &err)))
        store_error(vm, &err);
    return v_obj(h);
}

static void writer_add(VM *vm, VWriter *w, Value ts)
{
    char what[64];
    st_err err;
    snprintf(what, sizeof what, "tagset %llu", (unsigned long long)st_writer_count(w->w) + 1);
    vm_tagset_encode(vm, vschema(w->schema), ts, &w->buf, what);
    if (st_writer_append(w->w, w->buf.row, w->buf.tags, w->buf.ntags, &err) < 0)
        store_error(vm, &err);
}

Value nat_add(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VWriter *w = vm_arg_handle(vm, argv, 0, &vm_writer_type);
    if (w->done)
        vm_error(vm, "the writer of %s is already committed", w->path);
    if (IS_ARRAY(argv[1])) {
        VArray *a = AS_ARRAY(argv[1]);
        for (size_t i = 0; i < a->len; i++)
            writer_add(vm, w, a->items[i]);
    } else {
        writer_add(vm, w, argv[1]);
    }
    return v_nil();
}

Value nat_commit(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VWriter *w = vm_arg_handle(vm, argv, 0, &vm_writer_type);
    if (w->done)
        vm_error(vm, "the writer of %s is already committed", w->path);
    uint64_t n = st_writer_count(w->w);
    st_writer *sw = w->w;
    st_err err;
    w->w = NULL;
    w->done = true;
    if (st_writer_commit(sw, &err) < 0)
        store_error(vm, &err);
    return v_int((int64_t)n);
}

/* ---- reading: tagset files and stores ------------------------------------ */

/* Whether the range of the partition key the manifest records for file i
 * (by which queries skip it) is the one its zone maps hold. */
static bool keys_hold(const VFiles *f, uint32_t i, st_reader *r)
{
    const st_mkeys *k = &f->keys[i];
    st_zone z;
    st_err ignored;
    if (k->state == ST_KEYS_UNKNOWN)
        return true;
    return st_reader_zone(r, f->partkey, &z, &ignored) == 0 && st_mkeys_match(k, z.min, z.max);
}

/* r (a new reader of file i, or NULL), unless its size is not the one its
 * commit recorded (a valid file, but not that one: copied over it), or the
 * range of its partition key is not. */
static st_reader *checked(const VFiles *f, uint32_t i, st_reader *r, st_err *err)
{
    st_file_info info;
    if (!r || !f->sizes)
        return r;
    st_reader_info(r, &info);
    if (info.size == f->sizes[i] && keys_hold(f, i, r))
        return r;
    st_reader_close(r);
    if (info.size != f->sizes[i])
        st_err_set(err, ST_ECORRUPT, "%s: %llu bytes, but the manifest says %llu", f->paths[i],
                   (unsigned long long)info.size, (unsigned long long)f->sizes[i]);
    else
        st_err_set(err, ST_ECORRUPT, "%s: the manifest's range of the partition key is not the "
                   "file's: the manifest is damaged (comb store verify)", f->paths[i]);
    return NULL;
}

st_reader *vm_files_reader(const VFiles *f, uint32_t i, const st_nbuf_opts *io,
                           const st_known_schema *known, st_err *err)
{
    st_reader *r = f->idle ? atomic_exchange(&f->idle[i], NULL) : NULL;
    if (r) {
        st_reading_idle_sub(f->sess);
        st_reader_set_cache(r, io && io->cache);
        return r;
    }
    return checked(f, i, st_reader_open_known(f->paths[i], io, known, err), err);
}

void vm_files_release(const VFiles *f, uint32_t i, st_reader *r)
{
    if (r && f->idle && st_reading_idle_add(f->sess)) {
        st_reader_rewind(r);
        st_reader *none = NULL;
        if (atomic_compare_exchange_strong(&f->idle[i], &none, r))
            return;
        st_reading_idle_sub(f->sess);
    }
    st_reader_close(r);
}

VFiles *vm_files_ref(VFiles *f)
{
    f->refs++;
    return f;
}

/* The paths are mem_alloc'd (not counted by the collector): a store's list
 * is made inside a callback of the store layer, where raising is not allowed. */
void vm_files_unref(VFiles *f)
{
    if (!f || --f->refs)
        return;
    for (uint32_t i = 0; f->idle && i < f->n; i++) {
        st_reader *r = atomic_exchange(&f->idle[i], NULL);
        if (r) {
            st_reading_idle_sub(f->sess);
            st_reader_close(r);
        }
    }
    for (uint32_t i = 0; f->paths && i < f->n; i++)
        if (f->paths[i])
            mem_free(f->paths[i], strlen(f->paths[i]) + 1);
    mem_free(f->paths, f->paths ? (f->n + 1) * sizeof *f->paths : 0);
    mem_free(f->parts, f->parts ? (f->n + 1) * sizeof *f->parts : 0);
    mem_free(f->sizes, f->sizes ? (f->n + 1) * sizeof *f->sizes : 0);
    mem_free(f->keys, f->keys ? (f->n + 1) * sizeof *f->keys : 0);
    mem_free(f->idle, f->idle ? (f->n + 1) * sizeof *f->idle : 0);
    st_reading_unref(f->sess);
    st_store_close(f->st);
    mem_free(f, sizeof *f);
}

/* A list of n files, not yet named (one reference): a store's (st) with
 * its partitions and idle readers, within sess's budget. NULL when out of
 * memory. */
static VFiles *files_new(st_store *st, st_reading *sess, uint32_t n)
{
    VFiles *f = mem_calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->refs = 1;
    f->n = n;
    f->st = st ? st_store_ref(st) : NULL;
    f->sess = st ? st_reading_ref(sess) : NULL;
    if (!(f->paths = mem_calloc(n + 1, sizeof *f->paths)) ||
        (st && (!(f->parts = mem_calloc(n + 1, sizeof *f->parts)) ||
                !(f->sizes = mem_calloc(n + 1, sizeof *f->sizes)) ||
                !(f->keys = mem_calloc(n + 1, sizeof *f->keys)) ||
                !(f->idle = mem_calloc(n + 1, sizeof *f->idle))))) {
        vm_files_unref(f);
        return NULL;
    }
    return f;
}

/* Iteration (`for ts in x`) over the source's files, tagset by tagset, with
 * a reader of its own; a loop that starts elsewhere than where the last one
 * stopped (a new or nested loop) starts over, on the source's files as they
 * are then, and skips ahead. */
static void iter_reset(VIter *it)
{
    st_reader_close(it->r);
    vm_files_unref(it->files);
    *it = (VIter){0};
}

/* The next tagset's batch and index, or false at the end. */
static bool iter_step(VM *vm, const VSource *src, VIter *it, const st_batch **b, uint32_t *t)
{
    st_err err;
    if (!it->files)
        it->files = vm_files_ref(src->files);
    while (!it->b || it->t >= it->b->ntagsets) {
        if (!it->r) {
            if (it->fi >= it->files->n)
                return false;
            it->r = st_reader_open(it->files->paths[it->fi], NULL, &err);
            if (!(it->r = checked(it->files, it->fi++, it->r, &err)))
                store_error(vm, &err);
        }
        int rc = st_reader_next(it->r, &it->b, &err);
        if (rc < 0) {
            iter_reset(it);
            store_error(vm, &err);
        }
        if (rc == 0) {
            st_reader_close(it->r);
            it->r = NULL;
            it->b = NULL;
        }
        it->t = 0;
    }
    *b = it->b;
    *t = it->t++;
    it->pos++;
    return true;
}

void vm_store_recheck(void)
{
    st_reading_recheck_all();
}

/* A store's handle holds descriptors (its pin, its idle readers) until the
 * collector frees it: a session that opens store after store collects
 * whenever the open ones have doubled, rather than run out of descriptors. */
static size_t nstores, stores_bound = 16;

static void collect_stores(VM *vm, VStr *path)
{
    if (nstores < stores_bound)
        return;
    vm_push_root(vm, v_obj(path));
    vm_gc(vm);
    vm_pop_root(vm, 1);
    stores_bound = nstores * 2 > 16 ? nstores * 2 : 16;
}

static void source_free(VM *vm, void *data)
{
    VSource *src = data;
    nstores -= src->st != NULL;
    vm_reading_gone(vm, src);
    iter_reset(&src->it);
    vm_files_unref(src->files);
    vm_rowbuf_free(vm, &src->rows);
    st_store_close(src->st);
    free_path(vm, src->path);
    if (src->label)
        mem_free(src->label, strlen(src->label) + 1);
}

static void source_mark(VM *vm, void *data)
{
    VSource *src = data;
    if (src->schema)
        vm_mark_obj(vm, &src->schema->hdr);
}

static bool source_next(VM *vm, void *data, int64_t *cursor, Value *a, Value *b)
{
    VSource *src = data;
    VIter *it = &src->it;
    const st_batch *batch;
    uint32_t t;
    if (*cursor != it->pos) {
        iter_reset(it);
        while (it->pos < *cursor && iter_step(vm, src, it, &batch, &t))
            ;
    }
    if (!iter_step(vm, src, it, &batch, &t))
        return false;
    *cursor = it->pos;
    const st_schema *s = vschema(src->schema)->s;
    VRowBuf *rb = &src->rows;
    uint32_t lo = s->tag_size ? batch->tag_start[t] : 0, n = s->tag_size ? batch->tag_start[t + 1] - lo : 0;
    vm_grow(vm, &rb->row, &rb->row_cap, s->row_size);
    vm_grow(vm, &rb->tags, &rb->tags_cap, (size_t)n * s->tag_size);
    st_batch_row(s, batch, t, rb->row);
    for (uint32_t i = 0; i < n; i++)
        st_batch_tag(s, batch, lo + i, rb->tags + (size_t)i * s->tag_size);
    *a = vm_record_value(vm, vschema(src->schema), rb->row, s->tag_size ? rb->tags : NULL, n, NULL,
                         false);
    *b = *a;
    return true;
}

static void source_show(VM *vm, void *data, VStrBuf *sb)
{
    VSource *src = data;
    st_storeinfo info;
    if (!src->st) {
        vm_sb_printf(vm, sb, "<tagfile %s: %llu tagsets, %llu tags>", src->path,
                     (unsigned long long)src->info.ntagsets, (unsigned long long)src->info.ntags);
        return;
    }
    st_store_info(src->st, &info);
    vm_sb_printf(vm, sb, "<store %s: %u x %u partitions by %s, generation %llu>", src->path,
                 info.volumes, info.partitions, info.partkey, (unsigned long long)info.generation);
}

const VHandleType vm_tagfile_type = {
    .name = "tagfile", .free = source_free, .mark = source_mark, .next = source_next,
    .show = source_show,
};

const VHandleType vm_store_type = {
    .name = "store", .free = source_free, .mark = source_mark, .next = source_next,
    .show = source_show,
};

VSource *vm_source_of(Value v)
{
    if (!IS_HANDLE(v))
        return NULL;
    VHandle *h = AS_HANDLE(v);
    return h->type == &vm_tagfile_type || h->type == &vm_store_type ? handle_data(h) : NULL;
}

VHandle *vm_schema_of(Value v)
{
    if (IS_HANDLE(v) && AS_HANDLE(v)->type == &vm_schema_type)
        return AS_HANDLE(v);
    VSource *src = vm_source_of(v);
    return src ? src->schema : NULL;
}

static VSource *new_source(VM *vm, const VHandleType *type, VStr *path, Value *hv)
{
    VHandle *h = vm_handle_new(vm, type, sizeof(VSource));
    *hv = v_obj(h);
    VSource *src = handle_data(h);
    src->path = dup_path(vm, path);
    return src;
}

static Value open_file(VM *vm, VStr *path)
{
    Value hv;
    VSource *src = new_source(vm, &vm_tagfile_type, path, &hv);
    st_err err;
    st_reader *r = st_reader_open(src->path, NULL, &err);
    if (!r)
        store_error(vm, &err);
    st_reader_info(r, &src->info);
    const char *label = st_reader_label(r);
    src->label = mem_strdup(label ? label : "");
    size_t n;
    char *text = st_schema_format(st_reader_schema(r), &n);
    st_reader_close(r);
    if (!text || !src->label)
        vm_throw(vm, v_obj(vm->oom));
    VHandle *sh = vm_schema_parse(vm, text, n, 1, 1, &err);
    mem_free(text, n + 1);
    if (!sh)
        store_error(vm, &err);
    src->schema = sh;
    if (!(src->files = files_new(NULL, NULL, 1)) || !(src->files->paths[0] = mem_strdup(src->path)))
        vm_throw(vm, v_obj(vm->oom));
    return hv;
}

/* A store's tags files as they are listed, each with its partition (volume
 * x partitions + p), known here once rather than found by every query:
 * counted first (f NULL), then named. */
typedef struct Listing {
    VFiles *f;
    uint32_t n, partitions;
} Listing;

static int list_file(const st_file *f, void *ctx)
{
    Listing *l = ctx;
    if (f->kind != ST_TAGS)
        return 0;
    if (l->f) {
        l->f->parts[l->n] = f->vol * l->partitions + f->part;
        l->f->sizes[l->n] = f->size;
        l->f->keys[l->n] = f->keys;
        if (!(l->f->paths[l->n] = mem_strdup(f->path)))
            return -1;
    }
    l->n++;
    return 0;
}

/* The files of src's snapshot, to scan and to iterate: a new list. */
static VFiles *list_files(VM *vm, VSource *src)
{
    st_storeinfo info;
    st_store_info(src->st, &info);
    Listing l = {NULL, 0, info.partitions};
    st_store_files(src->st, list_file, &l);
    l.f = files_new(src->st, vm_reading(vm), l.n);
    l.n = 0;
    if (l.f)
        l.f->partkey = src->partkey;
    if (!l.f || st_store_files(src->st, list_file, &l) < 0) {
        vm_files_unref(l.f);
        vm_throw(vm, v_obj(vm->oom));
    }
    return l.f;
}

/* A new handle on the session's last snapshot (its store, schema and file
 * list shared), if dir is that store and unchanged since (store/reading.h):
 * queries open their store each time they run. */
static bool reopen_store(VM *vm, VStr *dir, Value *hv)
{
    VSource *old = vm_reading_reopen(vm, dir->data);
    if (!old)
        return false;
    VSource *src = new_source(vm, &vm_store_type, dir, hv);
    src->schema = old->schema;
    src->partkey = old->partkey;
    src->st = st_store_ref(old->st);
    nstores++;
    src->files = vm_files_ref(old->files);
    vm_reading_reopened(vm, src);
    return true;
}

static Value open_store(VM *vm, VStr *dir)
{
    Value hv;
    vm_reading_opening(vm, dir->data);
    VSource *src = new_source(vm, &vm_store_type, dir, &hv);
    st_err err;
    if (!(src->st = st_store_open(src->path, &err)))
        store_error(vm, &err);
    nstores++;
    st_storeinfo info;
    st_store_info(src->st, &info);
    VHandle *schema = vm_schema_parse(vm, info.schema, info.schema_len, 1, 1, &err);
    if (!schema)
        vm_error(vm, "%s/STORE: schema: %s", src->path, err.msg);
    src->schema = schema;
    int pk = st_schema_find(vschema(schema)->s, info.partkey, strlen(info.partkey));
    if (pk < 0 || (uint32_t)pk >= vschema(schema)->s->nrow)
        vm_error(vm, "%s/STORE: partition key '%s' is not a key or tagset field", src->path,
                 info.partkey);
    src->partkey = (uint32_t)pk;
    src->files = list_files(vm, src);
    vm_reading_opened(vm, src);
    return hv;
}

bool vm_store_open(VM *vm, VStr *path, Value *out)
{
    struct stat st;
    if (reopen_store(vm, path, out))
        return true;
    if (stat(path->data, &st) < 0)
        return false;
    if (S_ISDIR(st.st_mode)) {
        collect_stores(vm, path);
        *out = open_store(vm, path);
    }
    else if (st_file_is_tagset(path->data))
        *out = open_file(vm, path);
    else
        return false;
    return true;
}

/* ---- datastores: create ----------------------------------------------- */

Value nat_create_store(VM *vm, int argc, Value *argv)
{
    VStr *dir = vm_arg_str(vm, argv, 0);
    VSchema *vs = vschema(arg_schema(vm, argv, 1));
    VMap *m = opt_map(vm, argc, argv, 2);
    static const char *const known[] = {"partkey", "volumes", "partitions", "name", "bucket", NULL};
    lib_check_opts(vm, m, known);
    const char *name = opt_str(vm, m, "name", NULL);
    const char *base = strrchr(dir->data, '/');
    const char *partkey = opt_str(vm, m, "partkey", vs->s->fields[0].name);
    int pk = st_schema_find(vs->s, partkey, strlen(partkey));
    if (pk < 0 || (uint32_t)pk >= vs->s->nkeys)
        vm_error(vm, "partkey '%s' must be a key field of the schema", partkey);
    st_err err;
    uint64_t bucket = (uint64_t)opt_int(vm, m, "bucket", 0, 0, INT64_MAX);
    if (st_partition_check_bucket(&vs->s->fields[pk], bucket, &err) < 0)
        store_error(vm, &err);
    size_t len;
    char *text = st_schema_format(vs->s, &len);
    if (!text)
        vm_throw(vm, v_obj(vm->oom));
    st_store_meta meta = {
        .name = name ? name : base && base[1] ? base + 1 : dir->data,
        .partkey = partkey,
        .volumes = (uint32_t)opt_int(vm, m, "volumes", 1, 1, ST_MAX_VOLUMES),
        .partitions = (uint32_t)opt_int(vm, m, "partitions", 1, 1, ST_MAX_PARTITIONS),
        .bucket = bucket,
        .keytype = st_partition_keytype(&vs->s->fields[pk]),
        .schema = text,
        .schema_len = len,
    };
    int rc = st_store_create(dir->data, &meta, &err);
    mem_free(text, len + 1);
    if (rc < 0)
        store_error(vm, &err);
    return open_store(vm, dir);
}

/* ---- loading: load(target, rows) ------------------------------------- */

static void loader_free(VM *vm, void *data)
{
    VLoader *l = data;
    st_fileload_free(l->l);
    st_load_free(l->sl);
    vm_rowbuf_free(vm, &l->buf);
}

static void loader_mark(VM *vm, void *data)
{
    VLoader *l = data;
    if (l->schema)
        vm_mark_obj(vm, &l->schema->hdr);
}

const VHandleType vm_loader_type = {.name = "loader", .free = loader_free, .mark = loader_mark};

/* A load stops before its commit on Ctrl-C, so the interrupted load has
 * changed nothing and can simply run again. */
static bool load_interrupted(void *ctx)
{
    (void)ctx;
    return vm_poll_flag & POLL_SIGINT;
}

/* A writer's store handle: a store of its own (writing through a shared
 * one would move every holder's snapshot), its snapshot to move with the commit. */
static void write_through(VM *vm, VSource *s)
{
    st_err err;
    if (st_store_shared(s->st)) {
        st_store *own = st_store_open(s->path, &err);
        if (!own)
            store_error(vm, &err);
        st_store_close(s->st);
        s->st = own;
    }
    vm_reading_gone(vm, s);
}

VLoader *vm_loader_new(VM *vm, Value target, VHandle *schema, VMap *opts, Value *keep)
{
    st_fileload_opts o;
    st_err err;
    write_opts(vm, opts, &o);
    VHandle *h = vm_handle_new(vm, &vm_loader_type, sizeof(VLoader));
    *keep = v_obj(h);
    VLoader *l = handle_data(h);
    if (IS_HANDLE(target) && AS_HANDLE(target)->type == &vm_store_type) {
        VSource *s = vm_source_of(target);
        st_load_opts lo;
        st_load_opts_default(&lo);
        lo.update.write = o.write;
        lo.sort = o.sort;
        lo.cancelled = load_interrupted;
        const char *mode = opt_str(vm, opts, "mode", "combine");
        if (strcmp(mode, "combine") && strcmp(mode, "replace"))
            vm_error(vm, "option mode must be \"combine\" or \"replace\", got \"%s\"", mode);
        lo.update.mode = *mode == 'r' ? ST_UPDATE_REPLACE : ST_UPDATE_COMBINE;
        lo.to_adds = opt_bool(vm, opts, "to_adds");
        l->schema = s->schema;
        write_through(vm, s);
        l->target = s;
        l->sl = st_load_new(s->st, &lo, &err);
    } else if (IS_STR(target)) {
        if (!schema)
            vm_error(vm, "writing a file needs a schema (option schema)");
        if (!IS_NIL(opt(vm, opts, "mode")))
            vm_error(vm, "option mode applies to a store, not a new file");
        if (opt_bool(vm, opts, "to_adds"))
            vm_error(vm, "option to_adds is for a store, not a file");
        l->schema = schema;
        l->l = st_fileload_file(AS_STR(target)->data, vschema(schema)->s, &o, &err);
    } else {
        vm_error(vm, "can write to a store or a file path, not %s", v_type_name(target));
    }
    if (!l->l && !l->sl)
        store_error(vm, &err);
    return l;
}

/* One input row: a tagset map (with `tags`: one record per tag, or one
 * without a tag if it has none) or a flat map of tagset and tag fields (one
 * record, with a tag when it names any tag field). */
void vm_loader_add(VM *vm, VLoader *l, Value row, uint64_t n)
{
    VSchema *vs = vschema(l->schema);
    const st_schema *s = vs->s;
    char what[64];
    st_err err;
    snprintf(what, sizeof what, "row %llu", (unsigned long long)n);
    if (!IS_MAP(row))
        vm_error(vm, "%s: a row must be a map, got %s", what, v_type_name(row));
    VMap *m = AS_MAP(row);
    bool flat = false;
    size_t pos = 0;
    Value k, v;
    while (s->tag_size && vm_map_next(m, &pos, &k, &v))
        if (IS_STR(k)) {
            int f = st_schema_find(s, AS_STR(k)->data, AS_STR(k)->len);
            flat |= f >= (int)s->nrow;
        }
    if (flat)
        vm_flat_encode(vm, vs, m, &l->buf, what);
    else
        vm_tagset_encode(vm, vs, row, &l->buf, what);
    if (!l->buf.ntags && vm_loader_add_raw(l, l->buf.row, NULL, &err) < 0)
        vm_error(vm, "%s: %s", what, err.msg);
    for (uint32_t i = 0; i < l->buf.ntags; i++)
        if (vm_loader_add_raw(l, l->buf.row, l->buf.tags + (size_t)i * s->tag_size, &err) < 0)
            vm_error(vm, "%s: %s", what, err.msg);
}

int vm_loader_add_raw(VLoader *l, const void *row, const void *tag, st_err *err)
{
    return l->sl ? st_load_add(l->sl, row, tag, err) : st_fileload_add(l->l, row, tag, err);
}

int64_t vm_loader_finish(VM *vm, VLoader *l)
{
    st_err err;
    int rc;
    int64_t n;
    if (l->sl) {
        VFiles *old = l->target->files;
        if (old->refs == 1 && old->st) {
            /* Nothing else reads the handle's old snapshot: let its pin go, so
             * the commit removes the files it supersedes (the list's paths
             * and idle readers stay good until it is replaced). */
            st_store_close(old->st);
            old->st = NULL;
        }
        n = (int64_t)st_load_count(l->sl);
        rc = st_load_commit(l->sl, NULL, &err);  /* ends the loader, committed or not */
        l->sl = NULL;
    } else {
        st_fileload_stats stats;
        rc = st_fileload_finish(l->l, &stats, &err);
        st_fileload_free(l->l);
        l->l = NULL;
        n = (int64_t)stats.records;
    }
    if (rc == -1 && err.code == ST_ECANCEL)
        vm_interrupted(vm);
    if (rc == -1)
        store_error(vm, &err);
    if (l->target) {
        /* Committed: the handle written through reads the new generation
         * from now on; scans and loops under way read the old one. */
        VFiles *f = list_files(vm, l->target);
        vm_files_unref(l->target->files);
        l->target->files = f;
    }
    return n;
}

/* A tagset file of the loader's schema, its records as they are: no comb
 * values are made (the cycle's split moves a day's tags this way). */
static void load_records(VM *vm, VLoader *l, const char *path, uint64_t *n)
{
    const st_schema *s = vschema(l->schema)->s;
    st_err err;
    st_rec_reader *r = st_rec_open(path, s, NULL, &err);
    if (!r)
        store_error(vm, &err);
    st_source src = st_rec_source(r);
    const void *rec;
    int rc;
    while ((rc = src.next(src.self, &rec, &err)) > 0) {
        ++*n;
        if (vm_loader_add_raw(l, rec, st_rec_tag(s, rec), &err) < 0) {
            rc = -1;
            break;
        }
    }
    st_rec_close(r);
    if (rc < 0)
        store_error(vm, &err);
}

/* The rows of one source into l: an array of maps, a tagset file, a store
 * or a query; an array's items are maps or such sources, one after another. */
static void load_source(VM *vm, VLoader *l, Value src, uint64_t *n, Value *argv)
{
    if (IS_ARRAY(src)) {
        VArray *a = AS_ARRAY(src);
        for (size_t i = 0; i < a->len; i++) {
            if (IS_MAP(a->items[i])) {
                vm_loader_add(vm, l, a->items[i], ++*n);
                vm_gc_step(vm);     /* the maps a flat row is split into are garbage */
            } else if (IS_HANDLE(a->items[i]) || IS_ARRAY(a->items[i]))
                load_source(vm, l, a->items[i], n, argv);
            else
                vm_error(vm, "load: item %zu of the rows must be a map or a source, got %s", i,
                         v_type_name(a->items[i]));
        }
    } else if (IS_HANDLE(src) && AS_HANDLE(src)->type == &vm_tagfile_type &&
               st_schema_equal(vschema(vm_source_of(src)->schema)->s, vschema(l->schema)->s)) {
        load_records(vm, l, vm_source_of(src)->path, n);
    } else if (IS_HANDLE(src) && (AS_HANDLE(src)->type->next || AS_HANDLE(src)->type->iter)) {
        VHandle *h = AS_HANDLE(src);
        bool pushed = false;
        if (h->type->iter) {    /* a query: its rows as they come, closed after */
            Value it = h->type->iter(vm, src);
            h = AS_HANDLE(it);
            if ((pushed = h->type->close != NULL))
                vm_iter_push(vm, argv, it);
        }
        int64_t cursor = 0;
        Value a, b;
        const unsigned char *row, *tag;
        st_err err;
        if (vm_text_raw(vm, h, vschema(l->schema))) {   /* text of the target's schema: no maps */
            while (vm_text_next_raw(vm, h, &row, &tag))
                if (vm_loader_add_raw(l, row, tag, &err) < 0)
                    vm_error(vm, "row %llu: %s", (unsigned long long)*n + 1, err.msg);
                else
                    ++*n;
        }
        while (h->type->next(vm, h->data, &cursor, &a, &b)) {
            vm_loader_add(vm, l, a, ++*n);
            vm_gc_step(vm);     /* the rows loaded are garbage */
        }
        if (pushed)
            vm_iter_close(vm, argv);
    } else {
        vm_arg_error(vm, 1, "an array of maps, a tagset file, a store or a query, or an array of "
                     "those", src);
    }
}

/* load(target, rows, [opts]): rows an array of maps, a tagset file, a store
 * or a query, or an array of those sources. */
Value nat_load(VM *vm, int argc, Value *argv)
{
    VMap *opts = opt_map(vm, argc, argv, 2);
    VHandle *schema = vm_schema_of(opt(vm, opts, "schema"));
    if (!schema)
        schema = vm_schema_of(argv[1]);
    Value keep;
    VLoader *l = vm_loader_new(vm, argv[0], schema, opts, &keep);
    vm_push_root(vm, keep);
    uint64_t n = 0;
    load_source(vm, l, argv[1], &n, argv);
    int64_t r = vm_loader_finish(vm, l);
    vm_pop_root(vm, 1);
    return v_int(r);
}

/* ---- the partition update: update(store, opts) ------------------------ */

/* An update under way: its transaction and remove keys, freed whatever
 * happens (a raise aborts the transaction: nothing committed). */
typedef struct VUpdate {
    st_txn *t;
    st_schema *schema;
    VRowBuf buf;
    unsigned char *keys; /* nkeys bare keys, grouped by partition, each group ascending */
    size_t cap, nkeys;
    uint32_t *part;      /* each key's partition, then the groups' starts */
    size_t part_cap;
} VUpdate;

static void update_free(VM *vm, void *data)
{
    VUpdate *u = data;
    st_store_abort(u->t);
    st_schema_free(u->schema);
    vm_rowbuf_free(vm, &u->buf);
    if (u->keys)
        vm_free_mem(vm, u->keys, u->cap);
    if (u->part)
        vm_free_mem(vm, u->part, u->part_cap);
}

static const VHandleType update_type = {.name = "update", .free = update_free};

static int key_order(const void *a, const void *b, void *schema)
{
    const st_schema *s = schema;
    const unsigned char *x = a, *y = b;
    uint32_t px, py;
    memcpy(&px, x + s->key_size, 4);
    memcpy(&py, y + s->key_size, 4);
    if (px != py)
        return px < py ? -1 : 1;
    return st_schema_key_cmp(s, x, y);
}

/* The remove keys (maps of key fields) of volume vol, each with its
 * partition after it (key_size + 4 bytes), sorted by partition and key. */
static void remove_keys(VM *vm, VSource *src, VUpdate *u, VArray *a, uint32_t vol)
{
    VSchema *vs = vschema(src->schema);
    const st_schema *s = vs->s;
    const st_field *pk = &s->fields[src->partkey];
    size_t w = s->key_size + 4;
    if (!a->len)
        return;
    u->keys = vm_alloc(vm, u->cap = a->len * w);
    for (size_t i = 0; i < a->len; i++) {
        char what[64];
        snprintf(what, sizeof what, "remove key %zu", i);
        vm_tagset_encode(vm, vs, a->items[i], &u->buf, what);
        uint32_t v, p;
        st_store_place(src->st, u->buf.row + pk->offset, pk->width, &v, &p);
        if (v != vol)
            vm_error(vm, "%s belongs in volume %u, not %u", what, v, vol);
        memcpy(u->keys + i * w, u->buf.row, s->key_size);
        memcpy(u->keys + i * w + s->key_size, &p, 4);
    }
    u->nkeys = a->len;
    qsort_r(u->keys, u->nkeys, w, key_order, (void *)s);
    /* Packed: the bare keys alone, as st_update_opts wants them. */
    for (size_t i = 0; i < u->nkeys; i++) {
        uint32_t p;
        memcpy(&p, u->keys + i * w + s->key_size, 4);
        if (!u->part)
            u->part = vm_alloc(vm, u->part_cap = u->nkeys * sizeof *u->part);
        u->part[i] = p;
        memmove(u->keys + i * s->key_size, u->keys + i * w, s->key_size);
    }
}

static void set(VM *vm, VMap *m, const char *k, Value v);

/* update(store, {volume, partition, remove, label}): Gecko's partition
 * update on one volume: each partition (or the one named) that has an adds
 * file or keys to remove merges its adds into its tags and moves the
 * removed tagsets to its dels file; one commit, labelled. */
Value nat_update(VM *vm, int argc, Value *argv)
{
    if (!IS_HANDLE(argv[0]) || AS_HANDLE(argv[0])->type != &vm_store_type)
        vm_arg_error(vm, 0, "a store", argv[0]);
    VSource *src = vm_source_of(argv[0]);
    VMap *m = opt_map(vm, argc, argv, 1);
    static const char *const known[] = {"volume", "partition", "remove", "label", NULL};
    lib_check_opts(vm, m, known);
    st_storeinfo info;
    st_store_info(src->st, &info);
    uint32_t vol = (uint32_t)opt_int(vm, m, "volume", 0, 0, info.volumes - 1);
    int64_t only = opt_int(vm, m, "partition", -1, 0, info.partitions - 1);
    Value rm = opt(vm, m, "remove");
    if (!IS_NIL(rm) && !IS_ARRAY(rm))
        vm_error(vm, "option remove must be an array of keys (maps)");
    st_update_opts o;
    st_update_opts_default(&o);
    o.write.label = opt_str(vm, m, "label", NULL);
    VHandle *h = vm_handle_new(vm, &update_type, sizeof(VUpdate));
    vm_push_root(vm, v_obj(h));
    VUpdate *u = handle_data(h);
    if (!IS_NIL(rm))
        remove_keys(vm, src, u, AS_ARRAY(rm), vol);
    st_err err;
    write_through(vm, src);
    if (!(u->schema = st_update_store_schema(src->st, &err)) ||
        !(u->t = st_store_begin(src->st, vol, &err)) ||
        (o.write.label && st_store_set_label(u->t, o.write.label, &err) < 0))
        store_error(vm, &err);
    st_update_stats st = {0};
    size_t k = 0;
    for (uint32_t p = 0; p < info.partitions; p++) {
        size_t k0 = k;
        while (k < u->nkeys && u->part[k] == p)
            k++;
        st_file f;
        int has = st_store_file(src->st, vol, p, ST_ADDS, &f, &err);
        if (has < 0)
            store_error(vm, &err);
        if ((only >= 0 && p != only) || (!has && k == k0))
            continue;
        o.remove_keys = u->keys ? u->keys + k0 * u->schema->key_size : NULL;
        o.nremove = k - k0;
        if (st_update_partition(u->t, src->st, u->schema, vol, p, NULL, &o, &st, &err) < 0)
            store_error(vm, &err);
    }
    if (st.partitions) {
        st_txn *t = u->t;
        u->t = NULL;      /* the commit ends it */
        if (st_store_commit(t, &err) == -1)
            store_error(vm, &err);
        VFiles *f = list_files(vm, src);
        vm_files_unref(src->files);
        src->files = f;
    } else {    /* nothing to do: the volume's writer lock goes now, not when collected */
        st_store_abort(u->t);
        u->t = NULL;
    }
    VMap *r = vm_map_new(vm, 8);
    vm_push_root(vm, v_obj(r));
    set(vm, r, "partitions", v_int((int64_t)st.partitions));
    set(vm, r, "old_tagsets", v_int((int64_t)st.old_tagsets));
    set(vm, r, "add_tagsets", v_int((int64_t)st.add_tagsets));
    set(vm, r, "tagsets", v_int((int64_t)st.out_tagsets));
    set(vm, r, "tags", v_int((int64_t)st.out_tags));
    set(vm, r, "removed_tagsets", v_int((int64_t)st.removed_tagsets));
    set(vm, r, "removed_tags", v_int((int64_t)st.removed_tags));
    vm_pop_root(vm, 2);
    return v_obj(r);
}

/* files(store): the current files of the handle's snapshot, in (volume,
 * partition, kind) order, as [{volume, partition, kind, path, size}]. */
typedef struct FileList {
    VM *vm;
    VArray *a;
    VSource *src;
} FileList;

/* A partition key's order image as its comb value (st_field_order images
 * of the integer types: the value, its sign bit flipped when signed). */
static Value key_value(VM *vm, const VSource *src, uint64_t order)
{
    const st_field *f = &vschema(src->schema)->s->fields[src->partkey];
    if ((f->type >= ST_I8 && f->type <= ST_I64) || f->type == ST_TIME)
        order ^= UINT64_C(1) << 63;  /* the low bytes are the value, little-endian */
    return vm_field_value(vm, vschema(src->schema), src->partkey, &order);
}

/* A tags file's range of the partition key: [lo, hi], [] for no rows, nil
 * when the manifest records none. */
static Value keys_value(VM *vm, const VSource *src, const st_mkeys *k)
{
    if (k->state == ST_KEYS_UNKNOWN)
        return v_nil();
    VArray *a = vm_array_new(vm, 2);
    vm_push_root(vm, v_obj(a));
    if (k->state == ST_KEYS_RANGE) {
        vm_array_push(vm, a, key_value(vm, src, k->lo));
        vm_array_push(vm, a, key_value(vm, src, k->hi));
    }
    vm_pop_root(vm, 1);
    return v_obj(a);
}

static int file_entry(const st_file *f, void *ctx)
{
    FileList *l = ctx;
    VMap *m = vm_map_new(l->vm, 6);
    vm_array_push(l->vm, l->a, v_obj(m));
    set(l->vm, m, "volume", v_int(f->vol));
    set(l->vm, m, "partition", v_int(f->part));
    set(l->vm, m, "kind", v_obj(vm_str_cstr(l->vm, st_kind_names[f->kind])));
    set(l->vm, m, "path", v_obj(vm_str_cstr(l->vm, f->path)));
    set(l->vm, m, "size", v_int((int64_t)f->size));
    if (f->kind == ST_TAGS)
        set(l->vm, m, "keys", keys_value(l->vm, l->src, &f->keys));
    return 0;
}

Value nat_files(VM *vm, int argc, Value *argv)
{
    (void)argc;
    if (!IS_HANDLE(argv[0]) || AS_HANDLE(argv[0])->type != &vm_store_type)
        vm_arg_error(vm, 0, "a store", argv[0]);
    FileList l = {vm, vm_array_new(vm, 0), vm_source_of(argv[0])};
    vm_push_root(vm, v_obj(l.a));
    st_store_files(l.src->st, file_entry, &l);
    vm_pop_root(vm, 1);
    return v_obj(l.a);
}

/* ---- info and verify -------------------------------------------------- */

static void set(VM *vm, VMap *m, const char *k, Value v)
{
    vm_map_set(vm, m, v_obj(vm_str_cstr(vm, k)), v);
}

static const char *const codec_names[] = {"none", "lz4", "lz4hc"};

Value nat_info(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VMap *m = vm_map_new(vm, 12);
    Value mv = v_obj(m);
    VSource *src = vm_source_of(argv[0]);
    if (!src)
        vm_arg_error(vm, 0, "a tagset file or a store", argv[0]);
    if (!src->st) {
        const st_file_info *i = &src->info;
        set(vm, m, "path", v_obj(vm_str_cstr(vm, src->path)));
        set(vm, m, "version", v_int(i->version));
        set(vm, m, "block_size", v_int(i->block_size));
        set(vm, m, "codec", v_obj(vm_str_cstr(vm, codec_names[i->codec])));
        set(vm, m, "size", v_int((int64_t)i->size));
        set(vm, m, "blocks", v_int((int64_t)i->nblocks));
        set(vm, m, "tagsets", v_int((int64_t)i->ntagsets));
        set(vm, m, "tags", v_int((int64_t)i->ntags));
        set(vm, m, "label", v_obj(vm_str_cstr(vm, src->label)));
        return mv;
    }
    st_storeinfo i;
    st_store_info(src->st, &i);
    set(vm, m, "dir", v_obj(vm_str_cstr(vm, i.dir)));
    set(vm, m, "name", v_obj(vm_str_cstr(vm, i.name)));
    set(vm, m, "partkey", v_obj(vm_str_cstr(vm, i.partkey)));
    set(vm, m, "volumes", v_int(i.volumes));
    set(vm, m, "partitions", v_int(i.partitions));
    if (i.bucket)
        set(vm, m, "bucket", v_int((int64_t)i.bucket));
    set(vm, m, "generation", v_int((int64_t)i.generation));
    set(vm, m, "label", v_obj(vm_str_cstr(vm, i.label ? i.label : "")));
    set(vm, m, "files", v_int((int64_t)i.files[ST_TAGS]));
    set(vm, m, "bytes", v_int((int64_t)i.bytes[ST_TAGS]));
    return mv;
}

typedef struct VerifyCtx {
    VM *vm;
    VArray *bad;
    int64_t files;
} VerifyCtx;

static void add_bad(VerifyCtx *v, const char *path, int64_t block, const char *msg)
{
    VMap *m = vm_map_new(v->vm, 3);
    vm_array_push(v->vm, v->bad, v_obj(m));
    set(v->vm, m, "file", v_obj(vm_str_cstr(v->vm, path)));
    set(v->vm, m, "block", v_int(block));
    set(v->vm, m, "error", v_obj(vm_str_cstr(v->vm, msg)));
}

static void verify_bad(void *ctx, const char *path, uint64_t block, const char *msg)
{
    add_bad(ctx, path, (int64_t)block, msg);
}

static void verify_path(VerifyCtx *v, const char *path)
{
    st_err err;
    v->files++;
    if (st_reader_verify(path, NULL, verify_bad, v, &err) < 0)
        add_bad(v, path, -1, err.msg);
}

/* verify(path or store): every block of every file checked; the bad ones
 * as an array of {file, block, error} (block -1: the file as a whole). */
Value nat_verify(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VerifyCtx v = {vm, vm_array_new(vm, 0), 0};
    Value av = v_obj(v.bad);
    if (IS_STR(argv[0])) {
        verify_path(&v, AS_STR(argv[0])->data);
    } else if (IS_HANDLE(argv[0]) && AS_HANDLE(argv[0])->type == &vm_store_type) {
        const VFiles *f = vm_source_of(argv[0])->files;
        for (uint32_t i = 0; i < f->n; i++)
            verify_path(&v, f->paths[i]);
    } else {
        vm_arg_error(vm, 0, "a path or a store", argv[0]);
    }
    return av;
}

/* rows(x): every tagset of a tagset file or store, or a query's result,
 * as an array of maps. */
Value nat_rows(VM *vm, int argc, Value *argv)
{
    (void)argc;
    if (IS_HANDLE(argv[0]) && AS_HANDLE(argv[0])->type == &vm_query_type)
        return vm_query_run(vm, argv[0]);
    bool stream = IS_HANDLE(argv[0]) && AS_HANDLE(argv[0])->type == &vm_text_rows_type;
    if (!stream && (!IS_HANDLE(argv[0]) || !AS_HANDLE(argv[0])->type->next))
        vm_arg_error(vm, 0, "a tagset file, a store, a query or text rows", argv[0]);
    Value it = stream ? AS_HANDLE(argv[0])->type->iter(vm, argv[0]) : argv[0];
    if (stream)
        vm_iter_push(vm, argv, it);     /* its files closed as a raise leaves */
    VHandle *h = AS_HANDLE(it);
    VArray *a = vm_array_new(vm, 0);
    Value av = v_obj(a);
    vm_push_root(vm, av);
    int64_t cursor = 0;
    Value x, y;
    while (h->type->next(vm, h->data, &cursor, &x, &y))
        vm_array_push(vm, a, x);
    if (stream)
        vm_iter_close(vm, argv);
    vm_pop_root(vm, 1);
    return av;
}

/* ---- time ------------------------------------------------------------- */

Value nat_totime(VM *vm, int argc, Value *argv)
{
    (void)argc;
    VStr *s = vm_arg_str(vm, argv, 0);
    int64_t t;
    if (st_fieldtext_time(s->data, s->len, &t) != 0 &&
        st_fieldtext_compact_time(s->data, s->len, &t) != 0)
        return v_nil();
    return v_int(t);
}

Value nat_isotime(VM *vm, int argc, Value *argv)
{
    (void)argc;
    char buf[40];
    st_time_format(vm_arg_int(vm, argv, 0), buf, sizeof buf);
    return v_obj(vm_str_cstr(vm, buf));
}
