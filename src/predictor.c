/*
 * predictor.c — the public predictor: training from datasets, prediction for an analysed
 * configuration, and the versioned bundle file.
 *
 * Bundle format (text, one record per line, floats as C99 hexadecimal so they round-trip exactly):
 *
 *   abacus-predictor 17      (14 to 16 are read too: see below)
 *   schema <features> <fnv64 of the feature names>
 *   features <features>   then one line per feature column, in order: "f <name>" (the last is "threads")
 *   terms <K> <name_1> ... <name_K>   the analytic time terms, in order (model.h ab_term_names)
 *   hw <count>            then per hardware id:  hw_id <id> <threads> <median calib_s> <use calib: 0|1>
 *                         (0: the hardware's speed index proved noisier than its times, and is not used)
 *   base <K> <c_1> ... <c_K>   one line per hardware id, in the order above: seconds per unit of each
 *                              analytic time term, per unit of calib (K = AB_TIME_TERMS, in the
 *                              order of the terms line)
 *   rows <training rows>  digest <fnv64 of the training rows>
 *   intervals <time q05> <time q95> <memory q05> <memory q95>      (log residuals)
 *   (version 17:) hw_intervals <n> <q05> <q95> ...   each hardware id's time quantiles, in the hw order
 *   ensemble time <base score> <trees>     then per tree: tree <nodes>, one line per node:
 *       <feature> <threshold> <yes> <no> <missing> <leaf value>        (feature -1: a leaf)
 *   ensemble memory ...
 *   (version 17:) novelty <dims> <graphs> <mem_tau> <widen_t> <widen_m>   (novelty.c; version 18: widen_m of
 *                         memory's lower end, then of its upper end), then per training
 *                         graph its composition, the non-zero entries only:  r <j>:<value> ...
 *   (version 15 and later, when trained with machine profiles:)
 *   profile <rows> <machines> <id_1> ... <id_n>   the profile-mode time model (model.h), trained on the
 *                                                rows of the machines that have a profile
 *   base <K> <c_1> ... <c_K>   seconds per unit of each term per second of its measured profile rate
 *   profile_intervals <time q05> <time q95> <widen_t>   from leave-one-machine-out residuals (widen_t:
 *                                                      version 17), then optionally the q05 and q95 of one
 *                                                      thread and of more, then the few-shot factor's
 *                                                      prior in rows, of one thread and of more (model.h
 *                                                      shot_prior_rows), then the spread it was set
 *                                                      from, of one thread and of more (shot_spread)
 *   ensemble profile_time ...
 *   end
 *
 * A bundle of another version or feature schema is refused with a message that says to retrain. Versions
 * 14 to 16 have no novelty section: they predict as they did (distance 0, no fading, no widening). Versions
 * 14 to 18 price seventeen terms, today's without AB_TERM_BMM_ITEMS, which they read as 0 (they predict as they
 * did). Versions 14 and 15 have no names: their terms are the seventeen of v15_terms, and a bundle whose feature or term
 * names differ from this code's is refused naming the first difference, never read into the wrong columns.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "model.h"
#include "runtime.h"

#define BUNDLE_VERSION 19 /* 19: eighteen terms (a batched product's matrices, each its own fixed cost); 18: memory's intervals widen at each end by its own factor; 17: the training graphs' compositions, the memory correction's fade and the intervals' widening with the distance from them (novelty.c); 16: feature and term names; 15: an optional profile-mode time model (machine profiles); 14: seventeen terms (activation arithmetic beyond a ReLU's); 13: term 4 weighs each kernel layer by its measured fixed cost; 12: one-thread depthwise FLOPs in term 0 at a fixed ratio; 11: sixteen terms (the step's parameter traffic that fits in cache); 10: fifteen terms (batch-norm rows on small maps); 9: fourteen (the step's kernels per parameter tensor); 8: thirteen, large depthwise backward weighted 4× in term 1; 7: thirteen (slow-path
                         * convolutions apart); 6: twelve (recurrent steps and
                         * bytes); 5: ten (weight bytes, optimizer state apart); 4: eight; 3: one set of seven;
                         * 2: six; 1: four */
#define MAX_TREES 100000

/* Bundles of versions 14 to 18 price the seventeen terms before AB_TERM_BMM_ITEMS: read with that term's
 * coefficient 0, they predict as they did. */
#define V18_TERMS 17
_Static_assert(V18_TERMS == AB_TERM_BMM_ITEMS, "a version-18 bundle's terms are today's first seventeen");
static int bundle_terms(int version)
{
	return version >= 19 ? AB_TIME_TERMS : V18_TERMS;
}
/* The time terms of bundle versions 14 and 15, which did not write their names. */
static const char *const v15_terms[] = {
	"conv_flops", "groupconv_flops", "matmul_flops", "activation_bytes", "kernel_layers", "step_weight_bytes",
	"thin_matmul_flops", "view_layers", "weight_read_bytes", "optimizer_bytes", "recurrent_steps",
	"recurrent_bytes", "im2col_conv_flops", "optimizer_tensors", "norm_rows", "step_cache_bytes",
	"activation_arith",
};

