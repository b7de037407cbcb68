/*
 * model.h — training examples built from measured rows, and the learned model: per target (time,
 * memory) an analytic base and a boosted-tree correction of log(measured / base).
 *
 *   memory:  base = the simulated peak (memory.c);            memory = base × exp(f_mem(x))
 *   time:    base = calib × Σ c_i · term_i                    time   = base × exp(f_time(x))
 *
 * The time terms are the analytic work of an iteration: forward + backward FLOPs, bytes moved by the
 * layers, the number of layers (per-operator overhead), and the optimizer step's traffic (weights,
 * gradients and optimizer state). The c_i ≥ 0 are fitted on the training rows by non-negative least
 * squares on relative error. `calib` is the row's machine speed index (docs/PROTOCOL.md), or the hardware's
 * median when predicting a configuration not measured. Both targets are ratios, so the trees learn
 * efficiency, not size: that is what lets them generalise to networks and batch sizes outside the
 * training set.
 */
#ifndef ABACUS_MODEL_H
#define ABACUS_MODEL_H

#include "analysis.h"
#include "machine.h"
#include "trees.h"

#define AB_MAX_HW 64 /* hardware ids (runtime × hw × machine) one model keys: every machine the campaign meets adds some */
/* A hardware id as the predictor keys it: the rows' own ("cpu1") for the default runtime, qualified by the
 * runtime for the others ("torch-2.15.0/cpu1"), so that each runtime's rows get their own rates. */
struct ab_runtime;
void ab_hw_key(char *buf, size_t len, const struct ab_runtime *rt, const char *hw);
#define AB_MAX_MACHINES 64 /* machine profiles one evaluation attaches */
#define AB_MIN_NOISE_PAIRS 10 /* repeated pairs a hardware id needs for its rows to be weighted by their noise */
#define AB_MIN_HW_ROWS 30 /* fewer rows of a hardware id: its time coefficients are the all-rows fit */
#define AB_MIN_TERM_ROWS 10 /* fewer rows of a hardware id that a term prices: that term keeps the all-rows rate */
#define AB_MIN_SCALE_ROWS 3 /* a hardware id with fewer than AB_MIN_HW_ROWS rows but this many: the all-rows rates
                             * times the median of its rows' measured / priced time */
#define AB_TERM_SUPPORT_SHARE 0.05 /* the share of a row's time that counts it as a row the term prices */
/* The analytic time terms (model.c ab_time_terms says what each counts and why): named, never numbered,
 * because the bundle, the tests and the profile's rates all refer to them. A new term goes before
 * AB_TIME_TERMS and gets a name in ab_term_names (model.c; a _Static_assert checks the count), and bundles
 * written before it are refused by name (predictor.c). */
typedef enum ab_term {
	AB_TERM_CONV,         /* dense convolution FLOPs (oneDNN) */
	AB_TERM_GROUPCONV,    /* grouped and depthwise convolution FLOPs */
	AB_TERM_MATMUL,       /* matrix-product FLOPs */
	AB_TERM_ACT_BYTES,    /* activation bytes read and written by layers */
	AB_TERM_KERNELS,      /* kernel layers, each weighted by its measured fixed cost */
	AB_TERM_STEP_WEIGHTS, /* weight bytes of the gradients' writes */
	AB_TERM_MATMUL_THIN,  /* thin matrix-product FLOPs */
	AB_TERM_VIEWS,        /* view layers (no kernel) */
	AB_TERM_WEIGHT_READS, /* weight bytes read by layers */
	AB_TERM_OPT_BYTES,    /* the optimizer step's bytes */
	AB_TERM_RNN_STEPS,    /* recurrent steps run one after another */
	AB_TERM_RNN_BYTES,    /* recurrent weight bytes those steps re-read */
	AB_TERM_IM2COL,       /* FLOPs of convolutions on PyTorch's im2col + BLAS path */
	AB_TERM_OPT_TENSORS,  /* the optimizer step's parameter tensors */
	AB_TERM_NORM_ROWS,    /* batch-norm rows on maps too small to vectorise */
	AB_TERM_STEP_CACHE,   /* the step's parameter traffic that stays in the last-level cache */
	AB_TERM_ARITH,        /* activation arithmetic beyond a ReLU's, ns of one thread */
	AB_TERM_BMM_ITEMS,    /* batched products' matrices, each at its runtime's fixed cost, µs of one thread */
	AB_TIME_TERMS
} ab_term;
/* Each term's name, as bundles write it ("conv_flops", ...). */
extern const char *const ab_term_names[AB_TIME_TERMS];

