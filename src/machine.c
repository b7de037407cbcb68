/*
 * machine.c — a machine profile: the rates of the work the time model prices, measured on one machine by
 * `abacus calibrate --out FILE` (collector/machine_profile.py writes the file, docs/MACHINES.md describes it).
 *
 * The file is text, one fact per line:
 *     abacus-machine-profile 1
 *     machine amd-f25m17-avx512-t1-97a5599e
 *     threads 1
 *     runtime torch-1.13.1
 *     measured 2026-12-04T20:24:24Z
 *     seconds 46.2
 *     runs 5
 *     rate conv_dense 1.042697e-11 0.0292        name, seconds per unit, relative spread over the runs
 *     ...
 *     adapt 1.083 12        (optional, `abacus adapt`: measured / predicted time on 12 rows measured here)
 * Every rate of ab_machine_rate_names must be there, finite and positive; a rate this code does not know is
 * an error too (a profile from a newer abacus must not be half read). Lines may come in any order after the
 * first; '#' starts a comment line. Every malformed line is an error naming its line number.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "util.h"

#define PROFILE_MAGIC "abacus-machine-profile"
#define PROFILE_VERSION 1
#define MAX_PROFILE_BYTES (1 << 20)

const char *const ab_machine_rate_names[AB_RATE_COUNT] = {
	"conv_dense", "conv_im2col", "conv_depthwise", "matmul_square", "matmul_thin", "matmul_batched",
	"eltwise_memory", "eltwise_cache", "dispatch", "view", "weight_stream", "optimizer_bytes",
	"optimizer_cache", "optimizer_tensors", "recurrent_step", "recurrent_weights", "norm_rows", "activation_arith",
	"reference",
};
_Static_assert(sizeof ab_machine_rate_names / sizeof ab_machine_rate_names[0] == AB_RATE_COUNT,
               "one name per machine rate");

int ab_machine_rate_index(const char *name)
{
	for (int i = 0; i < AB_RATE_COUNT; i++)
		if (!strcmp(name, ab_machine_rate_names[i]))
			return i;
	return -1;
}

/* Copies the rest of the line after `key ` into out (at most len-1 bytes, trailing spaces cut). */
static int take_word(char *out, size_t len, const char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	const char *gap = strpbrk(s, " \t");
	if (!n || n >= len || (gap && (size_t)(gap - s) < n))
		return -1; /* empty, too long, or more than one word */
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* "rate NAME SECONDS SPREAD": a known rate, given once, positive, with a spread >= 0. */
static int read_rate(abacus_machine *m, const char *val, size_t line_no, abacus_error *err)
{
	char name[64];
	double v, spread;
	int used = 0;
	if (sscanf(val, "%63s %lf %lf%n", name, &v, &spread, &used) != 3 || val[used])
		return ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: a rate line is 'rate NAME SECONDS SPREAD'",
		              line_no);
	int k = ab_machine_rate_index(name);
	if (k < 0)
		return ab_err(err, ABACUS_EUNSUPPORTED, "machine profile", "line %zu: unknown rate '%s' (a profile from "
		              "another abacus version? measure it again with 'abacus calibrate --out FILE')", line_no, name);
	if (!isnan(m->rate[k]))
		return ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: rate '%s' given twice", line_no, name);
	if (!(v > 0) || !isfinite(v) || !(spread >= 0) || !isfinite(spread))
		return ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: rate '%s' must be a positive number of "
		              "seconds with a spread >= 0", line_no, name);
	m->rate[k] = v;
	m->spread[k] = spread;
	return 0;
}

/* "shot LR BATCH C0 ... C(D-1)": one configuration of `abacus adapt` (machine.h ab_shot): the log of measured
 * over predicted time, the batch, and the AB_COMP_DIM numbers of its composition. */
