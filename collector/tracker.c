/*
 * tracker.c — the allocator tracker preloaded into the collector's workers (docs/PROTOCOL.md, "Memory").
 *
 * Built as build/$(MODE)/libabacus_tracker.so and loaded with LD_PRELOAD, it interposes every glibc
 * allocation entry point that PyTorch, Python and their libraries reach (malloc calloc realloc free
 * posix_memalign aligned_alloc memalign valloc pvalloc, and reallocarray, which glibc would otherwise route
 * around realloc) and keeps two numbers: the live byte count, measured as malloc_usable_size() of every
 * block, and the highest value it has reached since the last reset. The worker reads and resets them through
 * ctypes (abacus_tracker_live, abacus_tracker_peak, abacus_tracker_reset_peak).
 *
 * Invariants
 *   - live == sum of malloc_usable_size() over the blocks handed out by the real allocator and not yet freed
 *     (blocks from before the tracker resolved the real functions are in the bootstrap arena and count 0).
 *   - peak >= live at every moment after an update; reset_peak sets peak = live.
 *   - Both are updated with atomics: torch runs intra-op and autograd threads, so blocks are allocated and
 *     freed on several threads. A block's size is read while the caller still owns it (before the real
 *     free, after the real malloc), so no lock is needed.
 *
 * Bootstrap: dlsym() itself may call calloc (for its error buffer) before the real calloc is known. Those
 * early requests are served from a small static arena; its blocks are never reused, never counted, and
 * free() of them is a no-op. realloc() of an arena block copies it into a real block.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The interface read through ctypes. */
long long abacus_tracker_live(void);
long long abacus_tracker_peak(void);
void abacus_tracker_reset_peak(void);
long long abacus_tracker_calls(void);

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef void (*free_fn)(void *);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_alloc_fn)(size_t, size_t);
typedef void *(*valloc_fn)(size_t);

static struct {
	malloc_fn malloc;
	calloc_fn calloc;
	realloc_fn realloc;
	reallocarray_fn reallocarray;
	free_fn free;
	posix_memalign_fn posix_memalign;
	aligned_alloc_fn aligned_alloc;
	aligned_alloc_fn memalign;
	valloc_fn valloc;
	valloc_fn pvalloc;
} real;

static atomic_llong live_bytes;
static atomic_llong peak_bytes;
static atomic_llong n_calls;
/* 0 = not started, 1 = resolving (allocations go to the arena), 2 = ready. */
static atomic_int state;

/* ---- bootstrap arena ------------------------------------------------------------------------------ */

#define ARENA_SIZE (64 * 1024)
static alignas(max_align_t) unsigned char arena[ARENA_SIZE];
static atomic_size_t arena_used;

static int in_arena(const void *p)
{
	return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_SIZE;
}

/* Bump allocation, 16-byte aligned (or `align` when larger); each block is preceded by its size so that
 * realloc can copy it out. Returns NULL when the arena is exhausted. */
static void *arena_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	uintptr_t base = (uintptr_t)arena;
	for (;;) {
		size_t used = atomic_load(&arena_used);
		/* Align the absolute address, leaving room for the size header in front of the block. */
		uintptr_t addr = (base + used + sizeof(size_t) + align - 1) / align * align;
		size_t start = (size_t)(addr - base);
		if (start > ARENA_SIZE || size > ARENA_SIZE - start)
			return NULL;
		if (atomic_compare_exchange_weak(&arena_used, &used, start + size)) {
			memcpy(arena + start - sizeof(size_t), &size, sizeof size);
			return arena + start;
		}
	}
}

static size_t arena_block_size(const void *p)
{
	size_t size;
	memcpy(&size, (const unsigned char *)p - sizeof(size_t), sizeof size);
	return size;
}

/* ---- resolving the real functions ---------------------------------------------------------------- */

static void resolve(void)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&state, &expected, 1))
		return; /* another thread (or a nested call from dlsym) is resolving; the arena serves it */
	/* Function pointers are converted through a union: ISO C has no void* to function pointer cast. */
#define RESOLVE(field, name)                        \
	do {                                            \
		union { void *p; __typeof__(real.field) f; } u_; \
		u_.p = dlsym(RTLD_NEXT, name);              \
		real.field = u_.f;                          \
	} while (0)
	RESOLVE(malloc, "malloc");
	RESOLVE(calloc, "calloc");
	RESOLVE(realloc, "realloc");
	RESOLVE(reallocarray, "reallocarray");
	RESOLVE(free, "free");
	RESOLVE(posix_memalign, "posix_memalign");
	RESOLVE(aligned_alloc, "aligned_alloc");
	RESOLVE(memalign, "memalign");
	RESOLVE(valloc, "valloc");
	RESOLVE(pvalloc, "pvalloc");