typedef struct ab_examples {
	size_t n;
	int d;                 /* features per row: the graph schema, the hardware's threads, its index (AB_X_HW) */
	double *X;             /* n × d */
	double *time, *mem, *calib, *flops, *peak;
	double *held_peak;     /* the simulated peak with hand-written forwards' values held (abacus_memory.held_peak) */
	double *terms;         /* n × AB_TIME_TERMS analytic time terms */
	double *dw;            /* n × 2: the depthwise part of each row's CONV term (ab_time_conv_depthwise) */
	int *hw, *net;         /* indices into hw_ids / nets */
	const abacus_row **rows;
	char *hw_ids[AB_MAX_HW];
	int hw_threads[AB_MAX_HW];
	int n_hw;
	char **nets;
	int n_nets;
	/* Machine profiles (ab_examples_attach_machines; the caller's, which must outlive the examples), NULL
	 * when none are attached, and per row the index of its machine's profile (-1: none). */
	const abacus_machine *const *machines;
	int *mach;
	int n_mach;
	/* Machine profiles that only inform the per-hardware-id fit (ab_examples_attach_borrow; the caller's), NULL
	 * when none, and per row its machine's index among them (-1: none): a recurrent term that a hardware id
	 * borrows is scaled by its machine's measured rate for it (model.c borrow_scale). */
	const abacus_machine *const *borrow_machines;
	int *borrow_mach;
	/* Each network's family (fam[net], owned; NULL when the caller named none: ab_examples_families). The
	 * intervals are then calibrated on residuals of whole families held out too (ab_model_fit). */
	int *fam;
	int n_fam;
} ab_examples;
/* The index of `s` among names[0..*n), appended when new (names has room for one more: the caller sizes it for
 * every string it may meet). The strings are not copied. */
int ab_intern(const char **names, int *n, const char *s);
/* Each network's family index (*fam_out[net], allocated) from pairs family_of[2i] = network,
 * family_of[2i + 1] = its family; a network not listed is a family of its own. Returns the number of
 * families, or -1 when out of memory. */
int ab_family_index(int **fam_out, const ab_examples *ex, const char *const *family_of, size_t n_pairs);
/* Sets ex->fam from pairs family_of[2i] = network, family_of[2i + 1] = its family (abacus_train_opts); a
 * network not listed is a family of its own. */
int ab_examples_families(ab_examples *ex, const char *const *family_of, size_t n_pairs, abacus_error *err);

/* The machine-profile rate (machine.h ab_machine_rate) that prices each time term: a machine that no
 * training row came from gets its analytic time from its own rates (the "Machines" issue, zero-shot). */
extern const int ab_term_rate[AB_TIME_TERMS];
/* Attaches profiles: rows whose `machine` column names one of them get its rates; the others none. */
int ab_examples_attach_machines(ab_examples *ex, const abacus_machine *const *ms, size_t n, abacus_error *err);
/* The same profiles for the per-hardware-id fit only (the examples stay in hardware mode). */
int ab_examples_attach_borrow(ab_examples *ex, const abacus_machine *const *ms, size_t n, abacus_error *err);

/* Builds examples from every `ok` row; graphs are read relative to `root` (the repository). Rows whose
 * graph fails to load or analyse are an error naming the file and line. */
int ab_examples_build(ab_examples *ex, abacus_dataset *const *sets, size_t n_sets, const char *root, abacus_error *err);
void ab_examples_free(ab_examples *ex);
/* The analytic time terms of one analysed configuration on hardware running `threads` threads (which
 * convolutions take PyTorch's slow path depends on it). */
