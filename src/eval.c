/*
 * eval.c — accuracy on measured rows, under the protocols of docs/DESIGN.md:
 *
 *   random    5-fold cross-validation over configurations (seeded);
 *   lomo      leave-one-model-out: each network predicted by a model that never saw it;
 *   cross-hw  train on one hardware id, test on each other one;
 *   lomachine leave-one-machine-out: each machine with a profile predicted from its profile by a model
 *             trained on the other machines' rows (zero-shot), or with K of its rows (few-shot: one time
 *             factor, the median ratio of measured to predicted on those K rows, is all K rows refit).
 *
 * Beside the learned predictor, the same folds score two baselines: the analytic estimate alone
 * (simulated peak memory; time = calib × Σ c_i · analytic term_i, the c_i fitted on the training folds) and a
 * FLOPs-proportional time model (time = FLOPs / rate, rate fitted per hardware on the training folds,
 * no speed index). Time is scored twice: "raw" predicts with the hardware's median speed index, as a
 * user without `abacus calibrate` would; "adjusted" uses the speed index measured with the row, which
 * removes the host's drift from the judgement. The noise floor is the error between repeated
 * measurements of one configuration: a predictor cannot be judged below it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "model.h"
#include "runtime.h"

enum { E_TIME, E_TIME_RAW, E_MEM, E_BASE_TIME, E_BASE_MEM, E_FLOPS_TIME, E_N };

struct abacus_eval {
	abacus_eval_stats stats[E_N];
	abacus_eval_stats noise_time, noise_time_adj, noise_mem;
	abacus_eval_stats noise_time_late, noise_time_late_adj; /* pairs ABACUS_LATE_REPEAT_S apart or more */
	abacus_eval_stats time_quiet; /* ABACUS_EVAL_TIME_QUIET */
	abacus_eval_net *nets;
	size_t n_nets;
	abacus_eval_point *points;
	size_t n_points;
	abacus_eval_hw hws[AB_MAX_HW];
	char *hw_names[AB_MAX_HW];
	size_t n_hws;
	double coverage; /* share of measured times inside the 90 % interval (NaN: no intervals) */
	double mem_under; /* share of measured peaks above the upper end of memory's interval (NaN: none) */
	abacus_eval_machine *machines;
	char **machine_names;
	size_t n_machines;
	char **net_names; /* every network of the rows (n_names), scored or not: the points point into them */
	size_t n_names;
	int protocol;
};

static void stats_of(abacus_eval_stats *s, double *err, size_t n)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	if (!n) {
		s->mre = s->median = s->p90 = NAN;
		return;
	}
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += err[i];
	s->mre = sum / (double)n;
	s->p90 = ab_quantile(err, n, 0.9);
	s->median = ab_quantile(err, n, 0.5);
}

/* Scores rows test[0..nt) with a model fitted on train[0..ntr), appending relative errors. */
/* With `intervals` the points get the model's 90 % interval; `shots[0..ns)` (rows of the test machine, not
 * in train or test) give the few-shot time factor (*scale, 1 without). `mem_train[0..nmt)` (may be NULL):
 * memory comes from a per-hardware-id model fitted on these rows instead (lomachine: memory does not
 * depend on the machine, so every other row teaches it, those of machines without a profile too). */
