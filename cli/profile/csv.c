/*
 * csv.c — the measurement CSV that `abacus profile` appends to (columns: docs/DATASET.md).
 *
 * Invariants of a file this code has touched:
 *   - the first record is the header, exactly csv_columns;
 *   - every record has N_COLS fields and ends with '\n' (fields quoted per RFC 4180 when they hold a comma,
 *     a quote, CR or LF);
 *   - a row reaches the file in one write() followed by fsync(), so a killed collector leaves at most one
 *     incomplete record at the end; the next csv_open cuts it off (the configuration is measured again);
 *   - one writer at a time: the file is flock()ed while open;
 *   - a row is written only while the path still names the file that was opened. A file replaced under a
 *     running profile (git stash or checkout of a tracked dataset, an editor saving a copy, mv) would
 *     otherwise take every later row into the unlinked old file, lost when the process exits: that happened
 *     to 29 TensorFlow rows on 2026-12-06 (recovered from /proc/PID/fd). Instead the rows the old file holds,
 *     and the row at hand, are saved beside it (orphan_save) and the run stops with an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"

const char *const csv_columns[N_COLS] = {
	"network", "graph", "input_shape", "batch", "optimizer", "hw", "threads", "repeat", "status", "error",
	"time_s", "time_min_s", "time_p90_s", "time_cv", "iterations", "calib_s", "memory_bytes",
	"persistent_bytes", "params", "torch_version", "torchvision_version", "cpu_model", "cores", "protocol",
	"timestamp", "busy_other", "blas", "machine", "runtime",
};

/* ---- reading --------------------------------------------------------------------------------------- */

typedef struct record {
	char *fields[N_COLS + 1]; /* unescaped; one extra to notice a record that is too long */
	size_t n;                 /* number of fields (may exceed N_COLS + 1: only counted) */
} record;

static void record_clear(record *r)
{
	for (size_t i = 0; i < r->n && i < N_COLS + 1; i++)
		free(r->fields[i]);
	r->n = 0;
}

static int record_add(record *r, const char *s, size_t len)
{
	if (r->n < N_COLS + 1) {
		char *f = strndup(s, len);
		if (!f)
			return -1;
		r->fields[r->n] = f;
	}
	r->n++;
	return 0;
}

typedef enum { REC_COMPLETE, REC_INCOMPLETE, REC_MALFORMED, REC_NOMEM } rec_status;