void ab_time_terms(double t[AB_TIME_TERMS], const abacus_analysis *a, int threads);
/* The depthwise part of t[AB_TERM_CONV] (runtime.h conv_depthwise): dw[0] its share, dw[1] depthwise FLOPs
 * per unit of the term; zeros when the runtime has none. */
void ab_time_conv_depthwise(double dw[2], const double t[AB_TIME_TERMS], const abacus_analysis *a, int threads);
/* What a profile charges per unit of term j (seconds): the machine's rate for the term's kind of work
 * (ab_term_rate), and for the dense-convolution term its depthwise share `dw` at the depthwise rate. */
double ab_profile_term_rate(const double *rates, int j, const double dw[2]);
/* Whether two rows measure the same configuration (network, input, batch, optimizer, hardware id, machine,
 * runtime): a repeated pair, as the noise floor (eval.c) and the trees' row weights (model.c) count them. */
int ab_rows_repeat(const abacus_row *a, const abacus_row *b);
/* Features of one analysed configuration on hardware with `threads` threads. */
/* The trees' input of a configuration: the graph's features, then the hardware's thread count, then (column
 * d - 1, AB_X_HW) the index of its hardware id among the model's, NaN for one the trees never saw (a machine
 * priced from its profile, an id without training rows): the trees then take the branch they learnt from
 * the rows whose index was hidden in training (AB_HW_HIDE_EVERY). */
int ab_examples_vector(double *x, int d, const abacus_analysis *a, int threads, int hw, abacus_error *err);
#define AB_X_HW(d) ((d) - 1)
#define AB_MAX_FEATURES 4096 /* columns of the trees' input at most (ab_examples_build checks) */
/* One training row in this many (chosen by a hash of its position) shows the trees no hardware index, so
 * that they learn what holds on every machine as well as what holds on each. */
#define AB_HW_HIDE_EVERY 5

/* How far a configuration lies from a model's training graphs, and what that does to its memory correction
 * and intervals (novelty.c). */
typedef struct ab_novelty {
	double *ref;      /* n_ref × AB_COMP_DIM compositions (analysis.h ab_composition) of the training graphs */
	double *norm;     /* their squared norms */
	size_t n_ref, cap;
	double mem_tau;   /* the memory correction is weighed by exp(-d / mem_tau); 0: fully */
	/* The intervals' log quantiles are multiplied by 1 + widen × d: time's both ends by widen_t, memory's
	 * lower end by widen_m[0] and its upper end by widen_m[1] (the simulation misses buffers far more often
	 * than it invents them, and the more so the farther a network is from the training graphs). */
	double widen_t, widen_m[2];
} ab_novelty;
/* One out-of-fold row: its distance, time log residual, log(measured / simulated memory), memory correction. */
typedef struct ab_novelty_obs {
	double d, rt, lm, fm;
} ab_novelty_obs;
/* Resets `nv` to the distinct compositions of rows idx[0..n) of ex (no fading, no widening until
 * ab_novelty_calibrate). */
int ab_novelty_refs(ab_novelty *nv, const ab_examples *ex, const size_t *idx, size_t n, abacus_error *err);
int ab_novelty_add(ab_novelty *nv, const double *c, abacus_error *err); /* one composition (bundle loading) */
/* The distance of feature vector x's composition from the nearest reference (0 without references). */
double ab_novelty_distance(const ab_novelty *nv, const double *x);
double ab_novelty_mem_weight(const ab_novelty *nv, double d);
/* The memory interval's upper end starts from peak + w × (held_peak − peak) (memory.c held_scopes), w the
 * complement of the memory correction's weight: near the training graphs their measured residuals already
 * say what Python names hold; where the correction fades, the upper end assumes they hold everything.
 * Returns that starting point as a factor of the simulated peak. */
