/* sha256: the SHA-256 digest (FIPS 180-4), for checking deliveries against
 * the digests their senders wrote beside them (sha256() and sha256_file()). */
#ifndef COMB_SHA256_H
#define COMB_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct Sha256 {
    uint32_t h[8];
    uint64_t bytes;         /* fed so far */
    unsigned char buf[64];  /* a block being filled */
    size_t nbuf;
} Sha256;

void sha256_init(Sha256 *s);
void sha256_feed(Sha256 *s, const void *p, size_t n);
/* The digest as 64 lowercase hex digits and a NUL; s is spent. */
void sha256_hex(Sha256 *s, char out[65]);

#endif
