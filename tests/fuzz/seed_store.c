/* store_seed: writes small, valid tagset files as a seed corpus for fuzz_store. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "store/tagfile.h"

/* n tagsets; the values after the key change every run rows (RLE's runs). */
static int seed(const char *dir, const char *name, const char *schema, uint32_t n, uint32_t run,
                st_codec codec)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    st_err err;
    st_schema *s = st_schema_parse(schema, strlen(schema), 1, 1, &err);
    st_write_opts o;
    st_write_opts_default(&o);
    o.block_size = 4096;
    o.codec = codec;
    o.label = name;
    st_writer *w = s ? st_writer_create(path, s, &o, &err) : NULL;
    unsigned char row[256] = {0}, tags[64 * 64] = {0};
    int rc = w ? 0 : -1;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        /* Keys ascend in the first 8 bytes; the rest varies a little. */
        uint64_t k = (uint64_t)i * 3;
        memcpy(row, &k, 8);
        for (uint32_t j = 8; j < s->row_size && j < sizeof row; j++)
            row[j] = (unsigned char)((i / run * 7 + j) % 2);
        for (uint32_t j = 0; j < sizeof tags; j++)
            tags[j] = (unsigned char)((i + j) % 2);
        rc = st_writer_append(w, row, tags, s->tag_size ? i % 4 : 0, &err);
    }
    if (rc == 0)
        rc = st_writer_commit(w, &err);
    else
        st_writer_abort(w);
    if (rc < 0)
        fprintf(stderr, "store_seed: %s\n", err.msg);
    st_schema_free(s);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: store_seed DIR\n");
        return 2;
    }
    const char *calls = "key onum: u64\nkey ts: time\ntagset state: enum(open, billed, closed)\n"
                        "tag sys: enum(RICS, BILL, SWITCH)\ntag bsid: u16\ntag dnum: char[4]\n";
    const char *events = "key ev: u64\ntagset e: f64\ntagset n: i8\ntagset ok: bool\ntagset c: char[3]\n";
    int rc = seed(argv[1], "calls-lz4", calls, 300, 1, ST_CODEC_LZ4) |
             seed(argv[1], "calls-raw", calls, 40, 1, ST_CODEC_NONE) |
             seed(argv[1], "events-hc", events, 600, 1, ST_CODEC_LZ4HC) |
             seed(argv[1], "events-runs", events, 900, 37, ST_CODEC_LZ4) |
             seed(argv[1], "empty", events, 0, 1, ST_CODEC_LZ4);
    return rc ? 1 : 0;
}
