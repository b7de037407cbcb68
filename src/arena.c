/*
 * arena.c — bump allocation in blocks obtained from ab_malloc (so allocation-failure injection reaches
 * it). A request larger than half a block gets a block of its own, so a 1 GB tensor does not waste a
 * doubling sequence of blocks.
 */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "util.h"

#define MIN_BLOCK ((size_t)16 << 10)
#define MAX_BLOCK ((size_t)4 << 20)
#define ALIGN (alignof(max_align_t))

struct ab_arena_block {
	ab_arena_block *next;
	size_t size, used;            /* bytes of data[], bytes handed out */
	alignas(max_align_t) unsigned char data[];
};

void ab_arena_init(ab_arena *a, size_t hint)
{
	a->head = NULL;
	a->next_size = hint < MIN_BLOCK ? MIN_BLOCK : hint > MAX_BLOCK ? MAX_BLOCK : hint;
}

static ab_arena_block *new_block(size_t size)
{
	if (size > SIZE_MAX - sizeof(ab_arena_block))
		return NULL;
	ab_arena_block *b = ab_malloc(sizeof *b + size);
	if (b) {
		b->size = size;
		b->used = 0;
		b->next = NULL;
	}
	return b;
}

void *ab_arena_alloc(ab_arena *a, size_t n)
{
	if (n > SIZE_MAX - ALIGN)
		return NULL;
	n = (n + ALIGN - 1) & ~(ALIGN - 1);
	if (!n)
		n = ALIGN;
	ab_arena_block *h = a->head;
	if (h && h->size - h->used >= n) {
		void *p = h->data + h->used;
		h->used += n;
		return p;
	}
	if (!a->next_size)
		a->next_size = MIN_BLOCK;
	if (n > a->next_size / 2) {
		/* A big request: its own block, kept behind the current one so that filling goes on there. */
		ab_arena_block *b = new_block(n);
		if (!b)
			return NULL;
		b->used = n;
		if (h) {
			b->next = h->next;
			h->next = b;
		} else {
			a->head = b;
		}
		return b->data;
	}
	ab_arena_block *b = new_block(a->next_size);
	if (!b)
		return NULL;
	if (a->next_size < MAX_BLOCK)
		a->next_size *= 2;
	b->next = h;
	a->head = b;
	b->used = n;
	return b->data;
}

void *ab_arena_calloc(ab_arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	void *p = ab_arena_alloc(a, n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

char *ab_arena_strndup(ab_arena *a, const char *s, size_t n)
{
	char *d = ab_arena_alloc(a, n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

char *ab_arena_strdup(ab_arena *a, const char *s)
{
	return ab_arena_strndup(a, s, strlen(s));
}

static void free_chain(ab_arena_block *b)
{
	while (b) {
		ab_arena_block *next = b->next;
		ab_free(b);
		b = next;
	}
}

void ab_arena_reset(ab_arena *a)
{
	ab_arena_block *h = a->head;
	if (!h)
		return;
	free_chain(h->next);
	h->next = NULL;
	/* A block that holds one big request is not worth keeping: the next one may be small. */
	if (h->size > MAX_BLOCK) {
		ab_free(h);
		a->head = NULL;
		return;
	}
	h->used = 0;
}

void ab_arena_free(ab_arena *a)
{
	free_chain(a->head);
	a->head = NULL;
}