static int score_fold(const ab_examples *ex, const size_t *train, size_t ntr, const size_t *test, size_t nt,
                      const ab_train_params *prm, int intervals, const size_t *shots, size_t ns, double *scale,
                      const size_t *mem_train, size_t nmt, double *errs[E_N], size_t *ne, double *net_t,
                      double *net_m, size_t *net_n, abacus_eval_point *pts, int *pt_net, abacus_error *err)
{
	ab_model m, mm_model;
	ab_examples hw_ex = *ex; /* the same rows without profiles: a per-hardware-id model */
	hw_ex.machines = NULL;
	int rc = ab_model_fit(&m, ex, train, ntr, prm, intervals, NULL, err);
	if (rc)
		return rc;
	if (mem_train && (rc = ab_model_fit(&mm_model, &hw_ex, mem_train, nmt, prm, 0, NULL, err))) {
		ab_model_free(&m);
		return rc;
	}
	double f = 1;
	int shot_threads = ns ? ex->hw_threads[ex->hw[shots[0]]] : 1; /* the test machine's */
	double k0 = AB_SHOT_PRIOR; /* (set from the shots below) */
	ab_shot *sh = NULL; /* the shots for the local correction (machine.c ab_shot_correction) */
	if (ns) {
		double *lr = ab_malloc(ns * sizeof *lr);
		sh = ab_malloc(ns * sizeof *sh);
		if (!lr || !sh) {
			ab_free(lr);
			ab_free(sh);
			ab_model_free(&m);
			if (mem_train)
				ab_model_free(&mm_model);
			return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		}
		for (size_t i = 0; i < ns; i++) {
			double t, mm;
			ab_model_predict_row(&m, ex, shots[i], ex->calib[shots[i]] > 0 ? ex->calib[shots[i]] : -1, &t, &mm);
			lr[i] = sh[i].lr = log(ex->time[shots[i]] / t);
			sh[i].log_batch = log((double)ex->rows[shots[i]]->batch);
			ab_composition(sh[i].comp, ex->X + shots[i] * (size_t)ex->d);
		}
		double rows = ab_shot_prior_rows(&m, lr, ns, shot_threads);
		k0 = ab_shot_local_prior(&m, rows);
		f = exp(ab_shot_log_factor(lr, ns, rows));
		ab_free(lr);
	}
	if (scale)
		*scale = f;
	/* FLOPs-proportional baseline: rate per hardware (median FLOPs / time) on the training rows. */
	double rate[AB_MAX_HW];
	double *v = ab_malloc((ntr ? ntr : 1) * sizeof *v);
	if (!v) {
		ab_free(sh);
		ab_model_free(&m);
		if (mem_train)
			ab_model_free(&mm_model);
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	}
	double all_rate;
	for (size_t i = 0; i < ntr; i++)
		v[i] = ex->flops[train[i]] / ex->time[train[i]];
	all_rate = ab_quantile(v, ntr, 0.5);
	for (int h = 0; h < ex->n_hw; h++) {
		size_t k = 0;
		for (size_t i = 0; i < ntr; i++)
			if (ex->hw[train[i]] == h)
				v[k++] = ex->flops[train[i]] / ex->time[train[i]];
		rate[h] = k ? ab_quantile(v, k, 0.5) : all_rate;
	}
	ab_free(v);
	for (size_t i = 0; i < nt; i++) {
		size_t r = test[i];
		double t_adj, t_raw, mem;
		double calib_row = ex->calib[r] > 0 ? ex->calib[r] : -1;
		ab_model_predict_row(&m, ex, r, calib_row, &t_adj, &mem);
		ab_model_predict_row(&m, ex, r, -1, &t_raw, &mem);
		if (mem_train) {
			double unused;
			ab_model_predict_row(&mm_model, &hw_ex, r, -1, &unused, &mem);
		}
		double local = 1;
		if (ns) {
			double comp[AB_COMP_DIM];
			ab_composition(comp, ex->X + r * (size_t)ex->d);
			local = exp(ab_shot_correction(sh, ns, SIZE_MAX, log(f), comp, log((double)ex->rows[r]->batch), k0));
		}
		t_adj *= f * local;
		t_raw *= f * local;
		double c = calib_row > 0 ? calib_row : m.calib[ex->hw[r]];
		double base_t = ab_time_base_row(&m, ex, r, m.profile ? calib_row : c);
		double T = ex->time[r], M = ex->mem[r];
		size_t k = *ne;
		errs[E_TIME][k] = fabs(t_adj - T) / T;
		errs[E_TIME_RAW][k] = fabs(t_raw - T) / T;
		errs[E_MEM][k] = fabs(mem - M) / M;
		errs[E_BASE_TIME][k] = fabs(base_t - T) / T;
		errs[E_BASE_MEM][k] = fabs(ex->peak[r] - M) / M;
		errs[E_FLOPS_TIME][k] = fabs(ex->flops[r] / rate[ex->hw[r]] - T) / T;
		pt_net[k] = ex->net[r]; /* the name is set once the network names move into the result */
		pts[k].time_s = T;
		pts[k].time_pred_s = t_adj;
		pts[k].time_raw_pred_s = t_raw;
		pts[k].row = ex->rows[r];
		pts[k].memory_bytes = M;
		pts[k].memory_pred_bytes = mem;
		pts[k].time_base_s = base_t;
		/* The intervals as the predictor makes them (predictor.c fill_prediction): the hardware id's time
		 * quantiles (profile mode: those of the held-out machines of its thread count), each end widened
		 * with the distance from the training graphs (novelty.c). Until 2026-12-05 they were the global
		 * quantiles unwidened here, so that the coverage of random, cross-hw, lomachine and loruntime was
		 * not quite what a user of the bundle gets; LOMO and LOFO recompute theirs across the held-out
		 * groups (lomo_intervals). */
		double nov = ab_novelty_distance(&m.nov, ex->X + r * (size_t)ex->d);
		const double *qt = m.profile ? ab_profile_quantiles(&m, ex->hw_threads[ex->hw[r]]) : m.q_time_hw[ex->hw[r]];
		double st = 1 + m.nov.widen_t * nov, sm_lo = 1 + m.nov.widen_m[0] * nov, sm_hi = 1 + m.nov.widen_m[1] * nov;
		pts[k].time_lo_s = m.has_intervals ? t_adj * exp(qt[0] * st) : 0;
		pts[k].time_hi_s = m.has_intervals ? t_adj * exp(qt[1] * st) : 0;
		pts[k].memory_lo_bytes = m.has_intervals ? mem * exp(m.q_mem[0] * sm_lo) : 0;
		double hf = ab_novelty_held_factor(&m.nov, nov, ex->peak[r], ex->held_peak[r]);
		pts[k].memory_hi_bytes = m.has_intervals ? mem * hf * exp(m.q_mem[1] * sm_hi) : 0;
		pts[k].memory_base_bytes = ex->peak[r];
		pts[k].memory_held_bytes = ex->held_peak[r];
		pts[k].novelty = nov;
		net_t[ex->net[r]] += errs[E_TIME][k];
		net_m[ex->net[r]] += errs[E_MEM][k];
		net_n[ex->net[r]]++;
		(*ne)++;
	}
	ab_free(sh);
	ab_model_free(&m);
	if (mem_train)
		ab_model_free(&mm_model);
	return 0;
}

/* The runtime row r ran (a row that names none ran the default one). */
static const char *row_runtime_name(const ab_examples *ex, size_t r)
{
	const char *rt = ex->rows[r]->runtime;
	return rt && rt[0] ? rt : abacus_runtime_name(0);
}

/* Whether row r is scored: every row, or (abacus_train_opts.score_runtime) only the rows of that runtime. */
static int scored(const ab_examples *ex, size_t r, const char *only)
{
	return !only || !strcmp(row_runtime_name(ex, r), only);
}

/* What noise_floor fills: the time (raw and divided by calib_s) and memory floors of every repeated pair, and the
 * time floors of the pairs measured ABACUS_LATE_REPEAT_S apart or more (NULL members: not wanted). */
typedef struct noise_out {
	abacus_eval_stats *t, *ta, *m, *late_t, *late_ta;
} noise_out;

/* Pairs of rows that measure the same configuration (network, input, batch, optimizer, hw), of hardware id
 * `hw` and machine `machine` (NULL: any): the relative difference of their times (raw and divided by calib_s)
 * and memory. The buffers hold ex->n values each (pairs beyond that are not counted); the late pairs are
 * gathered at the buffers' far end, so that one scan serves both floors. */