static int read_shot(abacus_machine *m, const char *val, size_t line_no, abacus_error *err)
{
	if (m->n_shots >= AB_MAX_SHOTS)
		return ab_err(err, ABACUS_ELIMIT, "machine profile", "line %zu: more than %d shot lines", line_no, AB_MAX_SHOTS);
	ab_shot *grown = ab_realloc(m->shots, (m->n_shots + 1) * sizeof *grown);
	if (!grown)
		return ab_err(err, ABACUS_ENOMEM, "machine profile", "out of memory");
	m->shots = grown;
	ab_shot *s = &m->shots[m->n_shots];
	double v[AB_COMP_DIM + 2];
	int k = 0;
	const char *p = val;
	while (*p) {
		char *end;
		double x = strtod(p, &end);
		if (end == p || k == AB_COMP_DIM + 2 || !isfinite(x) || (*end && *end != ' ' && *end != '\t'))
			return ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: a shot line is 'shot LOG_RATIO BATCH' and "
			              "%d composition numbers (this abacus's; re-adapt with 'abacus adapt')", line_no, AB_COMP_DIM);
		v[k++] = x;
		p = end;
		while (*p == ' ' || *p == '\t')
			p++;
	}
	if (k != AB_COMP_DIM + 2 || !(v[1] >= 1) || fabs(v[0]) > 20)
		return ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: a shot line is 'shot LOG_RATIO BATCH' (|log "
		              "ratio| <= 20, batch >= 1) and %d composition numbers, it has %d numbers (re-adapt with 'abacus "
		              "adapt')", line_no, AB_COMP_DIM, k);
	s->lr = v[0];
	s->log_batch = log(v[1]);
	memcpy(s->comp, v + 2, sizeof s->comp);
	m->n_shots++;
	return 0;
}

int abacus_machine_load(abacus_machine **out, const char *data, size_t len, abacus_error *err)
{
	*out = NULL;
	if (len > MAX_PROFILE_BYTES)
		return ab_err(err, ABACUS_ELIMIT, "machine profile", "a machine profile of %zu bytes is over the %d-byte limit",
		              len, MAX_PROFILE_BYTES);
	abacus_machine *m = ab_calloc(1, sizeof *m);
	char *text = ab_strndup(data, len);
	if (!m || !text) {
		ab_free(m);
		ab_free(text);
		return ab_err(err, ABACUS_ENOMEM, "machine profile", "out of memory");
	}
	int rc = 0;
	if (strlen(text) != len) {
		rc = ab_err(err, ABACUS_EPARSE, "machine profile", "a NUL byte at offset %zu: not a machine profile",
		            strlen(text));
		goto out;
	}
	for (int i = 0; i < AB_RATE_COUNT; i++)
		m->rate[i] = NAN;
	m->adapt = 1;
	size_t line_no = 0;
	int seen_magic = 0;
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line_no++;
		size_t n = strlen(line);
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (!n || line[0] == '#')
			continue;
		if (!seen_magic) {
			int v = 0, used = 0;
			if (sscanf(line, PROFILE_MAGIC " %d%n", &v, &used) != 1 || line[used]) {
				rc = ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: not a machine profile (it must begin "
				            "with '" PROFILE_MAGIC " %d'; make one with 'abacus calibrate --out FILE')", line_no,
				            PROFILE_VERSION);
				goto out;
			}
			if (v != PROFILE_VERSION) {
				rc = ab_err(err, ABACUS_EUNSUPPORTED, "machine profile", "line %zu: profile version %d, this abacus reads "
				            "version %d; measure it again with 'abacus calibrate --out FILE'", line_no, v, PROFILE_VERSION);
				goto out;
			}
			seen_magic = 1;
			continue;
		}
		char *sp = strchr(line, ' ');
		if (!sp) {
			rc = ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: '%.40s' has no value", line_no, line);
			goto out;
		}
		*sp = '\0';
		const char *key = line, *val = sp + 1;
		int bad = 0;
		if (!strcmp(key, "machine")) {
			bad = take_word(m->id, sizeof m->id, val);
		} else if (!strcmp(key, "runtime")) {
			bad = take_word(m->runtime, sizeof m->runtime, val);
		} else if (!strcmp(key, "measured")) {
			bad = take_word(m->measured, sizeof m->measured, val);
		} else if (!strcmp(key, "threads") || !strcmp(key, "runs")) {
			char *end;
			errno = 0;
			long v = strtol(val, &end, 10);
			bad = errno || end == val || *end || v < 1 || v > 4096;
			if (!bad)
				*(key[0] == 't' ? &m->threads : &m->runs) = (int)v;
		} else if (!strcmp(key, "adapt")) {
			int used = 0;
			bad = sscanf(val, "%lf %d%n", &m->adapt, &m->adapt_rows, &used) != 2 || val[used] || !(m->adapt > 0) ||
			      !isfinite(m->adapt) || m->adapt_rows < 1;
		} else if (!strcmp(key, "shot")) {
			if ((rc = read_shot(m, val, line_no, err)))
				goto out;
		} else if (!strcmp(key, "seconds")) {
			char *end;
			m->seconds = strtod(val, &end);
			bad = end == val || *end || !(m->seconds >= 0) || !isfinite(m->seconds);
		} else if (!strcmp(key, "rate")) {
			if ((rc = read_rate(m, val, line_no, err)))
				goto out;
		} else {
			rc = ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: unknown field '%.40s'", line_no, key);
			goto out;
		}
		if (bad) {
			rc = ab_err(err, ABACUS_EPARSE, "machine profile", "line %zu: bad value for '%s'", line_no, key);
			goto out;
		}
	}
	if (!seen_magic) {
		rc = ab_err(err, ABACUS_EPARSE, "machine profile", "empty file: not a machine profile");
		goto out;
	}
	if (!m->id[0] || !m->threads || !m->runtime[0]) {
		rc = ab_err(err, ABACUS_EPARSE, "machine profile", "the profile lacks its %s line",
		            !m->id[0] ? "'machine'" : !m->threads ? "'threads'" : "'runtime'");
		goto out;
	}
	for (int i = 0; i < AB_RATE_COUNT; i++)
		if (isnan(m->rate[i])) {
			rc = ab_err(err, ABACUS_EPARSE, "machine profile", "the profile lacks rate '%s'", ab_machine_rate_names[i]);
			goto out;
		}