double ab_novelty_held_factor(const ab_novelty *nv, double d, double peak, double held_peak);
/* A memory log residual r at distance d scaled back to distance 0 (divided by its side's widening). */
double ab_novelty_mem_z(const ab_novelty *nv, double r, double d);
/* Fits widen_t and time's quantiles on out-of-fold rows o[0..n), mem_tau, widen_m and memory's on the first
 * n_mem of them (≤ n; ab_model_fit says why memory skips the rows of whole families held out). */
int ab_novelty_calibrate(ab_novelty *nv, double q_time[2], double q_mem[2], const ab_novelty_obs *o, size_t n,
                         size_t n_mem, abacus_error *err);
void ab_novelty_free(ab_novelty *nv);

typedef struct ab_model {
	/* 1: the time base prices each term at the row's machine's measured rate (profile mode), with one set
	 * of coefficients for every machine (coef[0]); 0: a rate per hardware id × the speed index. */
	int profile;
	/* Seconds per unit of each time term, per unit of calib, per hardware id: a second thread speeds
	 * convolutions and matrix products up, not per-operator overhead, so the rates differ by hardware.
	 * A hardware id without training rows (cross-hw evaluation) gets the fit over all rows. */
	double coef[AB_MAX_HW][AB_TIME_TERMS];
	int use_calib[AB_MAX_HW];      /* 1: scale by the row's or user's speed index; 0: by the median */
	double calib[AB_MAX_HW];       /* median calib per hardware id (for configurations not measured) */
	ab_ensemble time, mem;
	double q_time[2], q_mem[2];    /* 5 % and 95 % quantiles of cross-validated log residuals, each divided
	                                * by 1 + widen × its distance (nov) */
	int has_intervals;
	/* Per hardware id, the time quantiles of its own rows' widened residuals (AB_MIN_HW_ROWS of them at least,
	 * else q_time): two threads on a shared VM time far less steadily than one, so one pair of quantiles
	 * over both was too wide for one thread and too narrow for two. */
	double q_time_hw[AB_MAX_HW][2];
	/* Profile mode: the time quantiles of the held-out machines' widened residuals by their thread count
	 * ([0]: one thread, [1]: more; AB_MIN_HW_ROWS rows at least, else q_time). A machine no row came from
	 * has no hardware id's quantiles, but its profile says its threads: one quantile pair over every held-out
	 * machine was too wide for the one-thread machines here (99-100 % held) and too narrow for the noisy
	 * two-thread ones (63-67 %). */
	double q_time_thr[2][2];
	/* Profile mode: how many rows of a new machine weigh as much as the prior that its time factor is 1
	 * (ab_shot_log_factor), for a machine of one thread [0] and of more [1]: the leave-one-machine-out
	 * residuals' spread within such machines over the spread of the machines' median residuals. 0: no prior
	 * (a model without machine folds: the shots' median alone). */
	double shot_prior_rows[2];
	/* The within-machine spread those rows were set from: the mean over the held-out machines of one thread
	 * [0] and of more [1] of (1.4826 × MAD)² of their log residuals. A new machine's shots bring their own
	 * spread, pooled with this one (ab_shot_prior_rows). 0: not known (a bundle of before 2026-12-07 18:00). */
	double shot_spread[2];
	ab_novelty nov;                /* the training graphs' compositions; the memory weight and widenings */
	unsigned char hw_seen[AB_MAX_HW]; /* the trees were trained on rows of this hardware id (AB_X_HW) */
} ab_model;

/* Row r's input as model m sees it (buf: ex->d doubles): its hardware index hidden when m's trees saw no
 * row of that id. */
const double *ab_model_x(const ab_model *m, const ab_examples *ex, size_t r, double *buf);

/* One layer's part of the analytic time base (per unit of calib) under the fitted coefficients. */
double ab_layer_time_weight(const ab_model *m, int hw, const abacus_analysis *a, size_t layer, int threads);
/* The few-shot prior in rows of a new machine running `threads` threads whose shots have the log residuals
 * lr[0..n) (measured / predicted): shot_prior_rows of its thread count, scaled by how much its shots scatter
 * against the training machines of that thread count (their spread pooled with shot_spread, which weighs as
 * AB_SHOT_SPREAD_ROWS shots). A noisy machine's ten shots then move its factor less than a quiet one's.
 * shot_prior_rows alone without shot_spread or with fewer than two shots. lr is not changed. */