static void noise_floor(const ab_examples *ex, const char *hw, const char *machine, const char *only, double *buf_t,
                        double *buf_ta, double *buf_m, const noise_out *out)
{
	size_t n = 0, late = 0, cap = ex->n; /* every pair takes one slot at the front; a late one a second at the back */
	for (size_t i = 0; i < ex->n; i++) {
		if ((hw && strcmp(ex->rows[i]->hw, hw)) || (machine && strcmp(ex->rows[i]->machine, machine)) ||
		    !scored(ex, i, only))
			continue;
		for (size_t j = i + 1; j < ex->n; j++) {
			const abacus_row *a = ex->rows[i], *b = ex->rows[j];
			if (!ab_rows_repeat(a, b))
				continue;
			if (n + late >= cap)
				goto done;
			double ta_ = a->time_s, tb = b->time_s;
			/* A predictor that knew one measurement exactly would be off by this on the other. */
			buf_t[n] = 0.5 * (fabs(ta_ - tb) / ta_ + fabs(ta_ - tb) / tb);
			double ra = a->calib_s > 0 ? ta_ / a->calib_s : ta_, rb = b->calib_s > 0 ? tb / b->calib_s : tb;
			buf_ta[n] = 0.5 * (fabs(ra - rb) / ra + fabs(ra - rb) / rb);
			double ma = (double)a->memory_bytes, mb = (double)b->memory_bytes;
			buf_m[n] = 0.5 * (fabs(ma - mb) / ma + fabs(ma - mb) / mb);
			/* (NaN when either row has no timestamp: then not late) */
			if (fabs(a->measured_at - b->measured_at) >= ABACUS_LATE_REPEAT_S && n + late + 1 < cap) {
				late++;
				buf_t[cap - late] = buf_t[n];
				buf_ta[cap - late] = buf_ta[n];
			}
			n++;
		}
	}
done:
	if (out->late_t)
		stats_of(out->late_t, buf_t + cap - late, late);
	if (out->late_ta)
		stats_of(out->late_ta, buf_ta + cap - late, late);
	stats_of(out->t, buf_t, n);
	stats_of(out->ta, buf_ta, n);
	if (out->m)
		stats_of(out->m, buf_m, n);
}

/* Per hardware id as the rows name it ("cpu1", "cpu2"; the predictor's keys also name the machine and the
 * runtime, which the per-machine scores show): the scored points' errors and the repeated pairs' noise.
 * Uses errs[] as scratch. */
static int split_by_hw(abacus_eval *ev, const ab_examples *ex, const char *only, double *errs[E_N], abacus_error *err)
{
	for (size_t r = 0; r < ex->n && ev->n_hws < AB_MAX_HW; r++) {
		const char *hw = ex->rows[r]->hw;
		if (!scored(ex, r, only))
			continue;
		size_t seen = 0;
		while (seen < ev->n_hws && strcmp(ev->hw_names[seen], hw))
			seen++;
		if (seen < ev->n_hws)
			continue;
		size_t h = ev->n_hws;
		abacus_eval_hw *H = &ev->hws[h];
		ev->hw_names[h] = ab_strdup(hw);
		if (!ev->hw_names[h])
			return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		H->hw = ev->hw_names[h];
		ev->n_hws = h + 1;
		size_t n = 0;
		for (size_t i = 0; i < ev->n_points; i++) {
			const abacus_eval_point *p = &ev->points[i];
			if (strcmp(p->row->hw, hw))
				continue;
			errs[0][n] = fabs(p->time_pred_s - p->time_s) / p->time_s;
			errs[1][n] = fabs(p->time_raw_pred_s - p->time_s) / p->time_s;
			errs[2][n] = fabs(p->memory_pred_bytes - p->memory_bytes) / p->memory_bytes;
			n++;
		}
		stats_of(&H->time, errs[0], n);
		stats_of(&H->time_raw, errs[1], n);
		stats_of(&H->memory, errs[2], n);
		noise_out no = { &H->noise_time, &H->noise_time_adjusted, NULL, &H->noise_time_late, &H->noise_time_late_adjusted };
		noise_floor(ex, hw, NULL, only, errs[0], errs[1], errs[2], &no);
	}
	return 0;
}

/* Per machine id of the scored points (in order of first appearance): errors, that machine's own noise
 * floor, the interval's coverage. `scale[i]` is the few-shot factor of ex's machine i (NULL: none). */
static int split_by_machine(abacus_eval *ev, const ab_examples *ex, const char *only, const double *scale, double *errs[E_N],
                            abacus_error *err)
{
	size_t cap = ev->n_points ? ev->n_points : 1;
	ev->machines = ab_calloc(cap, sizeof *ev->machines);
	ev->machine_names = ab_calloc(cap, sizeof *ev->machine_names);
	if (!ev->machines || !ev->machine_names)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	for (size_t i = 0; i < ev->n_points; i++) {
		const char *id = ev->points[i].row->machine;
		size_t k = 0;
		while (k < ev->n_machines && strcmp(ev->machine_names[k], id))
			k++;
		if (k < ev->n_machines)
			continue;
		if (!(ev->machine_names[k] = ab_strdup(id)))
			return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		ev->n_machines++;
		abacus_eval_machine *M = &ev->machines[k];
		M->machine = ev->machine_names[k];
		size_t n = 0, in = 0, with_interval = 0;
		for (size_t j = i; j < ev->n_points; j++) {
			const abacus_eval_point *p = &ev->points[j];
			if (strcmp(p->row->machine, id))
				continue;
			errs[0][n] = fabs(p->time_pred_s - p->time_s) / p->time_s;
			errs[1][n] = fabs(p->time_raw_pred_s - p->time_s) / p->time_s;
			errs[2][n] = fabs(p->memory_pred_bytes - p->memory_bytes) / p->memory_bytes;
			n++;
			if (p->time_hi_s > 0) {
				with_interval++;
				in += p->time_s >= p->time_lo_s && p->time_s <= p->time_hi_s;
			}
		}
		stats_of(&M->time, errs[0], n);
		stats_of(&M->time_raw, errs[1], n);
		stats_of(&M->memory, errs[2], n);
		noise_out no = { &M->noise_time, &M->noise_time_adjusted, NULL, &M->noise_time_late, &M->noise_time_late_adjusted };
		noise_floor(ex, NULL, id, only, errs[0], errs[1], errs[2], &no);
		M->coverage = with_interval ? (double)in / (double)with_interval : NAN;
		M->shot_scale = 1;
		for (int q = 0; scale && q < ex->n_mach; q++)
			if (!strcmp(ex->machines[q]->id, id))
				M->shot_scale = scale[q];
	}
	return 0;
}

