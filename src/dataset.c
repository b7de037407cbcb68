/*
 * dataset.c — reads the measurement CSV that `abacus profile` writes (docs/DATASET.md): RFC 4180 fields
 * (quotes, doubled quotes, embedded commas and newlines), a header naming the columns, one row per
 * measured configuration. Columns are found by name, so extra columns are ignored and order is free.
 *
 * Every malformed input is an error naming the file, the line and the column: an unterminated quote, a
 * row with the wrong number of fields, a number that does not parse, a missing required column.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_FIELDS 256
#define MAX_ROWS 10000000

struct abacus_dataset {
	abacus_row *rows;
	size_t n_rows;
	char **strings;      /* owned field copies, freed with the dataset */
	size_t n_strings, cap_strings;
};

typedef struct cursor {
	const char *p, *end;
	size_t line;
} cursor;

/* Parses one field into buf (unquoted); returns 1 at end of record, 0 at a comma, -1 on error. */
static int next_field(cursor *c, ab_buf *buf, int *eof)
{
	buf->len = 0;
	ab_buf_printf(buf, "%s", ""); /* allocates on first use, so an empty field is "" and never NULL */
	*eof = 0;
	if (c->p < c->end && *c->p == '"') {
		c->p++;
		for (;;) {
			if (c->p >= c->end)
				return -1; /* unterminated quote */
			char ch = *c->p++;
			if (ch == '"') {
				if (c->p < c->end && *c->p == '"') {
					c->p++;
					ab_buf_printf(buf, "\"");
					continue;
				}
				break;
			}
			if (ch == '\n')
				c->line++;
			ab_buf_printf(buf, "%c", ch);
		}
	} else {
		const char *s = c->p;
		while (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r')
			c->p++;
		if (c->p > s)
			ab_buf_printf(buf, "%.*s", (int)(c->p - s), s);
		else
			ab_buf_printf(buf, "%s", "");
	}
	if (buf->oom)
		return -2;
	if (c->p < c->end && *c->p == ',') {
		c->p++;
		return 0;
	}
	if (c->p < c->end && *c->p == '\r')
		c->p++;
	if (c->p < c->end && *c->p == '\n') {
		c->p++;
		c->line++;
		return 1;
	}
	if (c->p >= c->end) {
		*eof = 1;
		return 1;
	}
	return -1; /* a quote followed by something other than a separator */
}

enum {
	COL_NETWORK, COL_GRAPH, COL_INPUT, COL_BATCH, COL_OPT, COL_HW, COL_THREADS, COL_REPEAT, COL_STATUS,
	COL_TIME, COL_CALIB, COL_MEM, COL_PERSIST, COL_PARAMS, COL_BUSY, COL_ERROR, COL_MACHINE, COL_RUNTIME, COL_STAMP,
	N_COLS
};
static const struct { const char *name; int required; } columns[N_COLS] = {
	{ "network", 1 }, { "graph", 1 }, { "input_shape", 1 }, { "batch", 1 }, { "optimizer", 1 }, { "hw", 1 },
	{ "threads", 0 }, { "repeat", 0 }, { "status", 1 }, { "time_s", 1 }, { "calib_s", 0 },
	{ "memory_bytes", 1 }, { "persistent_bytes", 0 }, { "params", 0 }, { "busy_other", 0 }, { "error", 0 },
	{ "machine", 0 }, { "runtime", 0 }, { "timestamp", 0 },
};
/* Files written before measurement protocol 2 have neither column: their machine was not recorded, and the
 * one runtime the collector knew then was Debian's PyTorch 1.13.1. */
static const char unrecorded[] = "unrecorded", torch_1_13_1[] = "torch-1.13.1";

static int keep(abacus_dataset *d, const char *s, const char **out)
{
	if (d->n_strings == d->cap_strings) {
		size_t cap = d->cap_strings ? d->cap_strings * 2 : 1024;
		char **p = ab_realloc(d->strings, cap * sizeof *p);
		if (!p)
			return -1;
		d->strings = p;
		d->cap_strings = cap;
	}
	char *c = ab_strdup(s);
	if (!c)
		return -1;
	d->strings[d->n_strings++] = c;
	*out = c;
	return 0;
}

static int parse_num(const char *s, double *out)
{
	if (!*s) {
		*out = NAN; /* empty: not measured (failed rows) */
		return 0;
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || end == s || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

void abacus_dataset_free(abacus_dataset *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_strings; i++)
		ab_free(d->strings[i]);
	ab_free(d->strings);
	ab_free(d->rows);
	ab_free(d);
}

/* Days from 1970-01-01 to year-month-day of the proleptic Gregorian calendar (the civil-from-days inverse:
 * years counted from March, so the leap day ends a year). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;                                 /* [0, 399] */
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* [0, 146096] */
	return era * 146097 + doe - 719468;
}

/* A row's `timestamp` (UTC, YYYY-MM-DDTHH:MM:SSZ, as abacus profile writes it) in seconds since the epoch:
 * NaN for an empty field, -1 for one that is not such a time. Written by hand rather than with strptime and
 * timegm, which are not C11 and read the local time zone's rules. */
static int parse_stamp(const char *s, double *out)
{
	if (!*s) {
		*out = NAN;
		return 0;
	}
	int v[6], at = 0;
	static const char sep[6] = { '-', '-', 'T', ':', ':', 'Z' };
	static const int width[6] = { 4, 2, 2, 2, 2, 2 };
	for (int k = 0; k < 6; k++) {
		v[k] = 0;
		for (int i = 0; i < width[k]; i++, at++) {
			if (s[at] < '0' || s[at] > '9')
				return -1;
			v[k] = v[k] * 10 + (s[at] - '0');
		}
		if (s[at++] != sep[k])
			return -1;
	}
	static const int mdays[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (v[0] % 4 == 0 && v[0] % 100 != 0) || v[0] % 400 == 0;
	if (s[at] || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > mdays[v[1] - 1] || (v[1] == 2 && v[2] == 29 && !leap) ||
	    v[3] > 23 || v[4] > 59 || v[5] > 60)
		return -1;
	*out = (double)(days_from_civil(v[0], v[1], v[2]) * 86400 + v[3] * 3600 + v[4] * 60 + v[5]);
	return 0;
}

/* One field of a row into its column k (-1: a column this reader does not know, skipped): strings are
 * kept, numbers checked (integers where the column holds counts). */
static int store_field(abacus_dataset *d, abacus_row *row, int k, const char *s, const char *name, size_t line,
                       abacus_error *err)
{
	double v;
	const char **text = NULL;
	switch (k) {
	case COL_NETWORK: text = &row->network; break;
	case COL_GRAPH: text = &row->graph; break;
	case COL_INPUT: text = &row->input_shape; break;
	case COL_OPT: text = &row->optimizer; break;
	case COL_HW: text = &row->hw; break;
	case COL_STATUS: text = &row->status; break;
	case COL_ERROR: text = &row->error; break;
	/* Empty machine and runtime keep the defaults ("unrecorded", torch-1.13.1). */
	case COL_MACHINE:
		if (!*s)
			return 0;
		text = &row->machine;
		break;
	case COL_RUNTIME:
		if (!*s)
			return 0;
		text = &row->runtime;
		break;
	case COL_STAMP:
		if (parse_stamp(s, &row->measured_at))
			return ab_err(err, ABACUS_EPARSE, name,
			              "%s line %zu, column 'timestamp': '%s' is not a UTC time like 2026-12-02T15:22:03Z", name,
			              line, s);
		return 0;
	case -1: return 0;
	}
	if (text)
		return keep(d, s, text) ? ab_err(err, ABACUS_ENOMEM, name, "out of memory") : 0;
	if (parse_num(s, &v))
		return ab_err(err, ABACUS_EPARSE, name, "%s line %zu, column '%s': '%s' is not a number", name, line,
		              columns[k].name, s);
	if (k != COL_TIME && k != COL_CALIB && k != COL_BUSY && !isnan(v) && !(v == floor(v) && fabs(v) < AB_I64_DOUBLE_MAX))
		return ab_err(err, ABACUS_EPARSE, name, "%s line %zu, column '%s': '%s' is not an integer", name, line,
		              columns[k].name, s);
	switch (k) {
	case COL_BATCH: row->batch = isnan(v) ? 0 : (int64_t)v; break;
	case COL_THREADS: row->threads = isnan(v) ? 0 : (int64_t)v; break;
	case COL_REPEAT: row->repeat = isnan(v) ? 0 : (int64_t)v; break;
	case COL_TIME: row->time_s = v; break;
	case COL_CALIB: row->calib_s = v; break;
	case COL_MEM: row->memory_bytes = isnan(v) ? -1 : (int64_t)v; break;
	case COL_PERSIST: row->persistent_bytes = isnan(v) ? -1 : (int64_t)v; break;
	case COL_PARAMS: row->params = isnan(v) ? -1 : (int64_t)v; break;
	case COL_BUSY: row->busy_other = v; break;
	}
	return 0;
}

/* The header: col_of[i] is the column of field i (-1: unknown); every required column must be there. */
static int read_header(cursor *c, ab_buf *buf, int col_of[MAX_FIELDS], int *n_hdr, int *eof, const char *name,
                       abacus_error *err)
{
	int have[N_COLS] = { 0 }, r;
	do {
		r = next_field(c, buf, eof);
		if (r < 0)
			return r == -2 ? ab_err(err, ABACUS_ENOMEM, name, "out of memory")
			               : ab_err(err, ABACUS_EPARSE, name, "%s line %zu: malformed quoted field (unterminated or "
			                        "stray quote)", name, c->line);
		if (*n_hdr == MAX_FIELDS)
			return ab_err(err, ABACUS_ELIMIT, name, "%s: more than %d columns in the header", name, MAX_FIELDS);
		col_of[*n_hdr] = -1;
		for (int k = 0; k < N_COLS; k++)
			if (!strcmp(buf->data, columns[k].name)) {
				col_of[*n_hdr] = k;
				have[k] = 1;
			}
		(*n_hdr)++;
	} while (r == 0);
	for (int k = 0; k < N_COLS; k++)
		if (columns[k].required && !have[k])
			return ab_err(err, ABACUS_EPARSE, name, "%s: the header has no '%s' column (is this an abacus profile CSV?)",
			              name, columns[k].name);
	return 0;
}

int abacus_dataset_load(abacus_dataset **out, const char *data, size_t len, const char *name, abacus_error *err)
{
	*out = NULL;
	ab_err_clear(err);
	if (!name)
		name = "<buffer>";
	abacus_dataset *d = ab_calloc(1, sizeof *d);
	ab_buf buf = { 0 };
	int rc = 0, col_of[MAX_FIELDS], n_hdr = 0, eof = 0, r;
	size_t cap = 0;
	if (!d)
		return ab_err(err, ABACUS_ENOMEM, name, "out of memory");
	cursor c = { data, data + len, 1 };
	if (len == 0) {
		rc = ab_err(err, ABACUS_EPARSE, name, "%s is empty: expected a header line", name);
		goto out;
	}
	if ((rc = read_header(&c, &buf, col_of, &n_hdr, &eof, name, err)))
		goto out;
	/* Rows. */
	while (!eof && c.p < c.end) {
		size_t line = c.line;
		if (d->n_rows == cap) {
			if (cap >= MAX_ROWS) {
				rc = ab_err(err, ABACUS_ELIMIT, name, "%s: more than %d rows", name, MAX_ROWS);
				goto out;
			}
			cap = cap ? cap * 2 : 256;
			abacus_row *p = ab_realloc(d->rows, cap * sizeof *p);
			if (!p)
				goto oom;
			d->rows = p;
		}
		abacus_row *row = &d->rows[d->n_rows];
		memset(row, 0, sizeof *row);
		row->line = line;
		row->repeat = 0;
		row->threads = 0;
		row->calib_s = row->busy_other = row->measured_at = NAN;
		row->persistent_bytes = row->params = -1;
		row->machine = unrecorded;
		row->runtime = torch_1_13_1;
		int f = 0;
		do {
			r = next_field(&c, &buf, &eof);
			if (r < 0)
				goto bad_field;
			if (f >= n_hdr) {
				rc = ab_err(err, ABACUS_EPARSE, name, "%s line %zu: more fields than the header's %d", name, line, n_hdr);
				goto out;
			}
			if ((rc = store_field(d, row, col_of[f++], buf.data, name, line, err)))
				goto out;
		} while (r == 0);
		if (f == 1 && buf.len == 0)
			continue; /* a blank line */
		if (f != n_hdr) {
			rc = ab_err(err, ABACUS_EPARSE, name, "%s line %zu: %d fields, the header has %d (a truncated row?)", name,
			            line, f, n_hdr);
			goto out;
		}
		if (!row->status || !row->network || !row->graph) {
			rc = ab_err(err, ABACUS_EPARSE, name, "%s line %zu: missing network, graph or status", name, line);
			goto out;
		}
		if (!strcmp(row->status, "ok") && (row->batch <= 0 || !(row->time_s > 0) || row->memory_bytes <= 0)) {
			rc = ab_err(err, ABACUS_EPARSE, name,
			            "%s line %zu: an 'ok' row needs a positive batch, time_s and memory_bytes", name, line);
			goto out;
		}
		d->n_rows++;
	}
	goto out;
bad_field:
	rc = r == -2 ? ab_err(err, ABACUS_ENOMEM, name, "out of memory")
	             : ab_err(err, ABACUS_EPARSE, name, "%s line %zu: malformed quoted field (unterminated or stray quote)",
	                      name, c.line);
	goto out;
oom:
	rc = ab_err(err, ABACUS_ENOMEM, name, "out of memory");
out:
	ab_buf_free(&buf);
	if (rc) {
		abacus_dataset_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

int abacus_dataset_load_file(abacus_dataset **out, const char *path, abacus_error *err)
{
	char *data;
	size_t len;
	*out = NULL;
	int rc = ab_read_file(&data, &len, path, (size_t)1 << 32, err);
	if (rc)
		return rc;
	rc = abacus_dataset_load(out, data, len, path, err);
	ab_free(data);
	return rc;
}

size_t abacus_dataset_n_rows(const abacus_dataset *d)
{
	return d->n_rows;
}

const abacus_row *abacus_dataset_row(const abacus_dataset *d, size_t i)
{
	return i < d->n_rows ? &d->rows[i] : NULL;
}
