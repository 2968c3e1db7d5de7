/* sha256: the SHA-256 digest of FIPS 180-4, written from the standard: a
 * block of 64 bytes at a time through 64 rounds; the last block is padded
 * with 0x80, zeros and the length in bits. On x86-64 CPUs with the SHA
 * extensions the rounds run on them (about four times faster: the dock
 * digests every tap it takes). */
#include "config.h"

#include <string.h>

#include "vm/cpu.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SHA_NI 1
#endif

#include "vm/sha256.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void block(Sha256 *s, const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
    uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
    s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

#ifdef SHA_NI
/* The 64 rounds of one block on the SHA extensions: the state as ABEF and
 * CDGH, four rounds a step, the schedule's next four words from the last
 * sixteen (Intel's SHA extensions paper, "Intel SHA Extensions", 2013). */
__attribute__((target("sha,sse4.1")))
static void block_ni(Sha256 *s, const unsigned char *p)
{
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&s->h[0]), 0xB1);
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&s->h[4]), 0x1B);
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);         /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xF0);              /* CDGH */
    __m128i abef = s0, cdgh = s1, w[4];
    for (int i = 0; i < 16; i++) {
        if (i < 4)
            w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)), swap);
        else    /* w[i & 3] held the words of step i - 4 */
            w[i & 3] = _mm_sha256msg2_epu32(
                _mm_add_epi32(_mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]),
                              _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4)),
                w[(i + 3) & 3]);
        __m128i m = _mm_add_epi32(w[i & 3], _mm_loadu_si128((const __m128i *)(const void *)&K[4 * i]));
        s1 = _mm_sha256rnds2_epu32(s1, s0, m);
        s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
    t = _mm_shuffle_epi32(s0, 0x1B);                /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);               /* DCHG */
    _mm_storeu_si128((__m128i *)(void *)&s->h[0], _mm_blend_epi16(t, s1, 0xF0));   /* DCBA */
    _mm_storeu_si128((__m128i *)(void *)&s->h[4], _mm_alignr_epi8(s1, t, 8));      /* HGFE */
}

#endif

static bool extensions = true;

void sha256_use_extensions(bool on) { extensions = on; }

/* One block through the rounds, on the SHA extensions when the CPU has them. */
static void rounds(Sha256 *s, const unsigned char *p)
{
#ifdef SHA_NI
    static int has = -1;
    if (has < 0) {
        has = vm_cpu_has(VM_CPU_SHA) && vm_cpu_has(VM_CPU_SSE4_1);
    }
    if (has && extensions) {
        block_ni(s, p);
        return;
    }
#endif
    block(s, p);
}

void sha256_init(Sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->nbuf = 0;
}

void sha256_feed(Sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->bytes += n;
    if (s->nbuf) {
        size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take, p += take, n -= take;
        if (s->nbuf < 64)
            return;
        rounds(s, s->buf);
        s->nbuf = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        rounds(s, p);
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

void sha256_hex(Sha256 *s, char out[65])
{
    uint64_t bits = s->bytes * 8;
    unsigned char pad[72] = {0x80};
    size_t npad = (s->nbuf < 56 ? 56 : 120) - s->nbuf;
    for (int i = 0; i < 8; i++)
        pad[npad + i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_feed(s, pad, npad + 8);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        unsigned byte = (s->h[i / 4] >> (24 - 8 * (i % 4))) & 0xff;
        out[2 * i] = hex[byte >> 4];
        out[2 * i + 1] = hex[byte & 15];
    }
    out[64] = 0;
}