void abacus_eval_free(abacus_eval *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < ev->n_names; i++)
		ab_free(ev->net_names[i]);
	ab_free(ev->net_names);
	for (size_t i = 0; i < ev->n_hws; i++)
		ab_free(ev->hw_names[i]);
	for (size_t i = 0; i < ev->n_machines; i++)
		ab_free(ev->machine_names[i]);
	ab_free(ev->machine_names);
	ab_free(ev->machines);
	ab_free(ev->nets);
	ab_free(ev->points);
	ab_free(ev);
}

/* Row r's runtime's index in names[] (interned). */
static int row_runtime(const ab_examples *ex, size_t r, const char **names, int *n)
{
	return ab_intern(names, n, row_runtime_name(ex, r));
}

/* The 90 % intervals of the held-out groups (lomo: networks; lofo: families), and how far their memory
 * correction is trusted, each from the other groups' out-of-fold rows, so that nothing of a group decides
 * its own: as the bundle does with cross-validation inside its training rows (novelty.c), the memory
 * correction's fade with the distance from the training graphs and the intervals' widening are fitted on
 * the other groups' rows, then the 5 % and 95 % quantiles of their widened log residuals measured on the
 * same machine (row->machine), or of all their rows when that machine has fewer than INTERVAL_POOL_MIN.
 * Machines differ in noise (two threads, capped ISAs: docs/MACHINES.md): pooled over all machines the 90 %
 * intervals held 57 to 97 % of a machine's times, pooled per machine 89-90 % on every machine and 13 %
 * narrower (lomo over the 6,983 rows of 2026-12-05). The points' memory predictions change with the fade. */
#define INTERVAL_POOL_MIN 30
typedef struct group_fit {
	ab_novelty_obs *o;   /* per point: distance, time residual, log(measured / simulated), memory correction */
	ab_novelty_obs *sel; /* scratch: the other groups' */
	double *r, *rm;      /* scratch: widened residuals */
	int *pool;
} group_fit;

static void group_quantiles(const group_fit *f, const ab_novelty *nv, const int *pt_net, size_t n, int g, int q,
                            double qt[2], double qm[2], int *ok)
{
	size_t k = 0;
	for (int all = 0; all < 2 && k < INTERVAL_POOL_MIN; all++) {
		k = 0;
		for (size_t i = 0; i < n; i++) {
			if (pt_net[i] == g || (!all && f->pool[i] != q))
				continue;
			const ab_novelty_obs *o = &f->o[i];
			f->r[k] = o->rt / (1 + nv->widen_t * o->d);
			f->rm[k++] = ab_novelty_mem_z(nv, o->lm - ab_novelty_mem_weight(nv, o->d) * o->fm, o->d);
		}
	}
	*ok = k >= 2;
	if (*ok) {
		qt[0] = ab_quantile(f->r, k, 0.05), qt[1] = ab_quantile(f->r, k, 0.95);
		qm[0] = ab_quantile(f->rm, k, 0.05), qm[1] = ab_quantile(f->rm, k, 0.95);
	}
}

static int lomo_intervals(abacus_eval_point *pts, const int *pt_net, size_t n, int n_nets, abacus_error *err)
{
	size_t m = n ? n : 1;
	group_fit f = { ab_malloc(m * sizeof *f.o), ab_malloc(m * sizeof *f.sel), ab_malloc(m * sizeof *f.r),
		            ab_malloc(m * sizeof *f.rm), ab_malloc(m * sizeof *f.pool) };
	const char **names = ab_malloc(m * sizeof *names);
	int n_pools = 0, rc = 0;
	if (!f.o || !f.sel || !f.r || !f.rm || !f.pool || !names) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const abacus_eval_point *p = &pts[i];
		f.pool[i] = ab_intern(names, &n_pools, p->row && p->row->machine ? p->row->machine : "");
		f.o[i].d = p->novelty;
		f.o[i].rt = p->time_pred_s > 0 ? log(p->time_s / p->time_pred_s) : 0;
		f.o[i].lm = log(p->memory_bytes / p->memory_base_bytes);
		f.o[i].fm = log(p->memory_pred_bytes / p->memory_base_bytes);
	}
	for (int g = 0; g < n_nets && !rc; g++) {
		size_t k = 0, mine = 0;
		for (size_t i = 0; i < n; i++)
			if (pt_net[i] != g)
				f.sel[k++] = f.o[i];
			else
				mine++;
		if (!mine)
			continue;
		ab_novelty nv = { 0 };
		double qt[2], qm[2];
		if ((rc = ab_novelty_calibrate(&nv, qt, qm, f.sel, k, k, err)))
			break;
		for (int q = 0; q < n_pools; q++) {
			int ok;
			group_quantiles(&f, &nv, pt_net, n, g, q, qt, qm, &ok);
			for (size_t i = 0; i < n; i++) {
				if (pt_net[i] != g || f.pool[i] != q)
					continue;
				abacus_eval_point *p = &pts[i];
				const ab_novelty_obs *o = &f.o[i];
				double st = 1 + nv.widen_t * o->d;
				p->memory_pred_bytes = p->memory_base_bytes * exp(ab_novelty_mem_weight(&nv, o->d) * o->fm);
				if (!ok || !(p->time_pred_s > 0))
					continue;
				p->time_lo_s = p->time_pred_s * exp(qt[0] * st);
				p->time_hi_s = p->time_pred_s * exp(qt[1] * st);
				p->memory_lo_bytes = p->memory_pred_bytes * exp(qm[0] * (1 + nv.widen_m[0] * o->d));
				double hf = ab_novelty_held_factor(&nv, o->d, p->memory_base_bytes, p->memory_held_bytes);
				p->memory_hi_bytes = p->memory_pred_bytes * hf * exp(qm[1] * (1 + nv.widen_m[1] * o->d));
			}
		}
	}
