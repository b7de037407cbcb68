/*
 * names.c — string → index hash table used to resolve tensor names while loading.
 * The load factor stays below 1/2, so probes are short and a lookup always finds an empty slot.
 */
#include "names.h"

#include <stdint.h>
#include <string.h>

#include "util.h"

/* Eight bytes per step (tensor names like "/features/3/blocks.1/attn/MatMul_2_output_0" are long and every
 * load hashes tens of thousands of them; byte-at-a-time FNV-1a took 12 % of a load), then a final mix so
 * that the low bits used for the slot depend on every byte. */
uint64_t ab_names_hash(const char *s)
{
	size_t n = strlen(s);
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	for (; n >= 8; s += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	uint64_t w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

int ab_names_init(ab_names *m, size_t hint)
{
	size_t cap = 16;
	while (cap < hint * 2)
		cap *= 2;
	m->keys = ab_calloc(cap, sizeof *m->keys);
	m->vals = ab_calloc(cap, sizeof *m->vals);
	m->hashes = ab_calloc(cap, sizeof *m->hashes);
	m->cap = cap;
	m->n = 0;
	if (!m->keys || !m->vals || !m->hashes) {
		ab_names_free(m);
		return -1;
	}
	return 0;
}

void ab_names_free(ab_names *m)
{
	ab_free(m->keys);
	ab_free(m->vals);
	ab_free(m->hashes);
	m->keys = NULL;
	m->vals = NULL;
	m->hashes = NULL;
	m->cap = m->n = 0;
}

int ab_names_get(const ab_names *m, const char *key)
{
	return ab_names_get_h(m, key, ab_names_hash(key));
}

int ab_names_get_h(const ab_names *m, const char *key, uint64_t h)
{
	if (!m->cap)
		return -1;
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return -1;
		if (m->hashes[i] == h && !strcmp(m->keys[i], key))
			return m->vals[i];
	}
}

static void insert(const char **keys, int *vals, uint64_t *hashes, size_t cap, const char *key, uint64_t h, int val)
{
	size_t i = h & (cap - 1);
	while (keys[i] && !(hashes[i] == h && !strcmp(keys[i], key)))
		i = (i + 1) & (cap - 1);
	keys[i] = key;
	vals[i] = val;
	hashes[i] = h;
}

int ab_names_put(ab_names *m, const char *key, int val)
{
	return ab_names_put_h(m, key, ab_names_hash(key), val);
}

int ab_names_put_h(ab_names *m, const char *key, uint64_t h, int val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap * 2;
		const char **keys = ab_calloc(cap, sizeof *keys);
		int *vals = ab_calloc(cap, sizeof *vals);
		uint64_t *hashes = ab_calloc(cap, sizeof *hashes);
		if (!keys || !vals || !hashes) {
			ab_free(keys);
			ab_free(vals);
			ab_free(hashes);
			return -1;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i])
				insert(keys, vals, hashes, cap, m->keys[i], m->hashes[i], m->vals[i]);
		ab_free(m->keys);
		ab_free(m->vals);
		ab_free(m->hashes);
		m->keys = keys;
		m->vals = vals;
		m->hashes = hashes;
		m->cap = cap;
	}
	if (ab_names_get_h(m, key, h) < 0)
		m->n++;
	insert(m->keys, m->vals, m->hashes, m->cap, key, h, val);
	return 0;
}