double ab_shot_prior_rows(const ab_model *m, const double *lr, size_t n, int threads);
#define AB_SHOT_SPREAD_ROWS 10
/* The few-shot time factor's log from the log residuals lr[0..n) of the rows of a new machine whose prior is
 * `rows` (ab_shot_prior_rows of the same residuals): their median, shrunk toward 0 by n / (n + rows). lr is
 * reordered. */
double ab_shot_log_factor(double *lr, size_t n, double rows);
/* The local correction's prior weight (machine.h ab_shot_correction) of a machine whose few-shot prior is
 * `rows` (ab_shot_prior_rows): AB_SHOT_PRIOR scaled by rows over the one-thread machines' prior, so that the
 * shots of a machine found noisier (two threads; shots that scatter) keep less of their own residuals. */
double ab_shot_local_prior(const ab_model *m, double rows);
/* The time quantiles a profile-mode model gives a machine running `threads` threads (q_time_thr). */
const double *ab_profile_quantiles(const ab_model *m, int threads);
/* The optimizer step's and gradient writes' part (per unit of calib): the parameter terms. */
double ab_step_time_weight(const ab_model *m, int hw, const double terms[AB_TIME_TERMS]);

/* Fits on the rows idx[0..n). With `intervals`, also runs a 5-fold CV inside them for the quantiles (one
 * fold per machine in profile mode with rows of several machines), and where ex->fam names families a second
 * 5-fold CV whose folds are whole families: the intervals' widening with the distance is fitted on both.
 * `pg` (may be NULL) is stepped once per fit: the final one, then each cross-validation fold. */
/* The analytic part of ab_model_fit alone: per hardware id the median speed index and the time terms'
 * coefficients (a term that too few of an id's rows exercise keeps the all-rows rate). */
int ab_model_fit_time(ab_model *m, const ab_examples *ex, const size_t *idx, size_t n, abacus_error *err);
int ab_model_fit(ab_model *m, const ab_examples *ex, const size_t *idx, size_t n, const ab_train_params *p,
                 int intervals, ab_progress *pg, abacus_error *err);
/* How many steps ab_model_fit with these arguments reports. */
size_t ab_model_fit_units(const ab_examples *ex, const size_t *idx, size_t n, int intervals);
/* Predicts row `r` of `ex`; `calib` < 0 uses the model's median for the row's hardware. */
void ab_model_predict_row(const ab_model *m, const ab_examples *ex, size_t r, double calib, double *time,
                          double *mem);
void ab_model_free(ab_model *m);
/* The speed index a prediction on `hw` uses: `calib` where the hardware uses speed indexes and calib > 0,
 * else the hardware's median. */
double ab_model_calib(const ab_model *m, int hw, double calib);
/* ab_model_calib(calib) × Σ coef[hw]_i · terms_i */
double ab_time_base(const ab_model *m, int hw, const double *terms, double calib);
/* The time base of row r of `ex` in either mode (calib ≤ 0: the hardware's median, or in profile mode no
 * drift correction). */
double ab_time_base_row(const ab_model *m, const ab_examples *ex, size_t r, double calib);
/* The profile-mode base from a profile's rates: drift = calib / the profile's reference (1 when unknown). */
double ab_time_base_profile(const ab_model *m, const double *terms, const double dw[2], const double *rates,
                            double drift);

double ab_quantile(double *v, size_t n, double q);   /* sorts v */
/* Deterministic Fisher-Yates shuffle of idx[0..n) (splitmix64): training and folds depend only on the seed. */
void ab_shuffle(size_t *idx, size_t n, uint64_t seed);
/* The boosters' parameters for training options `o` (rounds, depth, eta, seed; fixed sampling). */
void ab_train_params_from(ab_train_params *p, const abacus_train_opts *o);

#endif
