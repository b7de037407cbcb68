/*
 * util.c — error reporting, checked arithmetic helpers, small buffers and file reading. Allocation is in
 * alloc.c.
 */
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int err_v(abacus_error *err, int code, int64_t offset, const char *where, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	err->code = code;
	err->offset = offset;
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	snprintf(err->where, sizeof err->where, "%s", where ? where : "");
	return code;
}

int ab_err(abacus_error *err, int code, const char *where, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_v(err, code, -1, where, fmt, ap);
	va_end(ap);
	return code;
}

int ab_err_at(abacus_error *err, int code, int64_t offset, const char *where, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_v(err, code, offset, where, fmt, ap);
	va_end(ap);
	return code;
}

void ab_err_clear(abacus_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
	err->where[0] = '\0';
	err->offset = -1;
}

const char *abacus_strerror(int code)
{
	switch (code) {
	case ABACUS_OK: return "ok";
	case ABACUS_ENOMEM: return "out of memory";
	case ABACUS_EINVAL: return "invalid argument";
	case ABACUS_EPARSE: return "parse error";
	case ABACUS_EGRAPH: return "invalid graph";
	case ABACUS_ESHAPE: return "shape error";
	case ABACUS_EUNSUPPORTED: return "unsupported";
	case ABACUS_EIO: return "I/O error";
	case ABACUS_ELIMIT: return "limit exceeded";
	case ABACUS_ELIBRARY: return "library failure";
	default: return "unknown error";
	}
}

int ab_numel(const int64_t *dims, int rank, int64_t *out)
{
	int64_t n = 1;
	int zero = 0;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0)
			return -1;
		if (dims[i] == 0)
			zero = 1;
		else if (ab_mul(n, dims[i], &n))
			return -1;
	}
	*out = zero ? 0 : n;
	return 0;
}

void ab_buf_printf(ab_buf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if (b->data && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 256;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *p = ab_realloc(b->data, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->data = p;
		b->cap = cap;
	}
}

void ab_buf_free(ab_buf *b)
{
	ab_free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int ab_read_file(char **out, size_t *len, const char *path, size_t max_len, abacus_error *err)
{
	*out = NULL;
	*len = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return ab_err(err, ABACUS_EIO, path, "cannot open '%s': %s", path, strerror(errno));
	int rc = 0;
	char *data = NULL;
	size_t n = 0, cap = 0;
	/* A regular file's size is known: one buffer of that size (plus the byte that sees end of file)
	 * instead of a doubling sequence that copies the data each time. */
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size < max_len) {
		cap = (size_t)st.st_size + 1;
		if (!(data = ab_malloc(cap))) {
			fclose(f);
			return ab_err(err, ABACUS_ENOMEM, path, "out of memory reading '%s'", path);
		}
	}
	for (;;) {
		if (n == cap) {
			if (cap >= max_len) {
				rc = ab_err(err, ABACUS_ELIMIT, path, "'%s' is larger than the %zu-byte limit", path, max_len);
				goto out;
			}
			cap = cap ? cap * 2 : 65536;
			if (cap > max_len)
				cap = max_len;
			char *p = ab_realloc(data, cap);
			if (!p) {
				rc = ab_err(err, ABACUS_ENOMEM, path, "out of memory reading '%s'", path);
				goto out;
			}
			data = p;
		}
		size_t got = fread(data + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f))
				rc = ab_err(err, ABACUS_EIO, path, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
	}
out:
	fclose(f);
	if (rc) {
		ab_free(data);
		return rc;
	}
	*out = data;
	*len = n;
	return 0;
}