out:
	ab_free(text);
	if (rc) {
		abacus_machine_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

int abacus_machine_load_file(abacus_machine **out, const char *path, abacus_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return ab_err(err, ABACUS_EIO, path, "cannot open %s: %s", path, strerror(errno));
	char *buf = ab_malloc(MAX_PROFILE_BYTES + 1);
	if (!buf) {
		fclose(f);
		return ab_err(err, ABACUS_ENOMEM, path, "out of memory");
	}
	size_t n = fread(buf, 1, MAX_PROFILE_BYTES + 1, f);
	int rd = ferror(f);
	fclose(f);
	int rc;
	if (rd)
		rc = ab_err(err, ABACUS_EIO, path, "cannot read %s", path);
	else
		rc = abacus_machine_load(out, buf, n, err);
	if (rc && err && rc != ABACUS_EIO && rc != ABACUS_ENOMEM) {
		/* Name the file in the message: "x.machine: line 3: ..." */
		char msg[sizeof err->msg];
		int k = snprintf(msg, sizeof msg, "%.200s: ", path);
		snprintf(msg + k, sizeof msg - (size_t)k, "%.*s", (int)(sizeof msg - (size_t)k - 1), err->msg);
		memcpy(err->msg, msg, sizeof msg);
	}
	ab_free(buf);
	return rc;
}

int abacus_machine_save(char **out, size_t *len, const abacus_machine *m, abacus_error *err)
{
	ab_buf b = { 0 };
	ab_buf_printf(&b, PROFILE_MAGIC " %d\nmachine %s\nthreads %d\nruntime %s\n", PROFILE_VERSION, m->id, m->threads,
	              m->runtime);
	if (m->measured[0])
		ab_buf_printf(&b, "measured %s\n", m->measured);
	ab_buf_printf(&b, "seconds %.1f\n", m->seconds);
	if (m->runs)
		ab_buf_printf(&b, "runs %d\n", m->runs);
	if (m->adapt_rows)
		ab_buf_printf(&b, "adapt %.17g %d\n", m->adapt, m->adapt_rows);
	for (int i = 0; i < AB_RATE_COUNT; i++)
		ab_buf_printf(&b, "rate %s %.17g %.17g\n", ab_machine_rate_names[i], m->rate[i], m->spread[i]);
	for (size_t i = 0; i < m->n_shots; i++) {
		const ab_shot *s = &m->shots[i];
		ab_buf_printf(&b, "shot %.17g %.17g", s->lr, exp(s->log_batch));
		for (int j = 0; j < AB_COMP_DIM; j++)
			ab_buf_printf(&b, " %.9g", s->comp[j]); /* shares: 1e-9 moves a weight by far less */
		ab_buf_printf(&b, "\n");
	}
	if (b.oom) {
		ab_free(b.data);
		return ab_err(err, ABACUS_ENOMEM, "machine profile", "out of memory");
	}
	*out = b.data;
	*len = b.len;
	return 0;
}

void abacus_machine_free(abacus_machine *m)
{
	if (m)
		ab_free(m->shots);
	ab_free(m);
}

const char *abacus_machine_id(const abacus_machine *m)
{
	return m->id;
}

int abacus_machine_threads(const abacus_machine *m)
{
	return m->threads;
}

const char *abacus_machine_runtime(const abacus_machine *m)
{
	return m->runtime;
}

double abacus_machine_rate(const abacus_machine *m, const char *name, double *spread)
{
	int k = ab_machine_rate_index(name);
	if (k < 0)
		return -1;
	if (spread)
		*spread = m->spread[k];
	return m->rate[k];
}

int abacus_machine_adapt(abacus_machine *m, double factor, int rows, abacus_error *err)
{
	if (!(factor > 0) || !isfinite(factor) || rows < 1)
		return ab_err(err, ABACUS_EINVAL, m->id, "an adaptation needs a positive factor from at least one row");
	m->adapt = factor;
	m->adapt_rows = rows;
	return 0;
}

double abacus_machine_adapted(const abacus_machine *m, int *rows)
{
	if (rows)
		*rows = m->adapt_rows;
	return m->adapt;
}

double abacus_machine_seconds(const abacus_machine *m)
{
	return m->seconds;
}

size_t abacus_machine_n_rates(void)
{
	return AB_RATE_COUNT;
}

const char *abacus_machine_rate_name(size_t i)
{
	return i < AB_RATE_COUNT ? ab_machine_rate_names[i] : NULL;
}

/* The few-shot local correction. One factor for a whole machine (the median of measured / predicted over
 * the adaptation's rows) cannot move a machine whose error is kind by kind: on 2026-12-05 the
 * leave-one-machine-out error with ten rows was no better than with none (docs/MACHINES.md). What a few rows
 * do support is their own neighbourhood: the same network at another batch or optimizer, or one made of the
 * same operators in the same proportions, is off on this machine by about what the measured row was off. So
 * a configuration gets a Nadaraya–Watson mean of the shots' residuals beyond the common factor, weighted by
 * a Gaussian kernel of the distance between compositions (the novelty distance's space, novelty.c) and of
 * the batches' log ratio, and shrunk towards 0 by a prior weight: far from every shot the correction
 * vanishes and the common factor is all that is left; on a shot's own network it is most of that shot's
 * residual (a shot is one noisy measurement). The constants (machine.h) were chosen on leave-one-machine-out
 * with one shot per network (2026-12-05, five machines, `abacus eval --protocol lomachine --shots 100`):
 * bandwidth 0.05 / 0.1 with prior 0.5 and 0.05 with prior 1 gave one thread 17.3 / 16.5 / 17.9 % (one factor
 * alone: 20.0 %), the capped CPU 9.7 / 9.5 / 9.7 % (12.3 %), the Intel VM 16.7 / 16.1 / 16.6 % (18.5 %);
 * with ten shots (few rows have a shot near them) the one-thread machines moved by under 0.5 point and the
 * two-thread ones got 1.5-2.5 points worse (their shots are as noisy as their rows: noise floor 40-47 %).
 * Since 2026-12-07 the prior weight k0 of a machine of more than one thread is AB_SHOT_PRIOR times how much
 * heavier the bundle's few-shot prior is for such machines (model.c ab_shot_local_prior, about 9.5× in the
 * committed bundle): leave one machine out with ten shots, rows of ff0791e, 18.90 -> 18.79 % (the family 25
 * two-thread machine 56.3 -> 53.8 %, zero-shot 54.3 %; the capped one 58.3 -> 59.0 %; one thread unchanged).
 * `abacus adapt`'s leave-one-out figure (abacus_machine_shot_loo) keeps AB_SHOT_PRIOR: the profile alone does
 * not know the bundle's prior. */
double ab_shot_correction(const ab_shot *s, size_t n, size_t skip, double a, const double comp[AB_COMP_DIM],
                          double log_batch, double k0)
{
	const double h = AB_SHOT_BANDWIDTH, beta = AB_SHOT_BATCH_WEIGHT;
	double sw = 0, swr = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == skip)
			continue;
		double d2 = 0;
		for (int j = 0; j < AB_COMP_DIM; j++) {
			double d = comp[j] - s[i].comp[j];
			d2 += d * d;
		}
		double db = beta * (log_batch - s[i].log_batch);
		double w = exp(-(d2 + db * db) / (2 * h * h));
		sw += w;
		swr += w * (s[i].lr - a);
	}
	return sw > 0 ? swr / (k0 + sw) : 0;
}

size_t abacus_machine_n_shots(const abacus_machine *m)
{
	return m->n_shots;
}

void abacus_machine_unadapt(abacus_machine *m)
{
	m->adapt = 1;
	m->adapt_rows = 0;
	ab_free(m->shots);
	m->shots = NULL;
	m->n_shots = 0;
}

double abacus_machine_shot_loo(const abacus_machine *m, size_t i)
{
	if (i >= m->n_shots)
		return NAN;
	const ab_shot *s = &m->shots[i];
	double a = log(m->adapt), pred = a + ab_shot_correction(m->shots, m->n_shots, i, a, s->comp, s->log_batch, AB_SHOT_PRIOR);
	return fabs(exp(pred) - exp(s->lr)) / exp(s->lr); /* both relative to the bare prediction */
}
