/*
 * arena.h — a bump allocator for the many small, same-lifetime objects of a load: protobuf-c's decoded
 * messages (freed together once the graph is built) and the graph's strings and index arrays (freed
 * together with the graph). One ab_malloc per block instead of one per object: loading a 16,500-node
 * graph made ~150,000 malloc/free calls before, a third of its time.
 */
#ifndef ABACUS_ARENA_H
#define ABACUS_ARENA_H

#include <stddef.h>

typedef struct ab_arena_block ab_arena_block;

typedef struct ab_arena {
	ab_arena_block *head;   /* the block being filled; older blocks follow through ->next */
	size_t next_size;       /* size of the next block (doubles up to a bound) */
} ab_arena;

#define AB_ARENA_INIT { NULL, 0 }

/* `hint`: expected total bytes (the first block's size), 0 for a default. */
void ab_arena_init(ab_arena *a, size_t hint);
/* n bytes aligned for any type, or NULL when out of memory (or n is absurd). Never freed one by one. */
void *ab_arena_alloc(ab_arena *a, size_t n);
void *ab_arena_calloc(ab_arena *a, size_t n, size_t size);
char *ab_arena_strdup(ab_arena *a, const char *s);
char *ab_arena_strndup(ab_arena *a, const char *s, size_t n);
/* Forgets every allocation but keeps the current block for reuse (frees the others). */
void ab_arena_reset(ab_arena *a);
/* Frees every block; the arena is empty and reusable afterwards. */
void ab_arena_free(ab_arena *a);

#endif
