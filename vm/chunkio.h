/* chunkio: a compiled module as bytes and back (its top-level names, its
 * main function with every nested function and constant), so that a module
 * is compiled once and loaded from a cache afterwards (lang/modcache.c).
 *
 * The bytes hold the build they were made by (vm_chunk_build), a key the
 * caller gives (the source's hash) and a checksum of the whole; loading
 * refuses bytes of another build or key, truncated or damaged bytes, and
 * code that names a register, constant, nested function, module slot,
 * native or jump target out of range, so a bad file is a miss, never a
 * crash. Little-endian on every host. */
#ifndef COMB_CHUNKIO_H
#define COMB_CHUNKIO_H

#include <stdint.h>

#include "vm/vm.h"

/* What bytecode depends on besides its source: comb's version, the
 * executable's build id (when the linker gave one), the opcode and native
 * tables. Equal fingerprints: the bytes of one load in the other. */
uint64_t vm_chunk_build(void);

/* m's encoding (m compiled, its main not run) as a string; NULL when m
 * holds a constant that has no encoding (a regex or schema literal: such a
 * module is compiled each time). Raises on out of memory. */
VStr *vm_chunk_save(VM *vm, VModule *m, uint64_t key);

/* Fills m (new, no names yet) from the n bytes at p made by vm_chunk_save
 * with key: its main function, or NULL if the bytes are not such (m may
 * then hold names: discard it). With fd, the open file the bytes are of,
 * the functions' source positions stay there (only an error message wants
 * them): on success m keeps fd (m->posfd, closed with m); else the caller
 * closes it. With fd -1 they are copied. Raises on out of memory. */
VProto *vm_chunk_load(VM *vm, VModule *m, const unsigned char *p, size_t n, uint64_t key,
                      int fd);

/* The source position of p's instruction at: from p->pos, else read from
 * its module's file; p's own (where the function starts) if the file no
 * longer holds it (cut short since). */
VmPos vm_chunk_pos(const VProto *p, size_t at);

#endif
