/*
 * util.h — internal helpers shared by every module: allocation (with a test hook that makes the n-th
 * allocation fail), error reporting into abacus_error, checked int64 arithmetic, and a growable byte
 * buffer. Nothing here prints or exits.
 */
#ifndef ABACUS_UTIL_H
#define ABACUS_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "abacus.h"

/* Allocation (alloc.c). All library memory goes through these so that allocation-failure injection covers
 * it; a block from them is freed with ab_free only (it carries a header). */
void *ab_malloc(size_t n);
void *ab_calloc(size_t n, size_t size);
void *ab_realloc(void *p, size_t n);
char *ab_strdup(const char *s);
char *ab_strndup(const char *s, size_t n);
void ab_free(void *p);

/* Test hook: the `n`-th allocation from now on (1-based) and every later one fails; 0 disables.
 * Returns the number of allocations made since the last call. Only tests call it; unlike the cache of freed
 * large blocks (alloc.c, behind a mutex), it is not thread-safe by design. */
long ab_alloc_fail_after(long n);

/* Fills `err` (which may be NULL) and returns `code`, so callers can `return ab_err(...)`. */
int ab_err(abacus_error *err, int code, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int ab_err_at(abacus_error *err, int code, int64_t offset, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* ABACUS_EINVAL naming the option struct `what` when its version field is not `want` (abacus.h). */
int ab_check_version(const char *what, unsigned int got, unsigned int want, abacus_error *err);
/* The caller's abacus_config of version 1 or 2 as the current struct (later fields at their defaults). */
int ab_config_read(abacus_config *out, const abacus_config *in, abacus_error *err);
/* A machine id's widest vector ISA (abacus_config.isa): known (0 and *out its static name, or NULL for NULL)
 * or an error naming the known ones; and whether it has AVX (NULL: the dataset's machines, which do). */
int ab_check_isa(const char **out, const char *isa, abacus_error *err);
int ab_isa_has_avx(const char *isa);
/* Resets `err` to "no error". */
void ab_err_clear(abacus_error *err);

/* The caller's training options as this library reads them (config.c): *out becomes a current-version copy
 * of `in`, which may be a version-1 struct (shorter: only its fields are read, and the fields it lacks get
 * their defaults) or a current one. ABACUS_EINVAL for any other version. */
int ab_train_opts_read(abacus_train_opts *out, const abacus_train_opts *in, abacus_error *err);

/* Progress reports to a caller's callback (progress.c; abacus_train_opts.progress says the contract):
 * ab_progress_start reports done = 0 of `total`, each ab_progress_step one more unit done. A NULL callback
 * makes both do nothing. */
typedef struct ab_progress {
	void (*fn)(size_t done, size_t total, void *payload);
	void *payload;
	size_t done, total;
} ab_progress;
void ab_progress_start(ab_progress *pg, const abacus_train_opts *o, size_t total);
void ab_progress_step(ab_progress *pg);

/* Checked arithmetic: return 0 and store the result, or -1 on overflow. */
static inline int ab_mul(int64_t a, int64_t b, int64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}
static inline int ab_add(int64_t a, int64_t b, int64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? -1 : 0;
}
/* *acc += v (v >= 0), saturating at INT64_MAX: byte counts of absurd shapes stay absurd instead of wrapping,
 * and the checked totals then report the overflow. */
static inline void ab_sat_add(int64_t *acc, int64_t v)
{
	if (__builtin_add_overflow(*acc, v, acc))
		*acc = INT64_MAX;
}

/* *acc *= v (v >= 0), saturating at INT64_MAX, as ab_sat_add. */
static inline void ab_sat_mul(int64_t *acc, int64_t v)
{
	if (__builtin_mul_overflow(*acc, v, acc))
		*acc = INT64_MAX;
}

/* Product of dims[0..rank) with overflow and negativity checks; -1 on failure. A zero dim makes the product
 * 0 but does not excuse the others: the product of the non-zero dims must fit too, because per-sample sizes
 * (numel / batch), strides and per-axis products are taken from the same dims later. */
int ab_numel(const int64_t *dims, int rank, int64_t *out);

/* The one bound for double → int64 conversions everywhere: a double of magnitude below it converts to an
 * int64 exactly as far as the double goes (2^63 ≈ 9.22e18, rounded down so that products computed in
 * doubles keep a margin). */
#define AB_I64_DOUBLE_MAX 9.2e18
/* Checked double → int64: 0 and *out = (int64_t)d, or -1 when d is NaN or |d| >= AB_I64_DOUBLE_MAX. */
static inline int ab_d2i(double d, int64_t *out)
{
	if (!(d > -AB_I64_DOUBLE_MAX && d < AB_I64_DOUBLE_MAX))
		return -1;
	*out = (int64_t)d;
	return 0;
}

/* Growable byte buffer for building strings. */
typedef struct ab_buf {
	char *data;
	size_t len, cap;
	int oom;     /* sticky: set when an append failed */
} ab_buf;
void ab_buf_printf(ab_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ab_buf_free(ab_buf *b);

/* Reads a whole file; *out is owned by the caller (ab_free). */
int ab_read_file(char **out, size_t *len, const char *path, size_t max_len, abacus_error *err);

#endif