out:
	ab_free(f.o);
	ab_free(f.sel);
	ab_free(f.r);
	ab_free(f.rm);
	ab_free(f.pool);
	ab_free(names);
	return rc;
}

/* The few-shot rows of group q (grp[r] == q: a machine, a runtime): `shots` of them, one per network in the
 * shuffled order idx first (so that they cover the zoo), then the next rows; marked in is_shot (cleared
 * first, ex->n bytes) and, where `list` is given, listed there in that order. `seen` is scratch of
 * ex->n_nets + 1 bytes. Returns how many. */
static size_t pick_shots(const ab_examples *ex, const size_t *idx, const int *grp, int q, int shots, char *seen,
                         char *is_shot, size_t *list)
{
	size_t ns = 0;
	memset(seen, 0, (size_t)ex->n_nets + 1);
	memset(is_shot, 0, ex->n);
	for (int pass = 0; pass < 2 && shots > 0; pass++)
		for (size_t i = 0; i < ex->n && ns < (size_t)shots; i++) {
			size_t r = idx[i];
			if (grp[r] != q || is_shot[r] || (pass == 0 && seen[ex->net[r]]))
				continue;
			seen[ex->net[r]] = 1;
			is_shot[r] = 1;
			if (list)
				list[ns] = r;
			ns++;
		}
	return ns;
}

/* Leave-one-machine-out over the machines with a profile and rows. Few-shot (`shots` = K > 0): K rows of
 * the held-out machine, one per network in the shuffled order first (so that they cover the zoo), then
 * any, fit its time factor and are not scored. */
static int lomachine(const ab_examples *ex, const size_t *idx, size_t *tr, size_t *te, int shots, const char *only,
                     const ab_train_params *prm, double *shot_scale, double *errs[E_N], size_t *ne, double *net_t,
                     double *net_m, size_t *net_n, abacus_eval_point *pts, int *pt_net, ab_progress *pg,
                     abacus_error *err)
{
	int with_rows = 0;
	for (int q = 0; q < ex->n_mach; q++) {
		size_t k = 0;
		for (size_t i = 0; i < ex->n; i++)
			k += ex->mach[i] == q;
		with_rows += k > 0;
	}
	if (with_rows < 2)
		return ab_err(err, ABACUS_EINVAL, "", "leave-one-machine-out needs rows of at least 2 machines that have a "
		              "profile (have %d; give each machine's profile with --machines)", with_rows);
	size_t *shot = ab_malloc((ex->n ? ex->n : 1) * sizeof *shot), *mtr = ab_malloc((ex->n ? ex->n : 1) * sizeof *mtr);
	char *seen = ab_calloc((size_t)ex->n_nets + 1, 1), *is_shot = ab_calloc(ex->n ? ex->n : 1, 1);
	if (!shot || !seen || !mtr || !is_shot) {
		ab_free(shot);
		ab_free(seen);
		ab_free(mtr);
		ab_free(is_shot);
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	}
	int rc = 0;
	for (int q = 0; q < ex->n_mach && !rc; q++) {
		size_t ntr = 0, nt = 0, ns = pick_shots(ex, idx, ex->mach, q, shots, seen, is_shot, shot);
		size_t nmt = 0;
		for (size_t i = 0; i < ex->n; i++)
			if (ex->mach[idx[i]] != q)
				mtr[nmt++] = idx[i];
		for (size_t i = 0; i < ex->n; i++) {
			size_t r = idx[i];
			if (ex->mach[r] < 0)
				continue;
			if (ex->mach[r] != q) {
				tr[ntr++] = r;
				continue;
			}
			if (!is_shot[r] && scored(ex, r, only))
				te[nt++] = r;
		}
		if (nt)
			rc = score_fold(ex, tr, ntr, te, nt, prm, 1, shot, ns, &shot_scale[q], mtr, nmt, errs, ne, net_t,
			                net_m, net_n, pts, pt_net, err);
		if (!rc)
			ab_progress_step(pg); /* a machine without rows is a fold too: done reaches the announced total */
	}
	ab_free(shot);
	ab_free(mtr);
	ab_free(seen);
	ab_free(is_shot);
	return rc;
}

/* How many runtimes the rows ran on (loruntime's folds). Every row's runtime is a known one
 * (ab_examples_build refuses the others), so there are at most AB_N_RUNTIMES. */
static int count_runtimes(const ab_examples *ex)
{
	const char *names[AB_N_RUNTIMES];
	int n = 0;
	for (size_t r = 0; r < ex->n; r++)
		row_runtime(ex, r, names, &n);
	return n;
}

/* Leave-one-runtime-out: each runtime's rows predicted by a model trained on the other runtimes' rows and
 * `shots` rows of its own (one per network in the shuffled order first, then any; not scored): how far off
 * a runtime nobody measured is, and what a few of its rows buy. The held-out runtime's hardware key has no
 * rows (or fewer than AB_MIN_HW_ROWS), so its time rates are the all-rows fit at its rows' speed index. */
