/* sha256: the SHA-256 digest (FIPS 180-4), for checking deliveries against
 * the digests their senders wrote beside them (sha256() and sha256_file()). */
#ifndef COMB_SHA256_H
#define COMB_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Sha256 {
    uint32_t h[8];
    uint64_t bytes;         /* fed so far */
    unsigned char buf[64];  /* a block being filled */
    size_t nbuf;
} Sha256;

void sha256_init(Sha256 *s);
/* Whether the rounds may run on the CPU's SHA extensions when it has them
 * (the default: on), or only portably: for tests, both ways. */
void sha256_use_extensions(bool on);
void sha256_feed(Sha256 *s, const void *p, size_t n);
/* The digest as 64 lowercase hex digits and a NUL; s is spent. */
void sha256_hex(Sha256 *s, char out[65]);

#endif