#undef RESOLVE
	atomic_store(&state, 2);
}

/* 1 when the real functions are known; 0 while bootstrapping (the caller uses the arena). */
static int ready(void)
{
	if (atomic_load_explicit(&state, memory_order_acquire) == 2)
		return 1;
	resolve();
	return atomic_load_explicit(&state, memory_order_acquire) == 2;
}

__attribute__((constructor)) static void tracker_init(void)
{
	(void)ready();
}

/* ---- accounting ---------------------------------------------------------------------------------- */

static void account_alloc(void *p)
{
	if (!p)
		return;
	long long n = (long long)malloc_usable_size(p);
	long long now = atomic_fetch_add_explicit(&live_bytes, n, memory_order_relaxed) + n;
	long long peak = atomic_load_explicit(&peak_bytes, memory_order_relaxed);
	while (now > peak &&
	       !atomic_compare_exchange_weak_explicit(&peak_bytes, &peak, now, memory_order_relaxed, memory_order_relaxed))
		;
	atomic_fetch_add_explicit(&n_calls, 1, memory_order_relaxed);
}

static void account_free(void *p)
{
	if (!p)
		return;
	atomic_fetch_sub_explicit(&live_bytes, (long long)malloc_usable_size(p), memory_order_relaxed);
}

/* ---- the interposed functions -------------------------------------------------------------------- */

void *malloc(size_t size)
{
	if (!ready())
		return arena_alloc(size, 16);
	void *p = real.malloc(size);
	account_alloc(p);
	return p;
}

void *calloc(size_t n, size_t size)
{
	if (!ready()) {
		if (size && n > SIZE_MAX / size)
			return NULL;
		return arena_alloc(n * size, 16); /* static storage is already zero */
	}
	void *p = real.calloc(n, size);
	account_alloc(p);
	return p;
}

void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (!ready())
		return; /* cannot happen: a real block exists only once the functions are resolved */
	account_free(p);
	real.free(p);
}

void *realloc(void *p, size_t size)
{
	if (!ready())
		return arena_alloc(size, 16);
	if (p && in_arena(p)) {
		void *q = real.malloc(size);
		if (q) {
			size_t old = arena_block_size(p);
			memcpy(q, p, old < size ? old : size);
			account_alloc(q);
		}
		return q;
	}
	if (!p) {
		void *q = real.realloc(NULL, size);
		account_alloc(q);
		return q;
	}
	/* The old size is read before the call: afterwards the block may belong to another thread. A failed
	 * realloc leaves the block as it was; realloc(p, 0) frees it and returns NULL (glibc). */
	long long old = (long long)malloc_usable_size(p);
	void *q = real.realloc(p, size);
	if (!q && size)
		return NULL;
	atomic_fetch_sub_explicit(&live_bytes, old, memory_order_relaxed);
	account_alloc(q);
	return q;
}

void *reallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n * size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	if (!ready()) {
		void *p = arena_alloc(size, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	int r = real.posix_memalign(out, align, size);
	if (r == 0)
		account_alloc(*out);
	return r;
}

void *aligned_alloc(size_t align, size_t size)
{
	if (!ready())
		return arena_alloc(size, align);
	void *p = real.aligned_alloc(align, size);
	account_alloc(p);
	return p;
}

void *memalign(size_t align, size_t size)
{
	if (!ready())
		return arena_alloc(size, align);
	void *p = real.memalign(align, size);
	account_alloc(p);
	return p;
}

void *valloc(size_t size)
{
	if (!ready())
		return arena_alloc(size, 4096);
	void *p = real.valloc(size);
	account_alloc(p);
	return p;
}

void *pvalloc(size_t size)
{
	if (!ready())
		return arena_alloc((size + 4095) / 4096 * 4096, 4096);
	void *p = real.pvalloc(size);
	account_alloc(p);
	return p;
}

/* ---- the ctypes interface ------------------------------------------------------------------------ */

long long abacus_tracker_live(void)
{
	return atomic_load(&live_bytes);
}

long long abacus_tracker_peak(void)
{
	return atomic_load(&peak_bytes);
}

/* Starts a new peak window at the current live count. A concurrent allocation may raise the peak again
 * right away, which is the point. */
void abacus_tracker_reset_peak(void)
{
	atomic_store(&peak_bytes, atomic_load(&live_bytes));
}

/* Number of allocations seen (diagnostics: a tracker that is not preloaded reads 0). */
long long abacus_tracker_calls(void)
{
	return atomic_load(&n_calls);
}