static int loruntime(const ab_examples *ex, const size_t *idx, size_t *tr, size_t *te, int shots, const char *only,
                     const ab_train_params *prm, double *errs[E_N], size_t *ne, double *net_t, double *net_m,
                     size_t *net_n, abacus_eval_point *pts, int *pt_net, ab_progress *pg, abacus_error *err)
{
	const char *names[AB_N_RUNTIMES];
	int n_rt = 0, rc = 0;
	int *rt = ab_malloc((ex->n ? ex->n : 1) * sizeof *rt);
	char *seen = ab_calloc((size_t)ex->n_nets + 1, 1), *is_shot = ab_calloc(ex->n ? ex->n : 1, 1);
	if (!rt || !seen || !is_shot) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	for (size_t r = 0; r < ex->n; r++)
		rt[r] = row_runtime(ex, r, names, &n_rt);
	if (n_rt < 2)
		rc = ab_err(err, ABACUS_EINVAL, "", "leave-one-runtime-out needs rows of at least 2 runtimes (have %d: "
		            "give each runtime's dataset, e.g. data/dataset.csv data/tf-2.21.0/dataset.csv)", n_rt);
	for (int q = 0; q < n_rt && !rc; q++) {
		size_t ntr = 0, nt = 0;
		pick_shots(ex, idx, rt, q, shots, seen, is_shot, NULL);
		for (size_t i = 0; i < ex->n; i++) {
			size_t r = idx[i];
			if (rt[r] != q || is_shot[r])
				tr[ntr++] = r;
			else if (scored(ex, r, only))
				te[nt++] = r;
		}
		if (nt)
			rc = score_fold(ex, tr, ntr, te, nt, prm, 1, NULL, 0, NULL, NULL, 0, errs, ne, net_t, net_m, net_n,
			                pts, pt_net, err);
		if (!rc)
			ab_progress_step(pg);
	}
out:
	ab_free(rt);
	ab_free(seen);
	ab_free(is_shot);
	return rc;
}

/* The folds of random, lomo, lofo and cross-hw, in one loop: a row's group is its position in the shuffled
 * order modulo the fold count (random), its network (lomo), its network's family (lofo: fam[network]) or
 * its hardware id (cross-hw). Fold f tests the rows of
 * group f and trains on the rest; cross-hw turns that around (trains on hardware id f, tests on the others). */
static int group_folds(const ab_examples *ex, const size_t *idx, size_t *tr, size_t *te, abacus_eval_protocol protocol,
                       int n_folds, const int *fam, const char *only, const ab_train_params *prm, double *errs[E_N], size_t *ne, double *net_t,
                       double *net_m, size_t *net_n, abacus_eval_point *pts, int *pt_net, ab_progress *pg,
                       abacus_error *err)
{
	int rc = 0;
	for (int f = 0; f < n_folds && !rc; f++) {
		size_t ntr = 0, nt = 0;
		for (size_t i = 0; i < ex->n; i++) {
			int g = protocol == ABACUS_EVAL_RANDOM   ? (int)(i % (size_t)n_folds)
			        : protocol == ABACUS_EVAL_LOMO   ? ex->net[idx[i]]
			        : protocol == ABACUS_EVAL_LOFO   ? fam[ex->net[idx[i]]]
			                                         : ex->hw[idx[i]];
			if ((g == f) == (protocol == ABACUS_EVAL_CROSS_HW))
				tr[ntr++] = idx[i];
			else if (scored(ex, idx[i], only)) /* (an unscored row of the held-out group trains nothing either) */
				te[nt++] = idx[i];
		}
		if (nt) /* a fold without a scored row costs no fit */
			rc = score_fold(ex, tr, ntr, te, nt, prm, 0, NULL, 0, NULL, NULL, 0, errs, ne, net_t, net_m, net_n, pts,
			                pt_net, err);
		if (!rc)
			ab_progress_step(pg);
	}
	return rc;
}

/* The per-network scores, and each point's network name: the names move from the examples into the result. */
static int fill_networks(abacus_eval *ev, ab_examples *ex, const double *net_t, const double *net_m, const size_t *net_n,
                         const int *pt_net, abacus_error *err)
{
	ev->nets = ab_calloc((size_t)ex->n_nets + 1, sizeof *ev->nets);
	ev->net_names = ab_calloc((size_t)ex->n_nets + 1, sizeof *ev->net_names);
	if (!ev->nets || !ev->net_names)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	/* The per-network scores list the networks with scored rows (a network that trains only, under
	 * abacus_train_opts.score_runtime, has none). */
	for (int i = 0; i < ex->n_nets; i++) {
		ev->net_names[i] = ex->nets[i];
		ex->nets[i] = NULL;
		if (!net_n[i])
			continue;
		abacus_eval_net *N = &ev->nets[ev->n_nets++];
		N->network = ev->net_names[i];
		N->n = net_n[i];
		N->time_mre = net_t[i] / (double)net_n[i];
		N->memory_mre = net_m[i] / (double)net_n[i];
	}
	ev->n_names = (size_t)ex->n_nets;
	for (size_t i = 0; i < ev->n_points; i++)
		ev->points[i].network = ev->net_names[pt_net[i]];
	return 0;
}

/* The share of points inside their time interval, and of points above their memory interval's upper end (NaN
 * without intervals). */
static void interval_shares(abacus_eval *ev)
{
	size_t with = 0, in = 0, mwith = 0, under = 0;
	for (size_t i = 0; i < ev->n_points; i++) {
		const abacus_eval_point *q = &ev->points[i];
		if (q->time_hi_s > 0) {
			with++;
			in += q->time_s >= q->time_lo_s && q->time_s <= q->time_hi_s;
		}
		if (q->memory_hi_bytes > 0) {
			mwith++;
			under += q->memory_bytes > q->memory_hi_bytes;
		}
	}
	ev->coverage = with ? (double)in / (double)with : NAN;
	ev->mem_under = mwith ? (double)under / (double)mwith : NAN;
}