struct abacus_predictor {
	ab_model m;
	ab_model pm;           /* profile mode (has_profile): time from a machine's measured rates */
	int has_profile;
	size_t profile_rows;
	char *profile_ids[AB_MAX_MACHINES];
	int n_profile_ids;
	int d;
	uint64_t schema;
	char *hw_ids[AB_MAX_HW];
	int hw_threads[AB_MAX_HW];
	int n_hw;
	size_t rows;
	uint64_t digest;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* Column i of the predictor's input: the graph's features, then the hardware's thread count and its index
 * among the bundle's hardware ids (model.h AB_X_HW). */
static void feature_column_name(char *buf, size_t len, int i)
{
	if ((size_t)i < abacus_features_count())
		abacus_feature_name(buf, len, (size_t)i);
	else
		snprintf(buf, len, "%s", (size_t)i == abacus_features_count() ? "threads" : "hw_index");
}

static uint64_t schema_hash(void)
{
	uint64_t h = 1469598103934665603ULL;
	char name[128];
	for (size_t i = 0; i < abacus_features_count(); i++) {
		abacus_feature_name(name, sizeof name, i);
		h = fnv(h, name, strlen(name) + 1);
	}
	return fnv(fnv(h, "threads", 8), "hw_index", 9);
}

void abacus_predictor_free(abacus_predictor *p)
{
	if (!p)
		return;
	ab_model_free(&p->m);
	ab_model_free(&p->pm);
	for (int i = 0; i < p->n_hw; i++)
		ab_free(p->hw_ids[i]);
	for (int i = 0; i < p->n_profile_ids; i++)
		ab_free(p->profile_ids[i]);
	ab_free(p);
}

int abacus_train(abacus_predictor **out, abacus_dataset *const *sets, size_t n_sets, const abacus_train_opts *opts,
                 abacus_error *err)
{
	*out = NULL;
	ab_err_clear(err);
	abacus_train_opts oc;
	if (ab_train_opts_read(&oc, opts, err))
		return ABACUS_EINVAL;
	const abacus_train_opts *o = &oc;
	if (o->rounds < 1 || o->rounds > 100000 || o->max_depth < 1 || o->max_depth > 20 || !(o->eta > 0 && o->eta <= 1))
		return ab_err(err, ABACUS_EINVAL, "", "training options out of range (rounds 1..100000, depth 1..20, eta (0,1])");
	ab_examples ex;
	int rc = ab_examples_build(&ex, sets, n_sets, o->graph_root ? o->graph_root : ".", err);
	if (rc)
		return rc;
	abacus_predictor *p = ab_calloc(1, sizeof *p);
	size_t *idx = ab_malloc((ex.n ? ex.n : 1) * sizeof *idx), *pidx = ab_malloc((ex.n ? ex.n : 1) * sizeof *pidx);
	if (!p || !idx || !pidx) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < ex.n; i++)
		idx[i] = i;
	ab_shuffle(idx, ex.n, o->seed);
	ab_train_params prm;
	ab_train_params_from(&prm, o);
	/* Families named: the per-hardware-id model's intervals are calibrated on whole families held out too
	 * (ab_model_fit); attached before hw_ex is copied so that it sees them. */
	if (o->n_family_of && (rc = ab_examples_families(&ex, o->family_of, o->n_family_of, err)))
		goto out;
	/* The per-hardware-id fit sees the profiles only to scale the recurrent terms an id borrows (model.c
	 * borrow_scale); attached before the copy, freed with ex. */
	if (o->n_machines && (rc = ab_examples_attach_borrow(&ex, o->machines, o->n_machines, err)))
		goto out;
	/* With machine profiles, the profile-mode time model is fitted too, on the rows of the machines that have
	 * one (pidx[0..ns)). They are attached before the first fit so that the progress total is known from the
	 * start; the per-hardware-id model is fitted on a copy of the examples without them, as before. */
	ab_examples hw_ex = ex;
	size_t ns = 0;
	if (o->n_machines) {
		if (o->n_machines > AB_MAX_MACHINES) {
			rc = ab_err(err, ABACUS_ELIMIT, "", "more than %d machine profiles", AB_MAX_MACHINES);
			goto out;
		}
		if ((rc = ab_examples_attach_machines(&ex, o->machines, o->n_machines, err)))
			goto out;
		for (size_t i = 0; i < ex.n; i++)
			if (ex.mach[idx[i]] >= 0)
				pidx[ns++] = idx[i];
		if (ns < AB_MIN_HW_ROWS) {
			rc = ab_err(err, ABACUS_EINVAL, "", "only %zu rows come from machines with a profile (%d needed for the "
			            "profile-mode time model)", ns, AB_MIN_HW_ROWS);
			goto out;
		}
	}
	ab_progress pg;
	ab_progress_start(&pg, o, ab_model_fit_units(&hw_ex, idx, ex.n, 1) + (ns ? ab_model_fit_units(&ex, pidx, ns, 1) : 0));
	if ((rc = ab_model_fit(&p->m, &hw_ex, idx, ex.n, &prm, 1, &pg, err)))
		goto out;
	p->d = ex.d;
	p->schema = schema_hash();
	p->rows = ex.n;
	p->n_hw = ex.n_hw;
	for (int h = 0; h < ex.n_hw; h++) {
		p->hw_ids[h] = ex.hw_ids[h];
		ex.hw_ids[h] = NULL;
		p->hw_threads[h] = ex.hw_threads[h];
	}
	ex.n_hw = 0;
	uint64_t dg = 1469598103934665603ULL;
	for (size_t i = 0; i < ex.n; i++) {
		const abacus_row *r = ex.rows[i];
		char line[512];
		int len = snprintf(line, sizeof line, "%s|%s|%lld|%s|%s|%.9g|%lld", r->network, r->input_shape,
		                   (long long)r->batch, r->optimizer, r->hw, r->time_s, (long long)r->memory_bytes);
		dg = fnv(dg, line, (size_t)len);
	}
	p->digest = dg;
	if (ns) {
		if ((rc = ab_model_fit(&p->pm, &ex, pidx, ns, &prm, 1, &pg, err)))
			goto out;
		p->has_profile = 1;
		p->profile_rows = ns;
		for (int q = 0; q < ex.n_mach; q++) {
			int used = 0;
			for (size_t i = 0; i < ns && !used; i++)
				used = ex.mach[pidx[i]] == q;
			if (!used)
				continue;
			if (!(p->profile_ids[p->n_profile_ids] = ab_strdup(ex.machines[q]->id))) {
				rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
				goto out;
			}
			p->n_profile_ids++;
		}
	}
out:
	ab_free(idx);
	ab_free(pidx);
	ab_examples_free(&ex);
	if (rc) {
		abacus_predictor_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

static int hw_index(const abacus_predictor *p, const char *hw)
{
	for (int h = 0; h < p->n_hw; h++)
		if (!strcmp(p->hw_ids[h], hw))
			return h;
	return -1;
}

/* The hardware id (index) that prices analysis `a` on `hw`: `hw` as the analysis's runtime keys it (ab_hw_key),
 * or with hw NULL the first id of that runtime. An error names what the predictor knows. */
static int resolve_hw(const abacus_predictor *p, const abacus_analysis *a, const char *hw, abacus_error *err)
{
	const ab_runtime *rt = a->rt, *def = ab_runtime_find(NULL);
	size_t plen = strlen(rt->name);
	char key[224];
	if (hw && rt != def && !strncmp(hw, rt->name, plen) && hw[plen] == '/') {
		int h = hw_index(p, hw); /* already a key of this runtime: a prediction's out->hw, given back */
		if (h >= 0)
			return h;
	}
	if (hw) {
		ab_hw_key(key, sizeof key, rt, hw);
		int h = hw_index(p, key);
		if (h >= 0)
			return h;
		/* A bare id ("cpu1") that only machines' rows have ("cpu1@<machine>", model.c row_hw_key): the first. */
		size_t kl = strlen(key);
		for (h = 0; !strchr(hw, '@') && h < p->n_hw; h++)
			if (!strncmp(p->hw_ids[h], key, kl) && p->hw_ids[h][kl] == '@')
				return h;
	} else {
		for (int h = 0; h < p->n_hw; h++) {
			const char *id = p->hw_ids[h];
			if (rt == def ? !strchr(id, '/') : !strncmp(id, rt->name, plen) && id[plen] == '/')
				return h;
		}
	}
	char known[1024] = "";
	for (int i = 0; i < p->n_hw; i++)
		snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", p->hw_ids[i]);
	if (hw)
		return ab_err(err, ABACUS_EINVAL, hw, "unknown hardware id '%s' for runtime %s (this predictor knows: %s)", hw,
		              rt->name, known);
	return ab_err(err, ABACUS_EINVAL, rt->name, "this predictor has no rows of runtime %s (it knows: %s); retrain it "
	              "with that runtime's rows (data/%s/dataset.csv); 'abacus inspect GRAPH --runtime %s' gives its analytic "
	              "memory simulation meanwhile", rt->name, known, rt->name, rt->name);
}

size_t abacus_predictor_n_hw(const abacus_predictor *p)
{
	return (size_t)p->n_hw;
}

const char *abacus_predictor_hw(const abacus_predictor *p, size_t i)
{
	return i < (size_t)p->n_hw ? p->hw_ids[i] : NULL;
}

double abacus_predictor_calib(const abacus_predictor *p, const char *hw)
{
	int h = hw ? hw_index(p, hw) : -1;
	return h < 0 ? -1 : p->m.calib[h];
}

double abacus_predictor_shot_factor(const abacus_predictor *p, double *log_ratios, size_t n, int threads,
                                    double *prior_rows)
{
	const ab_model *m = p->has_profile ? &p->pm : &p->m; /* (a model without machine folds: prior 0) */
	double rows = ab_shot_prior_rows(m, log_ratios, n, threads);
	if (prior_rows)
		*prior_rows = rows;
	return exp(ab_shot_log_factor(log_ratios, n, rows));
}

/* The feature vector and the analytic time terms of `a` on hardware running `threads` threads. */
static int vector_and_terms(double *x, size_t cap, double terms[AB_TIME_TERMS], const abacus_predictor *p,
                            const abacus_analysis *a, int threads, int hw, abacus_error *err)
{
	if (p->d > (int)cap)
		return ab_err(err, ABACUS_ELIMIT, "", "feature schema too large");
	int rc = ab_examples_vector(x, p->d, a, threads, hw, err);
	if (rc)
		return rc;
	ab_time_terms(terms, a, threads);
	return 0;
}

/* Time from the analytic base `tb` and `tm`'s correction and interval; memory from the per-hardware-id
 * model's (memory does not depend on the machine). */
static void fill_prediction(abacus_prediction *out, const abacus_predictor *p, const ab_model *tm, const double *q_time,
                            const double *x, double tb, const abacus_analysis *a)
{
	const abacus_memory *mem = abacus_analysis_memory(a);
	double peak = (double)mem->peak, held = (double)mem->held_peak;
	/* The distance from the training graphs (novelty.c), to the per-hardware-id model's: the profile-mode
	 * model's rows are a subset of them, and its widening was fitted on distances of the same kind. */
	double nov = ab_novelty_distance(&p->m.nov, x);
	double st = 1 + tm->nov.widen_t * nov;
	double sm_lo = 1 + p->m.nov.widen_m[0] * nov, sm_hi = 1 + p->m.nov.widen_m[1] * nov;
	double ft = ab_ensemble_predict(&tm->time, x, p->d);
	double fm = ab_novelty_mem_weight(&p->m.nov, nov) * ab_ensemble_predict(&p->m.mem, x, p->d);
	out->time_s = tb * exp(ft);
	out->time_lo_s = tb * exp(ft + q_time[0] * st);
	out->time_hi_s = tb * exp(ft + q_time[1] * st);
	out->memory_bytes = (int64_t)llround(peak * exp(fm));
	out->memory_lo_bytes = (int64_t)llround(peak * exp(fm + p->m.q_mem[0] * sm_lo));
	/* The upper end from the peak with what hand-written forwards' local names may hold (memory.c held_scopes),
	 * as far as the training graphs' residuals do not already say it (ab_novelty_held_factor). */
	double hf = ab_novelty_held_factor(&p->m.nov, nov, peak, held);
	out->memory_hi_bytes = (int64_t)llround(peak * hf * exp(fm + p->m.q_mem[1] * sm_hi));
	out->time_analytic_s = tb;
	out->novelty = nov;
}

int abacus_predict(abacus_prediction *out, const abacus_predictor *p, const abacus_analysis *a, const char *hw,
                   double calib_s, abacus_error *err)
{
	memset(out, 0, sizeof *out);
	int h = resolve_hw(p, a, hw, err);
	if (h < 0)
		return h;
	double x[AB_MAX_FEATURES], terms[AB_TIME_TERMS];
	int rc = vector_and_terms(x, sizeof x / sizeof x[0], terms, p, a, p->hw_threads[h], h, err);
	if (rc)
		return rc;
	double calib = ab_model_calib(&p->m, h, calib_s);
	fill_prediction(out, p, &p->m, p->m.q_time_hw[h], x, ab_time_base(&p->m, h, terms, calib), a);
	out->hw = p->hw_ids[h];
	out->calib_s = calib;
	return 0;
}

/* The few-shot prior in rows of a machine with shots (ab_shot_prior_rows: its shots' own spread). */
static double machine_prior_rows(const ab_model *pm, const abacus_machine *mc)
{
	double lr[AB_MAX_SHOTS];
	size_t n = mc->n_shots < AB_MAX_SHOTS ? mc->n_shots : AB_MAX_SHOTS;
	for (size_t i = 0; i < n; i++)
		lr[i] = mc->shots[i].lr;
	return ab_shot_prior_rows(pm, lr, n, mc->threads);
}

/* The profile-mode prediction; with `bare`, without the machine's few-shot factor and shots (what `abacus
 * adapt` compares its rows with). *comp (may be NULL) gets the configuration's composition. */
static int predict_machine(abacus_prediction *out, const abacus_predictor *p, const abacus_analysis *a,
                           const abacus_machine *machine, double calib_s, int bare, double comp[AB_COMP_DIM],
                           abacus_error *err)
{
	memset(out, 0, sizeof *out);
	if (!p->has_profile)
		return ab_err(err, ABACUS_EINVAL, machine->id, "this predictor was trained without machine profiles: it cannot "
		              "price a machine by its profile (retrain with 'abacus train --machines DIR')");
	if (strcmp(machine->runtime, a->rt->name))
		return ab_err(err, ABACUS_EINVAL, machine->id, "the machine profile was measured with runtime %s and the "
		              "configuration is priced for %s: profile the machine through that runtime (abacus calibrate "
		              "--python PATH --out FILE) or analyse with --runtime %s", machine->runtime, a->rt->name,
		              machine->runtime);
	/* A machine priced from its profile shows the trees no hardware index: what they learnt for every
	 * machine (AB_HW_HIDE_EVERY), not one training machine's residuals. */
	double x[AB_MAX_FEATURES], terms[AB_TIME_TERMS], c[AB_COMP_DIM];
	int rc = vector_and_terms(x, sizeof x / sizeof x[0], terms, p, a, machine->threads, -1, err);
	if (rc)
		return rc;
	ab_composition(c, x);
	if (comp)
		memcpy(comp, c, sizeof c);
	double ref = machine->rate[AB_RATE_REFERENCE];
	double dw[2];
	ab_time_conv_depthwise(dw, terms, a, machine->threads);
	double tb = ab_time_base_profile(&p->pm, terms, dw, machine->rate, calib_s > 0 && ref > 0 ? calib_s / ref : 1);
	if (!bare)
		tb *= machine->adapt * exp(ab_shot_correction(machine->shots, machine->n_shots, SIZE_MAX, log(machine->adapt),
		                                              c, log((double)a->cfg.batch),
		                                              ab_shot_local_prior(&p->pm, machine_prior_rows(&p->pm, machine))));
	fill_prediction(out, p, &p->pm, ab_profile_quantiles(&p->pm, machine->threads), x, tb, a);
	out->hw = machine->id;
	out->calib_s = calib_s > 0 ? calib_s : ref;
	return 0;
}

int abacus_predict_machine(abacus_prediction *out, const abacus_predictor *p, const abacus_analysis *a,
                           const abacus_machine *machine, double calib_s, abacus_error *err)
{
	return predict_machine(out, p, a, machine, calib_s, 0, NULL, err);
}

int abacus_machine_add_shot(abacus_machine *m, const abacus_predictor *p, const abacus_analysis *a, double measured_s,
                            double calib_s, double *log_ratio, abacus_error *err)
{
	if (!(measured_s > 0) || !isfinite(measured_s))
		return ab_err(err, ABACUS_EINVAL, m->id, "a shot needs a measured time > 0 s (got %g)", measured_s);
	if (m->n_shots >= AB_MAX_SHOTS)
		return ab_err(err, ABACUS_ELIMIT, m->id, "more than %d shots for one machine: adapt on fewer rows "
		              "(a few per network are plenty)", AB_MAX_SHOTS);
	abacus_prediction pr;
	double c[AB_COMP_DIM];
	int rc = predict_machine(&pr, p, a, m, calib_s, 1, c, err);
	if (rc)
		return rc;
	double lr = log(measured_s / pr.time_s);
	if (!(fabs(lr) <= 20))
		return ab_err(err, ABACUS_EINVAL, m->id, "a measured time of %g s against %g s predicted is no shot of this "
		              "machine", measured_s, pr.time_s);
	ab_shot *grown = ab_realloc(m->shots, (m->n_shots + 1) * sizeof *grown);
	if (!grown)
		return ab_err(err, ABACUS_ENOMEM, m->id, "out of memory");
	m->shots = grown;
	ab_shot *s = &m->shots[m->n_shots++];
	s->lr = lr;
	s->log_batch = log((double)a->cfg.batch);
	memcpy(s->comp, c, sizeof c);
	if (log_ratio)
		*log_ratio = lr;
	return 0;
}

int abacus_predictor_has_profile(const abacus_predictor *p)
{
	return p->has_profile;
}

int abacus_predictor_layer_shares(double *share, size_t n, double *step_share, const abacus_predictor *p,
                                  const abacus_analysis *a, const char *hw, abacus_error *err)
{
	int h = resolve_hw(p, a, hw, err);
	if (h < 0)
		return h;
	size_t nl;
	abacus_analysis_layers(a, &nl);
	if (n != nl)
		return ab_err(err, ABACUS_EINVAL, "", "%zu shares asked for an analysis of %zu layers", n, nl);
	double terms[AB_TIME_TERMS];
	ab_time_terms(terms, a, p->hw_threads[h]);
	double step = ab_step_time_weight(&p->m, h, terms), sum = step;
	for (size_t i = 0; i < n; i++)
		sum += share[i] = ab_layer_time_weight(&p->m, h, a, i, p->hw_threads[h]);
	if (!(sum > 0))
		return ab_err(err, ABACUS_EINVAL, "", "the predictor prices this graph at zero time");
	for (size_t i = 0; i < n; i++)
		share[i] /= sum;
	if (step_share)
		*step_share = step / sum;
	return 0;
}

/* ---- bundle I/O ---- */

static void put_ensemble(ab_buf *b, const char *name, const ab_ensemble *e)
{
	ab_buf_printf(b, "ensemble %s %a %d\n", name, e->base_score, e->n_trees);
	for (int t = 0; t < e->n_trees; t++) {
		const ab_tree *tr = &e->trees[t];
		ab_buf_printf(b, "tree %d\n", tr->n_nodes);
		for (int k = 0; k < tr->n_nodes; k++) {
			const ab_tnode *nd = &tr->nodes[k];
			ab_buf_printf(b, "%d %a %d %d %d %a\n", nd->feature, (double)nd->threshold, nd->yes, nd->no, nd->missing,
			              nd->value);
		}
	}
}

static void put_novelty(ab_buf *b, const ab_novelty *nv)
{
	ab_buf_printf(b, "novelty %d %zu %a %a %a %a\n", AB_COMP_DIM, nv->n_ref, nv->mem_tau, nv->widen_t, nv->widen_m[0],
	              nv->widen_m[1]);
	for (size_t i = 0; i < nv->n_ref; i++) {
		ab_buf_printf(b, "r");
		for (int j = 0; j < AB_COMP_DIM; j++)
			if (nv->ref[i * AB_COMP_DIM + j] != 0)
				ab_buf_printf(b, " %d:%a", j, nv->ref[i * AB_COMP_DIM + j]);
		ab_buf_printf(b, "\n");
	}
}

/* "base K c_1 ... c_K": K must be the version's count of terms (`want`), every c finite and ≥ 0, not all 0;
 * the terms after them are 0. */
static int parse_base(const char *s, double coef[AB_TIME_TERMS], int want)
{
	int k, used;
	if (sscanf(s, "base %d%n", &k, &used) != 1 || k != want || k > AB_TIME_TERMS)
		return -1;
	for (int i = k; i < AB_TIME_TERMS; i++)
		coef[i] = 0;
	s += used;
	double sum = 0;
	for (int i = 0; i < k; i++) {
		char *end;
		coef[i] = strtod(s, &end);
		if (end == s || !(coef[i] >= 0) || !isfinite(coef[i]))
			return -1;
		sum += coef[i];
		s = end;
	}
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	return *s || !(sum > 0) ? -1 : 0;
}

int abacus_predictor_save(char **out, size_t *len, const abacus_predictor *p, abacus_error *err)
{
	ab_buf b = { 0 };
	*out = NULL;
	*len = 0;
	ab_buf_printf(&b, "abacus-predictor %d\nschema %d %016llx\nfeatures %d\n", BUNDLE_VERSION, p->d,
	              (unsigned long long)p->schema, p->d);
	for (int i = 0; i < p->d; i++) {
		char name[128];
		feature_column_name(name, sizeof name, i);
		ab_buf_printf(&b, "f %s\n", name);
	}
	ab_buf_printf(&b, "terms %d", AB_TIME_TERMS);
	for (int i = 0; i < AB_TIME_TERMS; i++)
		ab_buf_printf(&b, " %s", ab_term_names[i]);
	ab_buf_printf(&b, "\nhw %d\n", p->n_hw);
	for (int h = 0; h < p->n_hw; h++)
		ab_buf_printf(&b, "hw_id %s %d %a %d\n", p->hw_ids[h], p->hw_threads[h], p->m.calib[h], p->m.use_calib[h]);
	for (int h = 0; h < p->n_hw; h++) {
		ab_buf_printf(&b, "base %d", AB_TIME_TERMS);
		for (int i = 0; i < AB_TIME_TERMS; i++)
			ab_buf_printf(&b, " %a", p->m.coef[h][i]);
		ab_buf_printf(&b, "\n");
	}
	ab_buf_printf(&b, "rows %zu\ndigest %016llx\nintervals %a %a %a %a\n", p->rows,
	              (unsigned long long)p->digest, p->m.q_time[0], p->m.q_time[1], p->m.q_mem[0], p->m.q_mem[1]);
	ab_buf_printf(&b, "hw_intervals %d", p->n_hw);
	for (int h = 0; h < p->n_hw; h++)
		ab_buf_printf(&b, " %a %a", p->m.q_time_hw[h][0], p->m.q_time_hw[h][1]);
	ab_buf_printf(&b, "\n");
	put_ensemble(&b, "time", &p->m.time);
	put_ensemble(&b, "memory", &p->m.mem);
	put_novelty(&b, &p->m.nov);
	if (p->has_profile) {
		ab_buf_printf(&b, "profile %zu %d", p->profile_rows, p->n_profile_ids);
		for (int i = 0; i < p->n_profile_ids; i++)
			ab_buf_printf(&b, " %s", p->profile_ids[i]);
		ab_buf_printf(&b, "\nbase %d", AB_TIME_TERMS);
		for (int i = 0; i < AB_TIME_TERMS; i++)
			ab_buf_printf(&b, " %a", p->pm.coef[0][i]);
		ab_buf_printf(&b, "\nprofile_intervals %a %a %a %a %a %a %a %a %a %a %a\n", p->pm.q_time[0], p->pm.q_time[1],
		              p->pm.nov.widen_t, p->pm.q_time_thr[0][0], p->pm.q_time_thr[0][1], p->pm.q_time_thr[1][0],
		              p->pm.q_time_thr[1][1], p->pm.shot_prior_rows[0], p->pm.shot_prior_rows[1], p->pm.shot_spread[0],
		              p->pm.shot_spread[1]);
		put_ensemble(&b, "profile_time", &p->pm.time);
	}
	ab_buf_printf(&b, "end\n");
	if (b.oom) {
		ab_buf_free(&b);
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	}
	*out = b.data;
	*len = b.len;
	return 0;
}

int abacus_predictor_save_file(const abacus_predictor *p, const char *path, abacus_error *err)
{
	char *data;
	size_t len;
	int rc = abacus_predictor_save(&data, &len, p, err);
	if (rc)
		return rc;
	/* Write to a temporary name and rename, so a crash never leaves a half-written bundle. */
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "wb");
	if (!f) {
		ab_free(data);
		return ab_err(err, ABACUS_EIO, path, "cannot write '%s'", tmp);
	}
	int ok = fwrite(data, 1, len, f) == len;
	ok = (fclose(f) == 0) && ok;
	ab_free(data);
	if (!ok || rename(tmp, path)) {
		remove(tmp);
		return ab_err(err, ABACUS_EIO, path, "cannot write '%s' (disk full or read-only?)", path);
	}
	return 0;
}

typedef struct reader {
	const char *p, *end;
	int line;
	char buf[4096]; /* the longest line: "base" and AB_TIME_TERMS hex doubles */
} reader;

/* Next line into r->buf (without newline); -1 at end of input or when a line is too long. */
static int next_line(reader *r)
{
	if (r->p >= r->end)
		return -1;
	const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
	size_t n = nl ? (size_t)(nl - r->p) : (size_t)(r->end - r->p);
	if (n >= sizeof r->buf)
		return -1;
	memcpy(r->buf, r->p, n);
	r->buf[n] = '\0';
	r->p = nl ? nl + 1 : r->end;
	r->line++;
	return 0;
}

static int bad(reader *r, abacus_error *err, const char *what)
{
	return ab_err(err, ABACUS_EPARSE, "", "predictor bundle line %d: %s (got '%.60s'); the file is corrupt or truncated",
	              r->line, what, r->p ? r->buf : "");
}

/* One field of a tree-node line: an int or a (hex) double, then the rest of the line in *s. */
static int field_int(const char **s, int *v)
{
	char *end;
	errno = 0;
	long x = strtol(*s, &end, 10);
	if (end == *s || errno || x < INT_MIN || x > INT_MAX)
		return -1;
	*v = (int)x;
	*s = end;
	return 0;
}

static int field_double(const char **s, double *v)
{
	char *end;
	*v = strtod(*s, &end);
	if (end == *s)
		return -1;
	*s = end;
	return 0;
}

/* "feature threshold yes no missing value", as "%d %la %d %d %d %la" would read it. By hand because a
 * bundle has ~40,000 such lines and sscanf's per-call setup made reading them most of the time of a whole
 * `abacus predict` process. */
static int parse_node(const char *s, ab_tnode *nd, double *thr)
{
	if (field_int(&s, &nd->feature) || field_double(&s, thr) || field_int(&s, &nd->yes) ||
	    field_int(&s, &nd->no) || field_int(&s, &nd->missing) || field_double(&s, &nd->value))
		return -1;
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	return *s ? -1 : 0;
}

static int get_ensemble(reader *r, const char *name, ab_ensemble *e, int d, abacus_error *err)
{
	char got[32];
	int n;
	if (next_line(r) || sscanf(r->buf, "ensemble %31s %la %d", got, &e->base_score, &n) != 3 || strcmp(got, name) ||
	    n < 0 || n > MAX_TREES || !isfinite(e->base_score))
		return bad(r, err, "expected an 'ensemble' header");
	e->trees = ab_calloc((size_t)n + 1, sizeof *e->trees);
	if (!e->trees)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	for (int t = 0; t < n; t++) {
		ab_tree *tr = &e->trees[t];
		int nn;
		if (next_line(r) || sscanf(r->buf, "tree %d", &nn) != 1 || nn < 1 || nn > 1 << 20)
			return bad(r, err, "expected 'tree <nodes>'");
		e->n_trees = t + 1;
		tr->nodes = ab_calloc((size_t)nn, sizeof *tr->nodes);
		if (!tr->nodes)
			return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		tr->n_nodes = nn;
		for (int k = 0; k < nn; k++) {
			ab_tnode *nd = &tr->nodes[k];
			double thr;
			if (next_line(r) || parse_node(r->buf, nd, &thr) || !isfinite(nd->value))
				return bad(r, err, "expected a tree node");
			nd->threshold = (float)thr;
		}
		int rc = ab_tree_validate(tr, d, err);
		if (rc)
			return ab_err(err, ABACUS_EPARSE, "", "predictor bundle line %d: %s", r->line, err->msg);
	}
	return 0;
}

/* The bundle's time terms against this code's, by name: a bundle of another time model is refused naming
 * the first term that differs, instead of pricing one term at another's coefficient. */
static int check_terms(const char *const *names, int k, int want, abacus_error *err)
{
	for (int i = 0; i < k && i < AB_TIME_TERMS; i++)
		if (strcmp(names[i], ab_term_names[i]))
			return ab_err(err, ABACUS_EUNSUPPORTED, "",
			              "the bundle's time term %d is '%s' where this abacus has '%s' (another version of "
			              "the time model): retrain it with 'abacus train'",
			              i + 1, names[i], ab_term_names[i]);
	if (k != want)
		return ab_err(err, ABACUS_EUNSUPPORTED, "",
		              "the bundle has %d time terms, this abacus %d (its term %d is '%s'): retrain it with "
		              "'abacus train'",
		              k, want, (k < want ? k : want) + 1, k < want ? ab_term_names[k] : names[want]);
	return 0;
}

/* "features <d>", d lines "f <name>", "terms <K> <names>" (version 16): each name must be this code's. */
static int check_names(reader *r, int d, int want_terms, abacus_error *err)
{
	int n;
	if (next_line(r) || sscanf(r->buf, "features %d", &n) != 1 || n != d)
		return bad(r, err, "expected 'features <count>' with the schema's count");
	for (int i = 0; i < n; i++) {
		char want[128];
		feature_column_name(want, sizeof want, i);
		if (next_line(r) || strncmp(r->buf, "f ", 2))
			return bad(r, err, "expected 'f <feature name>'");
		if (r->p >= r->end) /* a name cut short by the end of the file is truncation, not another schema */
			return bad(r, err, "the file ends inside the feature names");
		if (strcmp(r->buf + 2, want))
			return ab_err(err, ABACUS_EUNSUPPORTED, "",
			              "the bundle's feature column %d is '%.100s' where this abacus has '%s': retrain it "
			              "with 'abacus train'",
			              i + 1, r->buf + 2, want);
	}
	int k, used;
	if (next_line(r) || sscanf(r->buf, "terms %d%n", &k, &used) != 1 || k < 1 || k > 64)
		return bad(r, err, "expected 'terms <K> <name_1> ... <name_K>'");
	char store[64][48];
	const char *names[64];
	const char *s = r->buf + used;
	for (int i = 0; i < k; i++) {
		int u;
		if (sscanf(s, "%47s%n", store[i], &u) != 1)
			return bad(r, err, "the 'terms' line names fewer terms than it counts");
		names[i] = store[i];
		s += u;
	}
	while (*s == ' ' || *s == '\r')
		s++;
	if (*s)
		return bad(r, err, "the 'terms' line names more terms than it counts");
	return check_terms(names, k, want_terms, err);
}

/* "hw_intervals <n> <q05> <q95> ..." (version 17): each hardware id's time quantiles, in the order of the
 * hw lines; older bundles give every id the quantiles of all rows. */
static int get_hw_intervals(reader *r, abacus_predictor *p, int version, abacus_error *err)
{
	for (int h = 0; h < p->n_hw; h++)
		memcpy(p->m.q_time_hw[h], p->m.q_time, sizeof p->m.q_time);
	if (version < 17)
		return 0;
	int n, used;
	if (next_line(r) || sscanf(r->buf, "hw_intervals %d%n", &n, &used) != 1 || n != p->n_hw)
		return bad(r, err, "expected 'hw_intervals <count>' with one pair per hardware id");
	const char *s = r->buf + used;
	for (int h = 0; h < n; h++)
		for (int k = 0; k < 2; k++)
			if (field_double(&s, &p->m.q_time_hw[h][k]) || !isfinite(p->m.q_time_hw[h][k]))
				return bad(r, err, "the 'hw_intervals' line has fewer quantiles than hardware ids");
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	return *s ? bad(r, err, "the 'hw_intervals' line has more quantiles than hardware ids") : 0;
}

/* "novelty <dims> <n> <mem_tau> <widen_t> <widen_m lower> <widen_m upper>" (version 17: one widen_m for
 * both ends) and its n "r <j>:<value> ..." lines. */
static int get_novelty(reader *r, ab_novelty *nv, abacus_error *err, int version)
{
	int dims, used, want = version >= 18 ? 6 : 5;
	size_t n;
	if (next_line(r) || sscanf(r->buf, "novelty %d %zu %la %la %la %la", &dims, &n, &nv->mem_tau, &nv->widen_t,
	                           &nv->widen_m[0], &nv->widen_m[1]) != want || dims != AB_COMP_DIM || n > 10000000 ||
	    !(nv->mem_tau >= 0) || !(nv->widen_t >= 0) || !(nv->widen_m[0] >= 0) || !isfinite(nv->mem_tau) ||
	    !isfinite(nv->widen_t) || !isfinite(nv->widen_m[0]) ||
	    (want == 6 && (!(nv->widen_m[1] >= 0) || !isfinite(nv->widen_m[1]))))
		return bad(r, err, version >= 18 ? "expected 'novelty <dims> <graphs> <tau> <widen> <widen> <widen>' with "
		                                   "this abacus' dims" :
		                                   "expected 'novelty <dims> <graphs> <tau> <widen> <widen>' with this "
		                                   "abacus' dims");
	if (want == 5)
		nv->widen_m[1] = nv->widen_m[0];
	for (size_t i = 0; i < n; i++) {
		double c[AB_COMP_DIM] = { 0 };
		if (next_line(r) || r->buf[0] != 'r')
			return bad(r, err, "expected a composition line 'r <j>:<value> ...'");
		const char *s = r->buf + 1;
		int j;
		double v;
		while (sscanf(s, " %d:%la%n", &j, &v, &used) == 2) {
			if (j < 0 || j >= AB_COMP_DIM || !isfinite(v))
				return bad(r, err, "a composition entry out of range");
			c[j] = v;
			s += used;
		}
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (*s)
			return bad(r, err, "expected a composition line 'r <j>:<value> ...'");
		int rc = ab_novelty_add(nv, c, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* The optional profile-mode section (version 15 and later): "profile <rows> <n> <ids>", its base,
 * intervals and time ensemble; r->buf holds the "profile" line. */
static int get_profile_section(reader *r, abacus_predictor *p, int version, abacus_error *err)
{
	int rc;
	const char *s = r->buf + 8;
	int n_ids, used;
	if (sscanf(s, "%zu %d%n", &p->profile_rows, &n_ids, &used) != 2 || n_ids < 1 || n_ids > AB_MAX_MACHINES)
		return bad(r, err, "expected 'profile <rows> <machines> <id>...'");
	s += used;
	for (int i = 0; i < n_ids; i++) {
		char id[96];
		if (sscanf(s, "%95s%n", id, &used) != 1)
			return bad(r, err, "the 'profile' line names fewer machines than it counts");
		s += used;
		if (!(p->profile_ids[i] = ab_strdup(id)))
			return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		p->n_profile_ids = i + 1;
	}
	if (next_line(r) || parse_base(r->buf, p->pm.coef[0], bundle_terms(version)))
		return bad(r, err, "expected the profile model's 'base <K> <c_1> ... <c_K>'");
	/* Then, since 2026-12-06 (no new version: a reader of version 19 before it reads the first three), the
	 * quantiles by thread count, one thread and more (model.h q_time_thr); without them, q05 and q95. And
	 * since 2026-12-07 the few-shot factor's prior in rows (model.h shot_prior_rows; without it 0: the
	 * shots' median alone, as before), and since 18:00 that day the spread it was set from (shot_spread;
	 * without it 0: one prior per thread count, as before). */
	int want = version >= 17 ? 3 : 2;
	double *qt = &p->pm.q_time_thr[0][0];
	double *sp = p->pm.shot_prior_rows, *ss = p->pm.shot_spread;
	sp[0] = sp[1] = ss[0] = ss[1] = 0;
	int got = next_line(r) ? 0 :
	          sscanf(r->buf, "profile_intervals %la %la %la %la %la %la %la %la %la %la %la", &p->pm.q_time[0],
	                 &p->pm.q_time[1], &p->pm.nov.widen_t, &qt[0], &qt[1], &qt[2], &qt[3], &sp[0], &sp[1], &ss[0], &ss[1]);
	int nonneg = 1;
	for (int k = 0; k < 2; k++)
		nonneg &= sp[k] >= 0 && isfinite(sp[k]) && ss[k] >= 0 && isfinite(ss[k]);
	if (got < want || (got > 3 && got != 7 && got != 9 && got != 11) || !isfinite(p->pm.q_time[0]) ||
	    !isfinite(p->pm.q_time[1]) || !(p->pm.nov.widen_t >= 0) || !isfinite(p->pm.nov.widen_t) || !nonneg)
		return bad(r, err, version >= 17 ? "expected 'profile_intervals <q05> <q95> <widen> [<q05> <q95> of one "
		                                   "thread, of more [<the few-shot prior's rows of one thread, of more> "
		                                   "[<their spread of one thread, of more>]]]'" :
		                                   "expected 'profile_intervals <q05> <q95>'");
	for (int k = 0; k < 4; k++)
		if (got < 7)
			qt[k] = p->pm.q_time[k % 2];
		else if (!isfinite(qt[k]))
			return bad(r, err, "a 'profile_intervals' quantile by thread count is not a finite number");
	if ((rc = get_ensemble(r, "profile_time", &p->pm.time, p->d, err)))
		return rc;
	p->pm.profile = 1;
	p->pm.has_intervals = 1;
	p->has_profile = 1;
	return 0;
}

int abacus_predictor_load(abacus_predictor **out, const char *data, size_t len, abacus_error *err)
{
	*out = NULL;
	ab_err_clear(err);
	reader r = { data, data + len, 0, "" };
	int rc = 0, version;
	abacus_predictor *p = ab_calloc(1, sizeof *p);
	if (!p)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	if (next_line(&r) || sscanf(r.buf, "abacus-predictor %d", &version) != 1) {
		rc = ab_err(err, ABACUS_EPARSE, "", "not an abacus predictor bundle (no 'abacus-predictor' header)");
		goto out;
	}
	if (version < 14 || version > BUNDLE_VERSION) { /* 14 is 15 without the profile section */
		rc = ab_err(err, ABACUS_EUNSUPPORTED, "",
		            "predictor bundle version %d; this abacus reads version %d: retrain it with 'abacus train'", version,
		            BUNDLE_VERSION);
		goto out;
	}
	unsigned long long schema;
	if (next_line(&r) || sscanf(r.buf, "schema %d %llx", &p->d, &schema) != 2) {
		rc = bad(&r, err, "expected 'schema'");
		goto out;
	}
	p->schema = schema;
	/* By name first (version 16): the message then says which column or term differs. */
	if (p->d < 1 || p->d > 1 << 16) {
		rc = bad(&r, err, "expected 'schema <columns> <hash>' with 1 to 65536 columns");
		goto out;
	}
	int n_terms = bundle_terms(version);
	if (version >= 16 ? (rc = check_names(&r, p->d, n_terms, err)) : (rc = check_terms(v15_terms, 17, n_terms, err)))
		goto out;
	if (p->d != (int)abacus_features_count() + 2 || p->schema != schema_hash()) {
		rc = ab_err(err, ABACUS_EUNSUPPORTED, "",
		            "the bundle's feature schema (%d columns, hash %016llx) differs from this abacus' (%d columns): "
		            "retrain it with 'abacus train'",
		            p->d, schema, (int)abacus_features_count() + 2);
		goto out;
	}
	int n_hw;
	if (next_line(&r) || sscanf(r.buf, "hw %d", &n_hw) != 1 || n_hw < 1 || n_hw > AB_MAX_HW) {
		char what[64];
		snprintf(what, sizeof what, "expected 'hw <count>' with 1 to %d ids", AB_MAX_HW);
		rc = bad(&r, err, what);
		goto out;
	}
	for (int h = 0; h < n_hw; h++) {
		char id[224];
		if (next_line(&r) ||
		    sscanf(r.buf, "hw_id %223s %d %la %d", id, &p->hw_threads[h], &p->m.calib[h], &p->m.use_calib[h]) != 4 ||
		    !(p->m.calib[h] > 0) || (p->m.use_calib[h] != 0 && p->m.use_calib[h] != 1)) {
			rc = bad(&r, err, "expected 'hw_id <id> <threads> <calib> <uses speed index: 0|1>'");
			goto out;
		}
		if (!(p->hw_ids[h] = ab_strdup(id))) {
			rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
			goto out;
		}
		p->n_hw = h + 1;
	}
	for (int h = 0; h < n_hw; h++)
		if (next_line(&r) || parse_base(r.buf, p->m.coef[h], n_terms)) {
			rc = bad(&r, err, "expected 'base <K> <c_1> ... <c_K>' (one line per hardware id, in order)");
			goto out;
		}
	unsigned long long digest;
	if (next_line(&r) ||
	    sscanf(r.buf, "rows %zu", &p->rows) != 1 || next_line(&r) || sscanf(r.buf, "digest %llx", &digest) != 1 ||
	    next_line(&r) ||
	    sscanf(r.buf, "intervals %la %la %la %la", &p->m.q_time[0], &p->m.q_time[1], &p->m.q_mem[0], &p->m.q_mem[1]) != 4) {
		rc = bad(&r, err, "expected rows, digest and intervals");
		goto out;
	}
	p->digest = digest;
	p->m.has_intervals = 1;
	if ((rc = get_hw_intervals(&r, p, version, err)))
		goto out;
	if ((rc = get_ensemble(&r, "time", &p->m.time, p->d, err)) || (rc = get_ensemble(&r, "memory", &p->m.mem, p->d, err)))
		goto out;
	if (version >= 17 && (rc = get_novelty(&r, &p->m.nov, err, version)))
		goto out;
	if (next_line(&r)) {
		rc = bad(&r, err, "expected 'end'");
		goto out;
	}
	if (version >= 15 && !strncmp(r.buf, "profile ", 8)) {
		if ((rc = get_profile_section(&r, p, version, err)))
			goto out;
		if (next_line(&r)) {
			rc = bad(&r, err, "expected 'end'");
			goto out;
		}
	}
	if (strcmp(r.buf, "end")) {
		rc = bad(&r, err, "expected 'end'");
		goto out;
	}
out:
	if (rc) {
		abacus_predictor_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int abacus_predictor_load_file(abacus_predictor **out, const char *path, abacus_error *err)
{
	char *data;
	size_t len;
	*out = NULL;
	int rc = ab_read_file(&data, &len, path, (size_t)1 << 30, err);
	if (rc)
		return rc;
	rc = abacus_predictor_load(out, data, len, err);
	ab_free(data);
	if (rc && err && !err->where[0])
		snprintf(err->where, sizeof err->where, "%s", path);
	return rc;
}

void abacus_buffer_free(void *p)
{
	ab_free(p);
}