/* Parses one record starting at buf[*pos]; on REC_COMPLETE *pos moves past its newline. */
static rec_status parse_record(const char *buf, size_t len, size_t *pos, record *r)
{
	size_t i = *pos;
	char *tmp = malloc(len - i + 1); /* a field is never longer than the rest of the file */
	if (!tmp)
		return REC_NOMEM;
	rec_status st = REC_INCOMPLETE;
	for (;;) {
		size_t k = 0;
		if (i < len && buf[i] == '"') {
			i++;
			for (;;) {
				if (i >= len)
					goto out; /* EOF inside quotes */
				if (buf[i] == '"') {
					if (i + 1 < len && buf[i + 1] == '"') {
						tmp[k++] = '"';
						i += 2;
						continue;
					}
					i++;
					break;
				}
				tmp[k++] = buf[i++];
			}
			if (i < len && buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n')
				i++;
			if (i < len && buf[i] != ',' && buf[i] != '\n') {
				st = REC_MALFORMED;
				goto out;
			}
		} else {
			while (i < len && buf[i] != ',' && buf[i] != '\n')
				tmp[k++] = buf[i++];
			if (k && tmp[k - 1] == '\r' && i < len && buf[i] == '\n')
				k--;
		}
		if (i >= len)
			goto out; /* no newline yet: incomplete */
		if (record_add(r, tmp, k)) {
			st = REC_NOMEM;
			goto out;
		}
		if (buf[i++] == '\n') {
			st = REC_COMPLETE;
			*pos = i;
			goto out;
		}
	}
out:
	free(tmp);
	return st;
}

/* ---- keys ---------------------------------------------------------------------------------------------- */

/* The machine is part of the key: the same configuration measured on another machine is another row. */
static char *key_string(const char *network, const char *shape, const char *batch, const char *opt, const char *hw,
                        const char *repeat, const char *machine)
{
	size_t n = strlen(network) + strlen(shape) + strlen(batch) + strlen(opt) + strlen(hw) + strlen(repeat) +
	           strlen(machine) + 7;
	char *k = malloc(n);
	if (k)
		snprintf(k, n, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", network, shape, batch, opt, hw, repeat, machine);
	return k;
}

/* Integers are compared as numbers: "08" and "8" are the same batch. */
static void canon_int(char *buf, size_t len, const char *text)
{
	char *end;
	long long v = strtoll(text, &end, 10);
	if (end != text && !*end)
		snprintf(buf, len, "%lld", v);
	else
		snprintf(buf, len, "%s", text);
}

static size_t key_lower_bound(const csv_out *c, const char *k)
{
	size_t lo = 0, hi = c->n_keys;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(c->keys[mid], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Takes ownership of k. */
static int key_insert(csv_out *c, char *k)
{
	size_t at = key_lower_bound(c, k);
	if (at < c->n_keys && !strcmp(c->keys[at], k)) {
		free(k);
		return 0;
	}
	if (c->n_keys == c->cap_keys) {
		size_t nc = c->cap_keys ? c->cap_keys * 2 : 256;
		char **nk = realloc(c->keys, nc * sizeof *nk);
		if (!nk) {
			free(k);
			return -1;
		}
		c->keys = nk;
		c->cap_keys = nc;
	}
	memmove(c->keys + at + 1, c->keys + at, (c->n_keys - at) * sizeof *c->keys);
	c->keys[at] = k;
	c->n_keys++;
	return 0;
}

static char *key_of_fields(char *const f[N_COLS])
{
	char b[32], r[32];
	canon_int(b, sizeof b, f[COL_BATCH]);
	canon_int(r, sizeof r, f[COL_REPEAT]);
	return key_string(f[COL_NETWORK], f[COL_INPUT_SHAPE], b, f[COL_OPTIMIZER], f[COL_HW], r, f[COL_MACHINE]);
}

int csv_has(const csv_out *c, const csv_key *k)
{
	char b[32], r[32];
	snprintf(b, sizeof b, "%lld", (long long)k->batch);
	snprintf(r, sizeof r, "%lld", (long long)k->repeat);
	char *s = key_string(k->network, k->input_shape, b, k->optimizer, k->hw, r, k->machine);
	if (!s)
		return 0;
	size_t at = key_lower_bound(c, s);
	int found = at < c->n_keys && !strcmp(c->keys[at], s);
	free(s);
	return found;
}

/* ---- writing ------------------------------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void put_field(FILE *m, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, m);
		return;
	}
	fputc('"', m);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', m);
		fputc(*s, m);
	}
	fputc('"', m);
}

/* Copies what the open file holds, and `line`, into "<path>.orphaned-<pid>" (a new file); 0 or -1. */
static int orphan_save(const csv_out *c, const char *line, size_t len, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s.orphaned-%ld", c->path, (long)getpid());
	int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	char buf[65536];
	off_t at = 0;
	ssize_t r;
	int rc = 0;
	while (!rc && (r = pread(c->fd, buf, sizeof buf, at)) != 0) {
		if (r < 0) {
			rc = errno == EINTR ? 0 : -1;
			continue;
		}
		rc = write_all(fd, buf, (size_t)r);
		at += r;
	}
	if (!rc)
		rc = write_all(fd, line, len) || fsync(fd) ? -1 : 0;
	return close(fd) || rc ? -1 : 0;
}

/* The opened file is no longer what `path` names (replaced, moved or deleted). */
static int replaced(const csv_out *c)
{
	struct stat a, b;
	if (!c->path || fstat(c->fd, &a))
		return 0;
	return stat(c->path, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

/* Writes one record with a single write() and fsyncs; on failure the file is cut back to where it was. */
static int append_record(csv_out *c, const char *const fields[], size_t n, char *err, size_t errlen)
{
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', m);
		put_field(m, fields[i]);
	}
	fputc('\n', m);
	if (fclose(m)) {
		free(line);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (replaced(c)) {
		char saved[PATH_MAX + 64];
		if (orphan_save(c, line, len, saved, sizeof saved))
			snprintf(err, errlen, "%s was replaced or removed while this run wrote to it (a git stash or checkout "
			         "of the dataset?), and saving its rows beside it failed (%s): they are only in this "
			         "process's open file, /proc/%ld/fd/%d", c->path, strerror(errno), (long)getpid(), c->fd);
		else
			snprintf(err, errlen, "%s was replaced or removed while this run wrote to it (a git stash or checkout "
			         "of the dataset?): the rows it held, and this one, are saved in %s; put back the rows "
			         "missing from %s (they share its header) and run again", c->path, saved, c->path);
		free(line);
		return -1;
	}
	off_t before = lseek(c->fd, 0, SEEK_END);
	int rc = before < 0 || write_all(c->fd, line, len) || fsync(c->fd) ? -1 : 0;
	if (rc) {
		snprintf(err, errlen, "cannot write the output: %s", strerror(errno));
		if (before >= 0 && ftruncate(c->fd, before) == 0)
			(void)fsync(c->fd);
	}
	free(line);
	return rc;
}

int csv_append(csv_out *c, const char *const fields[N_COLS], char *err, size_t errlen)
{
	const char *f[N_COLS];
	for (int i = 0; i < N_COLS; i++)
		f[i] = fields[i] ? fields[i] : "";
	if (append_record(c, f, N_COLS, err, errlen))
		return -1;
	c->rows++;
	char *k = key_of_fields((char *const *)f);
	if (!k || key_insert(c, k)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* ---- opening ------------------------------------------------------------------------------------------- */

static int read_whole(int fd, char **out, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st))
		return -1;
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -1;
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = pread(fd, buf + n, cap - 1 - n, (off_t)n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static void fsync_dir_of(const char *path)
{
	char *d = strdup(path);
	if (!d)
		return;
	char *slash = strrchr(d, '/');
	const char *dir = ".";
	if (slash) {
		*slash = '\0';
		dir = slash == d ? "/" : d;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(d);
}

/* The header at the start of buf (len > 0): *keep = its end when it is complete and ours, 0 when the file was
 * cut short inside it (a kill right at the start: started over). -1 with err for another file's header. */
static int read_header(const char *buf, size_t len, size_t *pos, size_t *keep, const char *path, char *err,
                       size_t errlen)
{
	record r = { { 0 }, 0 };
	int rc = 0;
	rec_status st = parse_record(buf, len, pos, &r);
	if (st == REC_NOMEM) {
		snprintf(err, errlen, "out of memory reading %s", path);
		rc = -1;
	} else if (st == REC_MALFORMED) {
		snprintf(err, errlen, "%s is not a CSV file this collector wrote (malformed header); use another --out", path);
		rc = -1;
	} else if (st == REC_COMPLETE) {
		size_t i = 0;
		while (i < r.n && i < N_COLS && !strcmp(r.fields[i], csv_columns[i]))
			i++;
		if (i < N_COLS || r.n != N_COLS) {
			if (i < r.n && i < N_COLS)
				snprintf(err, errlen, "%s has a different header: column %zu is '%.60s', expected '%s'; "
				         "write to a new file (--out) or convert the old one", path, i + 1, r.fields[i], csv_columns[i]);
			else if (i == COL_MACHINE && r.n == COL_MACHINE)
				snprintf(err, errlen, "%s was written before measurement protocol 2 (no machine and runtime "
				         "columns); convert it with '/usr/bin/python3 scripts/migrate_csv.py %s' (its rows get "
				         "machine 'unrecorded') or write to a new file (--out)", path, path);
			else
				snprintf(err, errlen, "%s has a different header: %zu columns, expected %d; write to a new "
				         "file (--out) or convert the old one", path, r.n, N_COLS);
			rc = -1;
		} else {
			*keep = *pos;
		}
	}
	record_clear(&r);
	return rc;
}

static int open_csv(csv_out *c, const char *path, int readonly, char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	c->fd = -1;
	if (!readonly && !(c->path = strdup(path))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char *buf = NULL;
	size_t len = 0, pos = 0, line = 1;
	record r = { { 0 }, 0 };
	int created = access(path, F_OK) != 0;
	if (readonly && created)
		return 0;
	c->fd = readonly ? open(path, O_RDONLY | O_CLOEXEC) : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (c->fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		goto bad;
	}
	if (!readonly && flock(c->fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen, "%s is being written by another 'abacus profile' (it holds a lock on it); wait for it "
		         "or use another --out", path);
		goto bad;
	}
	if (created)
		fsync_dir_of(path);
	if (read_whole(c->fd, &buf, &len)) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		goto bad;
	}

	/* The header. A file cut short inside its header (a kill right at the start) is started over. */
	size_t keep = 0;
	if (len > 0 && read_header(buf, len, &pos, &keep, path, err, errlen))
		goto bad;
	if (keep)
		line++;

	/* The rows. */
	while (keep && pos < len) {
		size_t start = pos;
		if (buf[pos] == '\n') { /* a blank line: tolerated, skipped */
			pos++;
			keep = pos;
			line++;
			continue;
		}
		rec_status st = parse_record(buf, len, &pos, &r);
		if (st == REC_NOMEM) {
			snprintf(err, errlen, "out of memory reading %s", path);
			goto bad;
		}
		if (st == REC_INCOMPLETE) {
			record_clear(&r);
			keep = start;
			break;
		}
		if (st == REC_MALFORMED) {
			snprintf(err, errlen, "%s:%zu: malformed CSV record (a stray quote); repair or remove that line", path, line);
			goto bad;
		}
		if (r.n != N_COLS) {
			snprintf(err, errlen, "%s:%zu: %zu fields, expected %d; repair or remove that line", path, line, r.n, N_COLS);
			goto bad;
		}
		char *k = key_of_fields(r.fields);
		if (!k || key_insert(c, k)) {
			snprintf(err, errlen, "out of memory reading %s", path);
			goto bad;
		}
		c->rows++;
		for (const char *p = buf + start; p < buf + pos; p++)
			line += *p == '\n';
		keep = pos;
		record_clear(&r);
	}

	if (readonly) {
		free(buf);
		close(c->fd);
		c->fd = -1;
		return 0;
	}
	/* Cut off what a killed run left half-written, then make sure the header is there. */
	if (keep < len) {
		if (ftruncate(c->fd, (off_t)keep) || fsync(c->fd)) {
			snprintf(err, errlen, "cannot repair %s: %s", path, strerror(errno));
			goto bad;
		}
		c->repaired_bytes = len - keep;
	}
	if (keep == 0 && append_record(c, csv_columns, N_COLS, err, errlen))
		goto bad;
	free(buf);
	return 0;
bad:
	record_clear(&r);
	free(buf);
	csv_close(c);
	return -1;
}

int csv_open(csv_out *c, const char *path, char *err, size_t errlen)
{
	return open_csv(c, path, 0, err, errlen);
}

int csv_read_keys(csv_out *c, const char *path, char *err, size_t errlen)
{
	return open_csv(c, path, 1, err, errlen);
}

void csv_close(csv_out *c)
{
	if (c->fd >= 0)
		close(c->fd); /* releases the lock */
	c->fd = -1;
	free(c->path);
	c->path = NULL;
	for (size_t i = 0; i < c->n_keys; i++)
		free(c->keys[i]);
	free(c->keys);
	c->keys = NULL;
	c->n_keys = c->cap_keys = 0;
}
