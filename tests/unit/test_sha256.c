/* test_sha256: the digest against FIPS 180-4's examples, and the same
 * digest whatever pieces the bytes are fed in. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "vm/sha256.h"

static void digest(const void *p, size_t n, char out[65])
{
    Sha256 s;
    sha256_init(&s);
    sha256_feed(&s, p, n);
    sha256_hex(&s, out);
}

static void standard_examples(void **state)
{
    (void)state;
    char hex[65];
    digest("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    digest("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    digest(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    size_t n = 1000000;
    char *a = malloc(n);
    assert_non_null(a);
    memset(a, 'a', n);
    digest(a, n, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

/* Lengths around the padding's edges (55, 56, 63, 64 bytes) fed in random
 * pieces give the digest of one feed. */
static void pieces_do_not_matter(void **state)
{
    (void)state;
    unsigned char buf[300];
    srand(7);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)rand();
    for (size_t len = 0; len <= sizeof buf; len++) {
        char whole[65], parts[65];
        digest(buf, len, whole);
        Sha256 s;
        sha256_init(&s);
        for (size_t at = 0; at < len;) {
            size_t k = (size_t)rand() % 70;
            if (k > len - at)
                k = len - at;
            sha256_feed(&s, buf + at, k);
            at += k;
        }
        sha256_hex(&s, parts);
        assert_string_equal(whole, parts);
    }
}

/* The same tests with the rounds portable only (where the CPU has the SHA
 * extensions the ones above ran on them). */
static void portable(void **state)
{
    sha256_use_extensions(false);
    standard_examples(state);
    pieces_do_not_matter(state);
    sha256_use_extensions(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(standard_examples),
        cmocka_unit_test(pieces_do_not_matter),
        cmocka_unit_test(portable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