/* ABACUS_EVAL_TIME over the points timed on a quiet machine (ABACUS_BUSY_OTHER_LIMIT). TensorFlow's first
 * 73 rows were timed beside the PyTorch campaign (busy_other median 0.66): scored against their times, the
 * predictor was 17 % off in a random split where the 71 quiet rows said 6 %. `buf` holds n_points. */
static void quiet_time(abacus_eval *ev, double *buf)
{
	size_t n = 0;
	for (size_t i = 0; i < ev->n_points; i++) {
		const abacus_eval_point *p = &ev->points[i];
		if (!(p->row && p->row->busy_other > ABACUS_BUSY_OTHER_LIMIT)) /* (NaN: not recorded, quiet) */
			buf[n++] = fabs(p->time_pred_s - p->time_s) / p->time_s;
	}
	stats_of(&ev->time_quiet, buf, n);
}

/* A protocol that holds out groups needs at least two of them. */
static int check_groups(const ab_examples *ex, abacus_eval_protocol protocol, int n_fam, abacus_error *err)
{
	if (protocol == ABACUS_EVAL_LOMO && ex->n_nets < 2)
		return ab_err(err, ABACUS_EINVAL, "", "leave-one-model-out needs rows from at least 2 networks");
	if (protocol == ABACUS_EVAL_LOFO && n_fam < 2)
		return ab_err(err, ABACUS_EINVAL, "", "leave-one-family-out needs rows from at least 2 families (have %d; give "
		              "each network's family: abacus_train_opts.family_of, 'abacus eval --families FILE')", n_fam);
	if (protocol == ABACUS_EVAL_CROSS_HW && ex->n_hw < 2)
		return ab_err(err, ABACUS_EINVAL, "", "cross-hw needs rows from at least 2 hardware ids (have %d)", ex->n_hw);
	return 0;
}

int abacus_evaluate(abacus_eval **out, abacus_dataset *const *sets, size_t n_sets, abacus_eval_protocol protocol,
                    const abacus_train_opts *opts, abacus_error *err)
{
	*out = NULL;
	ab_err_clear(err);
	abacus_train_opts oc;
	if (ab_train_opts_read(&oc, opts, err))
		return ABACUS_EINVAL;
	const abacus_train_opts *o = &oc;
	ab_examples ex;
	int *fam = NULL, n_fam = 0; /* lofo: each network's family */
	int rc = ab_examples_build(&ex, sets, n_sets, o->graph_root ? o->graph_root : ".", err);
	if (rc)
		return rc;
	double shot_scale[AB_MAX_MACHINES];
	for (int q = 0; q < AB_MAX_MACHINES; q++)
		shot_scale[q] = 1;
	/* Profiles given: the per-hardware-id fits scale the recurrent terms an id borrows by its machine's
	 * measured rates (model.c borrow_scale), as the bundle abacus train makes does. */
	if (o->n_machines && (rc = ab_examples_attach_borrow(&ex, o->machines, o->n_machines, err))) {
		ab_examples_free(&ex);
		return rc;
	}
	if (protocol == ABACUS_EVAL_LOMACHINE) {
		if (o->n_machines > AB_MAX_MACHINES) {
			ab_examples_free(&ex);
			return ab_err(err, ABACUS_ELIMIT, "", "more than %d machine profiles", AB_MAX_MACHINES);
		}
		if ((rc = ab_examples_attach_machines(&ex, o->machines, o->n_machines, err))) {
			ab_examples_free(&ex);
			return rc;
		}
	}
	abacus_eval *ev = ab_calloc(1, sizeof *ev);
	size_t n = ex.n ? ex.n : 1;
	/* Scored points: every row once, but in cross-hw once per hardware id it is not of (each fold trains on
	 * one id and predicts all the others' rows) */
	size_t np = protocol == ABACUS_EVAL_CROSS_HW && ex.n_hw > 2 ? n * (size_t)(ex.n_hw - 1) : n;
	double *errs[E_N] = { 0 };
	for (int k = 0; k < E_N; k++)
		errs[k] = ab_malloc(np * sizeof(double));
	size_t *idx = ab_malloc(n * sizeof *idx), *tr = ab_malloc(n * sizeof *tr), *te = ab_malloc(n * sizeof *te);
	double *net_t = ab_calloc((size_t)ex.n_nets + 1, sizeof(double)), *net_m = ab_calloc((size_t)ex.n_nets + 1, sizeof(double));
	size_t *net_n = ab_calloc((size_t)ex.n_nets + 1, sizeof(size_t));
	int *pt_net = ab_malloc(np * sizeof *pt_net), *pt_fam = ab_malloc(np * sizeof *pt_fam);
	if (ev)
		ev->points = ab_calloc(np, sizeof *ev->points);
	if (!ev || !ev->points || !pt_net || !pt_fam || !idx || !tr || !te || !net_t || !net_m || !net_n || !errs[E_N - 1] || !errs[0] || !errs[1] ||
	    !errs[2] || !errs[3] || !errs[4]) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	ev->protocol = (int)protocol;
	ab_train_params prm;
	ab_train_params_from(&prm, o);
	for (size_t i = 0; i < ex.n; i++)
		idx[i] = i;
	ab_shuffle(idx, ex.n, o->seed);
	size_t ne = 0;
	/* Progress in folds, the units of similar cost each protocol has; the count is known before the first. */
	enum { FOLDS = 5 };
	if (protocol == ABACUS_EVAL_LOFO && (n_fam = ab_family_index(&fam, &ex, o->family_of, o->n_family_of)) < 0) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	size_t n_folds = protocol == ABACUS_EVAL_RANDOM      ? FOLDS
	                 : protocol == ABACUS_EVAL_LOMO      ? (size_t)ex.n_nets
	                 : protocol == ABACUS_EVAL_LOFO      ? (size_t)n_fam
	                 : protocol == ABACUS_EVAL_LOMACHINE ? (size_t)ex.n_mach
	                 : protocol == ABACUS_EVAL_LORUNTIME ? (size_t)count_runtimes(&ex)
	                                                     : (size_t)ex.n_hw;
	ab_progress pg;
	ab_progress_start(&pg, o, n_folds);
	if ((rc = check_groups(&ex, protocol, n_fam, err)))
		goto out;
	if (protocol == ABACUS_EVAL_LOMACHINE)
		rc = lomachine(&ex, idx, tr, te, o->shots, o->score_runtime, &prm, shot_scale, errs, &ne, net_t, net_m, net_n, ev->points,
		               pt_net, &pg, err);
	else if (protocol == ABACUS_EVAL_LORUNTIME)
		rc = loruntime(&ex, idx, tr, te, o->shots, o->score_runtime, &prm, errs, &ne, net_t, net_m, net_n, ev->points, pt_net, &pg, err);
	else
		rc = group_folds(&ex, idx, tr, te, protocol, (int)n_folds, fam, o->score_runtime, &prm, errs, &ne, net_t, net_m, net_n, ev->points,
		                 pt_net, &pg, err);
	if (rc)
		goto out;
	ev->n_points = ne;
	if (protocol == ABACUS_EVAL_LOMO && (rc = lomo_intervals(ev->points, pt_net, ne, ex.n_nets, err)))
		goto out;
	if (protocol == ABACUS_EVAL_LOFO) { /* each family's intervals from the other families' residuals */
		for (size_t i = 0; i < ne; i++)
			pt_fam[i] = fam[pt_net[i]];
		if ((rc = lomo_intervals(ev->points, pt_fam, ne, n_fam, err)))
			goto out;
	}
	if (protocol == ABACUS_EVAL_LOMO || protocol == ABACUS_EVAL_LOFO)
		for (size_t i = 0; i < ne; i++) { /* the memory predictions the fade changed */
			double e = fabs(ev->points[i].memory_pred_bytes - ev->points[i].memory_bytes) / ev->points[i].memory_bytes;
			net_m[pt_net[i]] += e - errs[E_MEM][i];
			errs[E_MEM][i] = e;
		}
	interval_shares(ev);
	for (int k = 0; k < E_N; k++)
		stats_of(&ev->stats[k], errs[k], ne);
	quiet_time(ev, errs[E_N - 1]); /* (after stats_of: that array's order is no longer needed) */
	noise_out no = { &ev->noise_time, &ev->noise_time_adj, &ev->noise_mem, &ev->noise_time_late, &ev->noise_time_late_adj };
	noise_floor(&ex, NULL, NULL, o->score_runtime, errs[0], errs[1], errs[2], &no);
	if ((rc = split_by_hw(ev, &ex, o->score_runtime, errs, err)) ||
	    (rc = split_by_machine(ev, &ex, o->score_runtime, protocol == ABACUS_EVAL_LOMACHINE ? shot_scale : NULL, errs, err)))
		goto out;
	if ((rc = fill_networks(ev, &ex, net_t, net_m, net_n, pt_net, err)))
		goto out;
out:
	ab_free(pt_net);
	ab_free(pt_fam);
	ab_free(fam);
	for (int k = 0; k < E_N; k++)
		ab_free(errs[k]);
	ab_free(idx);
	ab_free(tr);
	ab_free(te);
	ab_free(net_t);
	ab_free(net_m);
	ab_free(net_n);
	ab_examples_free(&ex);
	if (rc) {
		abacus_eval_free(ev);
		return rc;
	}
	*out = ev;
	return 0;
}

