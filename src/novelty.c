/*
 * novelty.c — how far a configuration lies from the graphs a model was trained on, and what that distance
 * does to the model's memory correction and to its 90 % intervals (the "Unseen networks" issue, item 5).
 *
 * Distance: Euclidean, between compositions (features.c ab_composition: per operator category the shares
 * of layers, forward FLOPs and output bytes, and two sizes), to the nearest training graph. A configuration
 * of a network the model was trained on is at (nearly) 0 whatever its batch; a network made of other
 * operators, or of the same in other proportions, is far.
 *
 * What the distance changes, each fitted on out-of-fold rows (cross-validation inside the training rows,
 * by network and, where families are known, by whole family for time; or in `abacus eval` the other
 * held-out groups' rows):
 *   - the memory correction is weighed by exp(-d / mem_tau): on a family it never saw, the learned memory
 *     correction made leave-one-family-out memory worse than the simulation alone (3.00 against 1.14 % on
 *     the rows of 2026-12-05 04:40 UTC), while near its training graphs it is what makes memory exact;
 *   - the intervals' log quantiles are those of residual / (1 + widen × d) and are multiplied back by
 *     (1 + widen × d): an interval as wide as the residuals of rows that far from their training graphs.
 *     Memory's two ends widen each by its own factor: far from the training graphs the simulation misses
 *     buffers (a mechanism no training network showed) much more often than it invents them, so the
 *     measured peak lies above the prediction by more than it lies below (out-of-fold residuals of the
 *     2026-12-05 bundle, distance 0.2 to 0.3: 5 % quantile -2.6 %, 95 % quantile +8.2 %). One symmetric
 *     factor gave an upper end too low where it matters, a scheduler's out-of-memory risk.
 * The parameters come from small grids: mem_tau minimising the memory error, widen maximising the
 * likelihood of a Laplace distribution whose scale grows as 1 + widen × d (so 0, the global quantiles of
 * before, is chosen unless the distance does explain the residuals); for memory an asymmetric Laplace
 * distribution, its scale on each side of 0 growing with its own widen.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis.h"
#include "model.h"

void ab_novelty_free(ab_novelty *nv)
{
	ab_free(nv->ref);
	ab_free(nv->norm);
	nv->ref = nv->norm = NULL;
	nv->n_ref = 0;
}

/* Compositions are rounded to multiples of 1/1024: far below the distances that matter (0.05 and up),
 * exact in the bundle's hexadecimal, and coarse enough that the configurations of one graph at other
 * batch sizes (whose shares differ in the last digits) are one reference, not one per batch: the
 * references stay about one per training graph, which keeps a prediction's distance a few µs. */
static void composition_of(double c[AB_COMP_DIM], const double *x)
{
	ab_composition(c, x);
	for (int j = 0; j < AB_COMP_DIM; j++)
		c[j] = round(c[j] * 1024) / 1024;
}

static double comp_distance(const ab_novelty *nv, const double *c);

/* A composition this close to one already kept is not kept again: the configurations of one graph at other
 * batch sizes differ in the last digits of their shares (a loss or a few layers are not proportional to the
 * batch), and one reference per graph keeps a prediction's distance a few µs. */
#define AB_NOVELTY_SAME 0.01

