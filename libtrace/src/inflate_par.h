/* inflate_par.h: one raw deflate stream inflated on several threads, its bytes given out in order (inflate_par.c). */
#ifndef TK_INFLATE_PAR_H
#define TK_INFLATE_PAR_H

#include <stddef.h>
#include <stdint.h>

typedef struct tk__ipar tk__ipar;

/* Up to cap bytes of the input from offset off: count, 0 at its end, < 0 on
 * an error. Called from several threads at once. */
typedef long (*tk__ipar_pread)(void *ctx, uint64_t off, unsigned char *dst, size_t cap);

/* Compressed bytes per part, where not 0 (tests make it small), instead of
 * what tk__ipar_start is given. */
extern size_t tk__ipar_part_bytes;
/* For tests: parts given out, and of them those inflated again by the
 * caller (their found start was not where the part before ended). */
extern uint64_t tk__ipar_parts_out, tk__ipar_parts_redone;

/* Starts `threads` threads (named tk-inflate) on the deflate stream at byte
 * `start` of the input, cut into shares of `share` compressed bytes; NULL
 * where none could be started or memory is short. */
tk__ipar *tk__ipar_start(tk__ipar_pread rd, void *ctx, uint64_t start, size_t share, unsigned threads);

/* The next inflated bytes in order, up to cap: > 0; 0 once the stream has
 * ended and its gzip trailer (CRC-32 and length, right after it) matched;
 * -1 where it cannot go on (damage, a cut, a trailer that does not match,
 * a read error, memory): every byte before that point has been given out,
 * and the stream is to be inflated again by one thread from its start,
 * skipping them, to meet the problem with its message. */
long tk__ipar_read(tk__ipar *P, unsigned char *dst, size_t cap);

/* After tk__ipar_read returned 0: the input's offset after the trailer. */
uint64_t tk__ipar_end(const tk__ipar *P);

/* The input's offset up to which the parts given out reach (for progress). */
uint64_t tk__ipar_in_pos(const tk__ipar *P);

/* Stops the threads and frees everything. */
void tk__ipar_free(tk__ipar *P);

#endif