const abacus_eval_stats *abacus_eval_get(const abacus_eval *ev, abacus_eval_metric m)
{
	switch (m) {
	case ABACUS_EVAL_TIME: return &ev->stats[E_TIME];
	case ABACUS_EVAL_TIME_RAW: return &ev->stats[E_TIME_RAW];
	case ABACUS_EVAL_MEMORY: return &ev->stats[E_MEM];
	case ABACUS_EVAL_ANALYTIC_TIME: return &ev->stats[E_BASE_TIME];
	case ABACUS_EVAL_ANALYTIC_MEMORY: return &ev->stats[E_BASE_MEM];
	case ABACUS_EVAL_FLOPS_TIME: return &ev->stats[E_FLOPS_TIME];
	case ABACUS_EVAL_NOISE_TIME: return &ev->noise_time;
	case ABACUS_EVAL_NOISE_TIME_ADJUSTED: return &ev->noise_time_adj;
	case ABACUS_EVAL_NOISE_MEMORY: return &ev->noise_mem;
	case ABACUS_EVAL_NOISE_TIME_LATE: return &ev->noise_time_late;
	case ABACUS_EVAL_NOISE_TIME_LATE_ADJUSTED: return &ev->noise_time_late_adj;
	case ABACUS_EVAL_TIME_QUIET: return &ev->time_quiet;
	}
	return NULL;
}

const abacus_eval_net *abacus_eval_networks(const abacus_eval *ev, size_t *n)
{
	*n = ev->n_nets;
	return ev->nets;
}

const abacus_eval_point *abacus_eval_points(const abacus_eval *ev, size_t *n)
{
	*n = ev->n_points;
	return ev->points;
}

const abacus_eval_hw *abacus_eval_hardware(const abacus_eval *ev, size_t *n)
{
	*n = ev->n_hws;
	return ev->hws;
}

double abacus_eval_coverage(const abacus_eval *ev)
{
	return ev->coverage;
}

double abacus_eval_memory_underestimate(const abacus_eval *ev)
{
	return ev->mem_under;
}

const abacus_eval_machine *abacus_eval_machines(const abacus_eval *ev, size_t *n)
{
	*n = ev->n_machines;
	return ev->machines;
}
