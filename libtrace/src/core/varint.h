/* varint.h: LEB128 varints, zig-zag integers and little-endian words, as .tkb and the sorter's runs store them. */
#ifndef TK_CORE_VARINT_H
#define TK_CORE_VARINT_H

#include <stdint.h>

#include "buf.h"

#define TK__VARINT_MAX 10 /* bytes of the longest varint */

static inline uint64_t tk__zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t tk__unzz(uint64_t u)
{
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}
static inline void tk__put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}
static inline uint32_t tk__get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
/* Writes v at p (room for TK__VARINT_MAX bytes); returns the end. */
static inline unsigned char *tk__varint_at(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}
/* Appends v to b, which must have TK__VARINT_MAX bytes of room. */
static inline void tk__put_varint(tk__buf *b, uint64_t v)
{
	unsigned char *s = (unsigned char *)b->p + b->len;
	b->len += (size_t)(tk__varint_at(s, v) - s);
}
/* Appends v to b, growing it; 0 or TK_ERR_NOMEM. */
static inline int tk__buf_varint(tk__buf *b, uint64_t v)
{
	if (TK__UNLIKELY(b->len + TK__VARINT_MAX + 1 > b->cap) && tk__buf_reserve(b, TK__VARINT_MAX + 1))
		return TK_ERR_NOMEM;
	tk__put_varint(b, v);
	return 0;
}
/* Reads a varint; sets *bad past the end or beyond 10 bytes. */
static inline uint64_t tk__get_varint(const unsigned char **pp, const unsigned char *e, int *bad)
{
	const unsigned char *p = *pp;
	if (TK__LIKELY(p < e && *p < 0x80)) {
		*pp = p + 1;
		return *p;
	}
	uint64_t v = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		if (p >= e)
			break;
		unsigned c = *p++;
		v |= (uint64_t)(c & 0x7f) << sh;
		if (c < 0x80) {
			*pp = p;
			return v;
		}
	}
	*bad = 1;
	*pp = e;
	return 0;
}

#endif
