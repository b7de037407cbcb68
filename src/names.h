/*
 * names.h — a string → index hash table (open addressing, linear probing). Keys are borrowed: the
 * caller keeps them alive while the table is in use.
 */
#ifndef ABACUS_NAMES_H
#define ABACUS_NAMES_H

#include <stddef.h>
#include <stdint.h>

typedef struct ab_names {
	const char **keys;
	int *vals;
	uint64_t *hashes;   /* full hash per slot: most probes end without a string compare */
	size_t cap;   /* a power of two */
	size_t n;
} ab_names;

int ab_names_init(ab_names *m, size_t hint);           /* 0 or -1 on allocation failure */
void ab_names_free(ab_names *m);
int ab_names_get(const ab_names *m, const char *key);  /* index, or -1 */
int ab_names_put(ab_names *m, const char *key, int val); /* 0 or -1 on allocation failure */
/* The same with the key's hash computed once by the caller (names are long: hashing dominates). */
uint64_t ab_names_hash(const char *key);
int ab_names_get_h(const ab_names *m, const char *key, uint64_t h);
int ab_names_put_h(ab_names *m, const char *key, uint64_t h, int val);

#endif
