/*
 * alloc.c — the library's allocator. Small blocks come from malloc; large ones (AB_BIG_BLOCK and up) are
 * whole pages, mapped already populated, and once freed they are kept in a small process-wide cache for
 * the next load or analysis.
 *
 * Why: loading and analysing the largest zoo graph (swin_v2_b, 16,500 nodes) allocates ~9 MB of tables,
 * arena blocks and per-tensor arrays. glibc hands freed blocks that large back to the kernel (its mmap
 * threshold and heap trimming), so every load touches fresh pages again, and on the VMs this was built on
 * a first touch costs ~10 us (a fault that the hypervisor serves): 2,100 faults made a 12 ms load 34 ms.
 * MAP_POPULATE fills a mapping in one kernel entry, and the cache makes a long-running process (a
 * scheduler loading graph after graph) reuse pages it has already touched. The cache holds at most
 * AB_KEEP_BYTES; abacus_release_memory() returns it to the kernel.
 *
 * Every block starts with a header (its size and where it came from) so that ab_free and ab_realloc need
 * no size. Under AddressSanitizer all blocks come from malloc, so overflows of large tables are caught.
 *
 * The allocation counter exists for allocation-failure injection in tests: every loader is run with the
 * n-th allocation failing for every n and must return ABACUS_ENOMEM without leaking.
 */
#include "util.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define AB_PLAIN_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AB_PLAIN_MALLOC 1
#endif
#endif
#ifndef AB_PLAIN_MALLOC
#define AB_PLAIN_MALLOC 0
#endif

#define AB_BIG_BLOCK ((size_t)256 << 10)
#define AB_CACHE_SLOTS 32
#define AB_KEEP_BYTES ((size_t)64 << 20)

typedef union hdr {
	struct {
		size_t size;   /* bytes asked for */
		size_t mapped; /* 0: from malloc; else the length of the mapping that starts at the header */
	} h;
	max_align_t align; /* keeps the block after the header aligned for any type */
} hdr;

/* Atomic because the library promises that threads may analyse graphs at once (abacus.h), and every
 * allocation counts: a plain `long` here was a data race that ThreadSanitizer reported (make check-tsan). */
static _Atomic long alloc_count;
static _Atomic long alloc_fail_at;

long ab_alloc_fail_after(long n)
{
	long made = atomic_exchange_explicit(&alloc_count, 0, memory_order_relaxed);
	atomic_store_explicit(&alloc_fail_at, n, memory_order_relaxed);
	return made;
}

static int alloc_should_fail(void)
{
	long made = atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed) + 1;
	long at = atomic_load_explicit(&alloc_fail_at, memory_order_relaxed);
	return at > 0 && made >= at;
}

/* ---- freed mappings kept for reuse ---- */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cache_base[AB_CACHE_SLOTS];
static size_t cache_len[AB_CACHE_SLOTS];
static size_t cache_bytes;

/* The smallest cached mapping of at least `len` bytes and at most twice that (a 64 MB block is not spent
 * on a 300 kB request), taken out of the cache; NULL when none fits. */
static void *cache_take(size_t len, size_t *got)
{
	void *p = NULL;
	pthread_mutex_lock(&cache_lock);
	int best = -1;
	for (int k = 0; k < AB_CACHE_SLOTS; k++)
		if (cache_base[k] && cache_len[k] >= len && cache_len[k] / 2 <= len &&
		    (best < 0 || cache_len[k] < cache_len[best]))
			best = k;
	if (best >= 0) {
		p = cache_base[best];
		*got = cache_len[best];
		cache_bytes -= cache_len[best];
		cache_base[best] = NULL;
	}
	pthread_mutex_unlock(&cache_lock);
	return p;
}

/* Keeps a freed mapping when there is room; returns 0 when the caller must unmap it. */
static int cache_put(void *base, size_t len)
{
	int kept = 0;
	pthread_mutex_lock(&cache_lock);
	if (cache_bytes + len <= AB_KEEP_BYTES) {
		for (int k = 0; k < AB_CACHE_SLOTS; k++)
			if (!cache_base[k]) {
				cache_base[k] = base;
				cache_len[k] = len;
				cache_bytes += len;
				kept = 1;
				break;
			}
	}
	pthread_mutex_unlock(&cache_lock);
	return kept;
}

void abacus_release_memory(void)
{
	pthread_mutex_lock(&cache_lock);
	for (int k = 0; k < AB_CACHE_SLOTS; k++)
		if (cache_base[k]) {
			munmap(cache_base[k], cache_len[k]);
			cache_base[k] = NULL;
		}
	cache_bytes = 0;
	pthread_mutex_unlock(&cache_lock);
}

/* ---- blocks ---- */

static void *block_alloc(size_t n, int zero)
{
	if (alloc_should_fail())
		return NULL;
	if (n > SIZE_MAX / 2 - sizeof(hdr))
		return NULL;
	hdr *b;
	if (!AB_PLAIN_MALLOC && n >= AB_BIG_BLOCK) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t len = (sizeof(hdr) + n + page - 1) / page * page, got = len;
		b = cache_take(len, &got);
		if (b) {
			if (zero)
				memset(b + 1, 0, n);
		} else {
			void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
			if (m == MAP_FAILED)
				return NULL;
			b = m; /* fresh anonymous pages are zero */
		}
		b->h.size = n;
		b->h.mapped = got;
		return b + 1;
	}
	b = zero ? calloc(1, sizeof(hdr) + n) : malloc(sizeof(hdr) + n);
	if (!b)
		return NULL;
	b->h.size = n;
	b->h.mapped = 0;
	return b + 1;
}

void *ab_malloc(size_t n)
{
	return block_alloc(n, 0);
}

void *ab_calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return block_alloc(n * size, 1);
}

void ab_free(void *p)
{
	if (!p)
		return;
	hdr *b = (hdr *)p - 1;
	if (!b->h.mapped) {
		free(b);
		return;
	}
	if (!cache_put(b, b->h.mapped))
		munmap(b, b->h.mapped);
}

void *ab_realloc(void *p, size_t n)
{
	if (!p)
		return ab_malloc(n);
	hdr *b = (hdr *)p - 1;
	if (!b->h.mapped && n < AB_BIG_BLOCK) {
		if (alloc_should_fail() || n > SIZE_MAX / 2 - sizeof(hdr))
			return NULL;
		hdr *nb = realloc(b, sizeof(hdr) + n);
		if (!nb)
			return NULL;
		nb->h.size = n;
		return nb + 1;
	}
	if (b->h.mapped && n <= b->h.mapped - sizeof(hdr) && n >= AB_BIG_BLOCK) {
		b->h.size = n; /* fits in the pages it has */
		return p;
	}
	void *q = ab_malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, b->h.size < n ? b->h.size : n);
	ab_free(p);
	return q;
}

char *ab_strndup(const char *s, size_t n)
{
	char *d = ab_malloc(n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *ab_strdup(const char *s)
{
	return ab_strndup(s, strlen(s));
}