static uint64_t hash_comp(const double *c)
{
	uint64_t h = 1469598103934665603ULL;
	const unsigned char *p = (const unsigned char *)c;
	for (size_t i = 0; i < AB_COMP_DIM * sizeof *c; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

int ab_novelty_add(ab_novelty *nv, const double *c, abacus_error *err)
{
	if (nv->n_ref == nv->cap) {
		size_t cap = nv->cap ? 2 * nv->cap : 64;
		double *r = ab_realloc(nv->ref, cap * AB_COMP_DIM * sizeof *r), *q;
		if (r)
			nv->ref = r;
		if (!r || !(q = ab_realloc(nv->norm, cap * sizeof *q)))
			return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		nv->norm = q;
		nv->cap = cap;
	}
	double *r = nv->ref + nv->n_ref * AB_COMP_DIM, s = 0;
	memcpy(r, c, AB_COMP_DIM * sizeof *r);
	for (int j = 0; j < AB_COMP_DIM; j++)
		s += r[j] * r[j];
	nv->norm[nv->n_ref++] = s;
	return 0;
}

int ab_novelty_refs(ab_novelty *nv, const ab_examples *ex, const size_t *idx, size_t n, abacus_error *err)
{
	memset(nv, 0, sizeof *nv); /* references first: the calibration (ab_novelty_calibrate) comes after */
	size_t slots = 16;
	while (slots < 2 * n)
		slots *= 2;
	size_t *table = ab_malloc(slots * sizeof *table); /* open addressing: index + 1 into ref, 0 empty */
	if (!table)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	memset(table, 0, slots * sizeof *table);
	int rc = 0;
	double c[AB_COMP_DIM];
	for (size_t i = 0; i < n && !rc; i++) {
		composition_of(c, ex->X + idx[i] * (size_t)ex->d);
		size_t s = (size_t)(hash_comp(c) & (slots - 1));
		while (table[s] && memcmp(nv->ref + (table[s] - 1) * AB_COMP_DIM, c, sizeof c))
			s = (s + 1) & (slots - 1);
		if (!table[s] && comp_distance(nv, c) >= AB_NOVELTY_SAME && !(rc = ab_novelty_add(nv, c, err)))
			table[s] = nv->n_ref;
	}
	ab_free(table);
	if (rc)
		ab_novelty_free(nv);
	return rc;
}

/* |r - c|² = |r|² + |c|² - 2 r·c over the few categories c uses (a network uses a handful of the
 * categories): a few µs for a thousand training graphs. */
static double comp_distance(const ab_novelty *nv, const double *c)
{
	if (!nv->n_ref)
		return INFINITY;
	double cn = 0, best = INFINITY;
	int nz[AB_COMP_DIM], k = 0;
	for (int j = 0; j < AB_COMP_DIM; j++)
		if (c[j] != 0) {
			nz[k++] = j;
			cn += c[j] * c[j];
		}
	for (size_t i = 0; i < nv->n_ref; i++) {
		const double *r = nv->ref + i * AB_COMP_DIM;
		double dot = 0;
		for (int q = 0; q < k; q++)
			dot += r[nz[q]] * c[nz[q]];
		double d2 = nv->norm[i] + cn - 2 * dot;
		if (d2 < best)
			best = d2;
	}
	return best > 0 ? sqrt(best) : 0;
}

double ab_novelty_distance(const ab_novelty *nv, const double *x)
{
	if (!nv->n_ref)
		return 0;
	double c[AB_COMP_DIM];
	composition_of(c, x);
	return comp_distance(nv, c);
}

double ab_novelty_mem_weight(const ab_novelty *nv, double d)
{
	return nv->mem_tau > 0 ? exp(-d / nv->mem_tau) : 1;
}

double ab_novelty_held_factor(const ab_novelty *nv, double d, double peak, double held_peak)
{
	return peak > 0 && held_peak > peak ? 1 + (1 - ab_novelty_mem_weight(nv, d)) * (held_peak / peak - 1) : 1;
}

/* Negative log-likelihood (up to a constant) of z_i = r_i / s_i under a Laplace distribution of scale
 * b × s_i, b fitted: Σ log s_i + n log b + n. */
static double laplace_nll(const double *r, const double *d, size_t n, double widen, double *z)
{
	double sum_log_s = 0;
	for (size_t i = 0; i < n; i++) {
		double s = 1 + widen * d[i];
		z[i] = r[i] / s;
		sum_log_s += log(s);
	}
	double b = 0;
	for (size_t i = 0; i < n; i++)
		b += fabs(z[i]);
	b /= (double)n;
	return sum_log_s + (double)n * log(b > 1e-12 ? b : 1e-12);
}

/* Up to 256: memory's out-of-fold residuals are nearly exact near the training graphs (0.2 % at distances
 * under 0.05) and a few % at 0.3, so the fit chose the grid's end when it was 8, and again at 64. */
static const double widen_grid[] = { 0, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256 };
#define N_WIDEN (sizeof widen_grid / sizeof widen_grid[0])
static const double tau_grid[] = { 0, 1, 0.5, 0.2, 0.1, 0.05, 0.02 };

/* The widening that fits r best, then the 5 % / 95 % quantiles of r / (1 + widen × d). `z` is scratch. */
static double fit_widen(double q[2], const double *r, const double *d, size_t n, double *z)
{
	double best = INFINITY, w = 0;
	for (size_t g = 0; g < N_WIDEN; g++) {
		double nll = laplace_nll(r, d, n, widen_grid[g], z);
		if (nll < best - 1e-9) {
			best = nll;
			w = widen_grid[g];
		}
	}
	laplace_nll(r, d, n, w, z);
	q[0] = ab_quantile(z, n, 0.05);
	q[1] = ab_quantile(z, n, 0.95);
	return w;
}

double ab_novelty_mem_z(const ab_novelty *nv, double r, double d)
{
	return r / (1 + nv->widen_m[r >= 0] * d);
}

/* Negative log-likelihood (up to a constant) of z_i = r_i / s_i, s_i = 1 + w[r_i >= 0] d_i, under an
 * asymmetric Laplace distribution with scale bu above 0 and bd below, both fitted: with U and D the sums of
 * the positive z and of |negative z|, the maximum-likelihood scales are bu = (U + √(UD)) / n and
 * bd = (D + √(UD)) / n, and the density's normaliser is 1 / (bu + bd). */
static double asym_nll(const double *r, const double *d, size_t n, const double w[2], double *z)
{
	double sum_log_s = 0, up = 0, dn = 0;
	for (size_t i = 0; i < n; i++) {
		double s = 1 + w[r[i] >= 0] * d[i];
		z[i] = r[i] / s;
		sum_log_s += log(s);
		if (z[i] >= 0)
			up += z[i];
		else
			dn -= z[i];
	}
	double g = sqrt(up * dn), bu = fmax((up + g) / (double)n, 1e-12), bd = fmax((dn + g) / (double)n, 1e-12);
	return sum_log_s + (double)n * log(bu + bd) + up / bu + dn / bd;
}

/* The pair of widenings that fits r best, then the 5 % / 95 % quantiles of the widened residuals. */
static void fit_widen_asym(double w[2], double q[2], const double *r, const double *d, size_t n, double *z)
{
	double best = INFINITY;
	w[0] = w[1] = 0;
	for (size_t a = 0; a < N_WIDEN; a++)
		for (size_t b = 0; b < N_WIDEN; b++) {
			double t[2] = { widen_grid[a], widen_grid[b] }, nll = asym_nll(r, d, n, t, z);
			if (nll < best - 1e-9) {
				best = nll;
				w[0] = t[0], w[1] = t[1];
			}
		}
	asym_nll(r, d, n, w, z);
	q[0] = ab_quantile(z, n, 0.05);
	q[1] = ab_quantile(z, n, 0.95);
}

int ab_novelty_calibrate(ab_novelty *nv, double q_time[2], double q_mem[2], const ab_novelty_obs *o, size_t n,
                         size_t n_mem, abacus_error *err)
{
	if (n_mem > n)
		n_mem = n;
	if (n < 2)
		return 0;
	double *r = ab_malloc(n * sizeof *r), *d = ab_malloc(n * sizeof *d), *z = ab_malloc(n * sizeof *z);
	if (!r || !d || !z) {
		ab_free(r);
		ab_free(d);
		ab_free(z);
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		d[i] = o[i].d;
		r[i] = o[i].rt;
	}
	nv->widen_t = fit_widen(q_time, r, d, n, z);
	double best = INFINITY;
	for (size_t g = 0; n_mem >= 2 && g < sizeof tau_grid / sizeof tau_grid[0]; g++) {
		ab_novelty t = { .mem_tau = tau_grid[g] };
		double loss = 0;
		for (size_t i = 0; i < n_mem; i++)
			loss += fabs(o[i].lm - ab_novelty_mem_weight(&t, o[i].d) * o[i].fm);
		if (loss < best - 1e-12) {
			best = loss;
			nv->mem_tau = tau_grid[g];
		}
	}
	for (size_t i = 0; i < n_mem; i++)
		r[i] = o[i].lm - ab_novelty_mem_weight(nv, o[i].d) * o[i].fm;
	if (n_mem >= 2) /* (else memory keeps no fading and no widening) */
		fit_widen_asym(nv->widen_m, q_mem, r, d, n_mem, z);
	ab_free(r);
	ab_free(d);
	ab_free(z);
	return 0;
}
