/* pb.h: the protobuf wire format, as pftrace.c writes and reads it: tags, varints, length-delimited fields written in place, and a cursor over a message's fields. */
#ifndef TK_FORMATS_PB_H
#define TK_FORMATS_PB_H

#include "internal.h"

enum { TK__PB_VARINT = 0, TK__PB_I64 = 1, TK__PB_LEN = 2, TK__PB_I32 = 5 };

/* ---- writing: every call needs the buffer to have room (tk__pb_room) ---- */

#define TK__PB_ROOM 64 /* bytes that any one of the small writes below may add */

static inline int tk__pb_room(tk__buf *b, size_t n)
{
	return b->len + n + 1 > b->cap ? tk__buf_reserve(b, n) : 0;
}
static inline void tk__pb_key(tk__buf *b, unsigned field, unsigned wt)
{
	tk__put_varint(b, (uint64_t)field << 3 | wt);
}
static inline void tk__pb_uint(tk__buf *b, unsigned field, uint64_t v)
{
	tk__pb_key(b, field, TK__PB_VARINT);
	tk__put_varint(b, v);
}
static inline void tk__pb_fixed64(tk__buf *b, unsigned field, uint64_t v)
{
	tk__pb_key(b, field, TK__PB_I64);
	for (int i = 0; i < 8; i++)
		b->p[b->len++] = (char)(v >> (8 * i));
}
/* A length-delimited field: 0 or TK_ERR_NOMEM. */
static inline int tk__pb_bytes(tk__buf *b, unsigned field, const void *p, size_t n)
{
	if (tk__pb_room(b, n + 2 * TK__VARINT_MAX))
		return TK_ERR_NOMEM;
	tk__pb_key(b, field, TK__PB_LEN);
	tk__put_varint(b, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}
/* A nested message: tk__pb_begin_in writes its key and leaves `room`
 * bytes for its length; tk__pb_end_in writes the length (in as few bytes
 * as it needs, the body moved when that is not `room`) once the message
 * is complete: 0, TK_ERR_NOMEM, or TK_ERR_LIMIT for a message of 256 MiB
 * or more. */
static inline size_t tk__pb_begin_in(tk__buf *b, unsigned field, size_t room)
{
	tk__pb_key(b, field, TK__PB_LEN);
	b->len += room;
	return b->len;
}
static inline int tk__pb_end_in(tk__buf *b, size_t mark, size_t room)
{
	size_t n = b->len - mark;
	if (room == 1 && n < 128) {
		b->p[mark - 1] = (char)n;
		return 0;
	}
	if (n >= (1u << 28))
		return TK_ERR_LIMIT;
	unsigned char tmp[TK__VARINT_MAX];
	size_t k = (size_t)(tk__varint_at(tmp, n) - tmp);
	if (k > room && tk__pb_room(b, k - room))
		return TK_ERR_NOMEM;
	char *at = b->p + mark - room;
	if (k != room)
		memmove(at + k, b->p + mark, n);
	memcpy(at, tmp, k);
	b->len = mark - room + k + n;
	return 0;
}
/* Four bytes of room: a length under 256 MiB always fits. */
static inline size_t tk__pb_begin(tk__buf *b, unsigned field)
{
	return tk__pb_begin_in(b, field, 4);
}
static inline int tk__pb_end(tk__buf *b, size_t mark)
{
	return tk__pb_end_in(b, mark, 4);
}
/* One byte of room, for a message mostly under 128 bytes (an annotation). */
static inline size_t tk__pb_begin_small(tk__buf *b, unsigned field)
{
	return tk__pb_begin_in(b, field, 1);
}
static inline int tk__pb_end_small(tk__buf *b, size_t mark)
{
	return tk__pb_end_in(b, mark, 1);
}

/* ---- reading ---- */

typedef struct tk__pb {
	const unsigned char *p, *e;
	int bad; /* a field ran past the end, or a wire type is unknown */
} tk__pb;

typedef struct tk__pb_field {
	unsigned num, wt;
	uint64_t v;                  /* VARINT, I64, I32 */
	const unsigned char *data;   /* LEN */
	size_t len;
} tk__pb_field;

/* The next field: 1, 0 at the end, -1 when malformed (c->bad). */
static inline int tk__pb_next(tk__pb *c, tk__pb_field *f)
{
	f->v = 0;
	f->data = NULL;
	f->len = 0;
	if (c->p >= c->e || c->bad)
		return c->bad ? -1 : 0;
	uint64_t key = tk__get_varint(&c->p, c->e, &c->bad);
	f->num = (unsigned)(key >> 3);
	f->wt = (unsigned)(key & 7);
	if (c->bad || key >> 32 || f->num == 0)
		goto bad;
	switch (f->wt) {
	case TK__PB_VARINT:
		f->v = tk__get_varint(&c->p, c->e, &c->bad);
		return c->bad ? -1 : 1;
	case TK__PB_I64:
	case TK__PB_I32: {
		size_t k = f->wt == TK__PB_I64 ? 8 : 4;
		if ((size_t)(c->e - c->p) < k)
			goto bad;
		f->v = 0;
		for (size_t i = 0; i < k; i++)
			f->v |= (uint64_t)c->p[i] << (8 * i);
		c->p += k;
		return 1;
	}
	case TK__PB_LEN: {
		uint64_t n = tk__get_varint(&c->p, c->e, &c->bad);
		if (c->bad || n > (uint64_t)(c->e - c->p))
			goto bad;
		f->data = c->p;
		f->len = (size_t)n;
		c->p += n;
		return 1;
	}
	default:
		goto bad;
	}
bad:
	c->bad = 1;
	return -1;
}

static inline tk__pb tk__pb_of(const void *p, size_t n)
{
	tk__pb c = {(const unsigned char *)p, (const unsigned char *)p + n, 0};
	return c;
}

#endif
