/*
 * abacus.h — predict what training a deep neural network costs before running it.
 *
 * Abacus reads an ONNX graph (weights may be stripped: dims and types are enough), resolves every tensor
 * shape at the batch and input size you ask about, and accounts the training step: forward and backward
 * FLOPs per operator, parameters, bytes moved, and a simulation of the memory one training iteration of
 * PyTorch keeps alive (weights, gradients, optimizer state, activations saved for backward, transient peak).
 *
 * Conventions
 *   - A multiply-add counts as 2 FLOPs. Element-wise operators count one FLOP per output element per
 *     arithmetic operation they perform (see docs/COSTS.md for every operator's rule).
 *   - Sizes and dims are int64_t; every product of dims is checked, an absurd shape is an error.
 *   - Fallible functions return 0 or a negative ABACUS_E* code; out-parameters come first; the optional
 *     last argument `abacus_error *err` (may be NULL) receives the code, a message and where it happened.
 *   - `T **out` means the caller owns the result and frees it with abacus_<type>_free, which accepts NULL.
 *   - No global state but a mutex-guarded cache of freed large blocks (abacus_release_memory): a loaded
 *     graph is immutable and may be analysed from several threads at once.
 *
 * Worked example
 *
 *     abacus_error err;
 *     abacus_graph *g = NULL;
 *     abacus_analysis *a = NULL;
 *     if (abacus_graph_load_file(&g, "resnet50-224.onnx", &err) != 0) { puts(err.msg); return 1; }
 *     abacus_config cfg = ABACUS_CONFIG_INIT;
 *     cfg.batch = 32;
 *     cfg.optimizer = ABACUS_OPT_ADAM;
 *     if (abacus_analyze(&a, g, &cfg, &err) != 0) { puts(err.msg); abacus_graph_free(g); return 1; }
 *     const abacus_totals *t = abacus_analysis_totals(a);
 *     printf("%lld params, %.3g forward FLOPs, peak %lld bytes\n", (long long)t->params,
 *            (double)t->forward_flops, (long long)abacus_analysis_memory(a)->peak);
 *     abacus_analysis_free(a);
 *     abacus_graph_free(g);
 */
#ifndef ABACUS_H
#define ABACUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; abacus_version() says the library's, which a program linked against another
 * build may differ from. Minor versions add to the API, a major version may change it. */
#define ABACUS_VERSION_MAJOR 0
#define ABACUS_VERSION_MINOR 6
#define ABACUS_VERSION_PATCH 0
#define ABACUS_VERSION "0.6.0"
#define ABACUS_MAX_RANK 8

/* The library's version: its string, and the numbers through the pointers that are not NULL. */
const char *abacus_version(int *major, int *minor, int *patch);

/* Error codes: every fallible function returns 0 or one of these. */
enum {
	ABACUS_OK = 0,
	ABACUS_ENOMEM = -1,       /* an allocation failed */
	ABACUS_EINVAL = -2,       /* a bad argument or option from the caller */
	ABACUS_EPARSE = -3,       /* malformed input bytes (protobuf, CSV, bundle) */
	ABACUS_EGRAPH = -4,       /* a well-formed file describing an invalid graph (cycle, missing tensor) */
	ABACUS_ESHAPE = -5,       /* a shape that cannot be resolved or is invalid (negative, overflowing) */
	ABACUS_EUNSUPPORTED = -6, /* something valid that Abacus does not handle (unknown op under strict) */
	ABACUS_EIO = -7,          /* reading or writing a file failed */
	ABACUS_ELIMIT = -8,       /* a documented size limit was exceeded */
	ABACUS_ELIBRARY = -9      /* a library Abacus calls failed (XGBoost while training): its message follows */
};

typedef struct abacus_error {
	int code;          /* one of ABACUS_E* */
	char msg[512];     /* what went wrong and, where possible, what to do about it */
	char where[256];   /* node or tensor name, file name, or "" */
	int64_t offset;    /* byte offset in the input when known, else -1 */
} abacus_error;

/* A short static name for an error code ("out of memory", "parse error", ...). */
const char *abacus_strerror(int code);

/* ---- Graphs ------------------------------------------------------------------------------------ */

typedef struct abacus_graph abacus_graph;

/* Parses an ONNX ModelProto from `len` bytes at `buf`. The buffer is not retained. Initializer data is
 * never needed (graph-only files and external-data references load). Opsets 11 to 17 are supported. */
int abacus_graph_load(abacus_graph **out, const void *buf, size_t len, abacus_error *err);
/* Reads `path` and calls abacus_graph_load. */
int abacus_graph_load_file(abacus_graph **out, const char *path, abacus_error *err);
void abacus_graph_free(abacus_graph *g);

/* Number of graph inputs that are not initializers, and the name/rank/declared dims of input `i`
 * (a dim of -1 is symbolic or unknown; its name, if any, goes to `sym`, which may be NULL). */
size_t abacus_graph_n_inputs(const abacus_graph *g);
int abacus_graph_input(const char **name, int *rank, int64_t dims[ABACUS_MAX_RANK], const char *sym[ABACUS_MAX_RANK],
                       const abacus_graph *g, size_t i);
/* Total number of nodes in the file, shape nodes included, and the default opset. */
size_t abacus_graph_n_nodes(const abacus_graph *g);
int64_t abacus_graph_opset(const abacus_graph *g);

/* ---- Analysis configuration --------------------------------------------------------------------- */

typedef enum { ABACUS_OPT_SGD = 0, ABACUS_OPT_ADAM = 1 } abacus_optimizer;

typedef struct abacus_input_shape {
	const char *name;                  /* graph input name; NULL means the first input */
	int rank;
	int64_t dims[ABACUS_MAX_RANK];
} abacus_input_shape;

/* Option structs carry a version (libgit2's convention): initialise one with its _INIT macro or _init()
 * function, then set fields; a library that meets a version it does not know refuses the struct instead of
 * reading fields that are not there. */
#define ABACUS_CONFIG_VERSION 2
typedef struct abacus_config {
	unsigned int version;              /* ABACUS_CONFIG_VERSION */
	int64_t batch;                     /* replaces every symbolic (dynamic) batch dimension */
	const abacus_input_shape *inputs;  /* explicit input shapes; override declared and symbolic dims */
	size_t n_inputs;
	abacus_optimizer optimizer;        /* sgd = SGD with momentum (one buffer/param), adam (two) */
	int strict;                        /* unknown ops become an error instead of category `other` */
	/* The runtime whose costs apply (abacus_runtime_name lists them: "torch-1.13.1"); NULL is the first, the
	 * one the bundled dataset was measured with. An unknown name is an error of abacus_analyze. */
	const char *runtime;
	/* Version 2: the machine, where memory depends on it. Intra-op threads (0 or 1: one), and the widest
	 * vector ISA its kernels may use, as machine ids spell it ("avx512", "avx2", "sse41", "sse"; NULL: an
	 * AVX machine like the dataset's). Without AVX oneDNN runs a convolution's backward through im2col and
	 * a per-thread scratchpad (docs/COSTS.md "Capped ISA"); abacus_config_hw sets both from a hardware id. */
	int threads;
	const char *isa;
} abacus_config;

#define ABACUS_CONFIG_INIT { ABACUS_CONFIG_VERSION, 1, NULL, 0, ABACUS_OPT_SGD, 0, NULL, 1, NULL }
/* Fills *cfg with the defaults of ABACUS_CONFIG_INIT for `version` (1 or 2: a version-1 struct gets only its
 * own fields); ABACUS_EINVAL for a version this library lacks. */
int abacus_config_init(abacus_config *cfg, unsigned int version);
/* Sets cfg->threads and cfg->isa from a hardware id as predictors key them ("cpu2", "cpu1@<machine id>",
 * "torch-2.15.0/cpu1@<machine id>") or a machine id ("amd-f25m17-sse41-t2-8ed9a3b6": its ISA and thread
 * fields); what it cannot read stays as it was. `hw` must outlive cfg (cfg->isa points into it). */
void abacus_config_hw(abacus_config *cfg, const char *hw);

/* The runtimes this library prices, i = 0, 1, ... until NULL; the first is the default. */
const char *abacus_runtime_name(size_t i);
/* The runtime called `text`: *out = its name (static), or ABACUS_EINVAL with a message listing the known ones. */
int abacus_parse_runtime(const char **out, const char *text, abacus_error *err);

/* Parses "1x3x224x224" into an input shape (name left NULL). */
int abacus_parse_dims(abacus_input_shape *out, const char *text, abacus_error *err);
/* Parses "sgd" / "adam". */
int abacus_parse_optimizer(abacus_optimizer *out, const char *text, abacus_error *err);
const char *abacus_optimizer_name(abacus_optimizer o);

/* ---- Operator categories (the rows and columns of the network structural matrix) ----------------- */

typedef enum {
	ABACUS_CAT_CONV, ABACUS_CAT_GROUPCONV, ABACUS_CAT_MATMUL, ABACUS_CAT_BATCHNORM,
	ABACUS_CAT_LAYERNORM, ABACUS_CAT_RELU, ABACUS_CAT_ACT, ABACUS_CAT_POOL, ABACUS_CAT_ADD,
	ABACUS_CAT_MUL, ABACUS_CAT_ELTWISE, ABACUS_CAT_CONCAT, ABACUS_CAT_SPLIT, ABACUS_CAT_LAYOUT,
	ABACUS_CAT_SOFTMAX, ABACUS_CAT_DROPOUT, ABACUS_CAT_EMBEDDING, ABACUS_CAT_RECURRENT,
	ABACUS_CAT_ATTENTION, ABACUS_CAT_RESIZE, ABACUS_CAT_PAD, ABACUS_CAT_REDUCE, ABACUS_CAT_OTHER,
	ABACUS_CAT_COUNT
} abacus_category;

/* "conv", "groupconv", ..., "other". */
const char *abacus_category_name(abacus_category c);

/* ---- Analysis results ------------------------------------------------------------------------- */

typedef struct abacus_analysis abacus_analysis;

/* One compute node of the typed graph (shape-only nodes are folded away and are not layers). */
typedef struct abacus_layer {
	const char *name;        /* node name, or "<op>_<index>" when the file has none */
	const char *op;          /* ONNX op_type */
	abacus_category category;
	int rank;                /* of the first output */
	int64_t dims[ABACUS_MAX_RANK];
	int64_t params;          /* trainable parameters this node owns (float initializers it consumes) */
	int64_t forward_flops;
	int64_t backward_flops;  /* gradients w.r.t. inputs and w.r.t. weights */
	int64_t output_bytes;    /* all outputs */
	int64_t bytes_read;      /* forward: inputs read, weights included */
	int64_t bytes_written;   /* forward: outputs written (0 for views) */
	int64_t saved_bytes;     /* activation bytes this node keeps for its backward */
	int known;               /* 0 when the op is not in the op table (category other) */
} abacus_layer;

typedef struct abacus_totals {
	int64_t params;
	int64_t forward_flops;
	int64_t backward_flops;
	int64_t bytes_read;
	int64_t bytes_written;
	int64_t layers;          /* compute nodes */
	int64_t folded;          /* shape nodes folded to constants */
	int64_t unknown;         /* layers whose op is not in the op table */
} abacus_totals;

/* The simulated training step (PyTorch semantics, float32). The first seven fields are what is live at
 * the peak and add up to it exactly: peak = weights + buffers + optimizer + inputs + gradients +
 * activations + workspace. */
typedef struct abacus_memory {
	int64_t weights;         /* parameters, 4 bytes each (float32) */
	int64_t buffers;         /* non-trainable state such as BatchNorm running statistics, and what the runtime
	                          * keeps between steps (tf-2.21.0: its traced step; PyTorch's: nothing) */
	int64_t optimizer;       /* sgd: momentum (1 × weights); adam: exp_avg + exp_avg_sq (2 × weights) */
	int64_t inputs;          /* the input batch and the labels/targets, made once before the loop */
	int64_t gradients;       /* parameter gradients live at the peak */
	int64_t activations;     /* activations saved for backward that are live at the peak */
	int64_t workspace;       /* everything else live at the peak: outputs, activation gradients, temporaries */
	int64_t peak;            /* the largest live total during the iteration */
	int64_t persistent;      /* live at the start of a steady-state iteration (weights+buffers+optimizer+inputs) */
	int64_t saved;           /* activations saved for backward at the end of the forward pass */
	/* The peak if every value an operation in a hand-written forward's own body makes lived until that
	 * forward returned (bound to a local name or a list there, which a graph file cannot show; an eager
	 * runtime's, else = peak): never below peak. The memory interval's upper end moves from peak toward it
	 * the farther a network is from the training graphs (abacus_prediction.novelty). */
	int64_t held_peak;
} abacus_memory;

/* The simulated iteration as a sequence of steps, in the order they run: each layer's forward (in the order
 * the runtime runs them), the loss (its forward and the start of backward), each layer's backward, and the
 * optimizer step. Where the peak happens, and what the live total is around it, is what a user needs to
 * decide whether a smaller batch, checkpointing a block or another optimizer would fit. */
typedef enum {
	ABACUS_PHASE_FORWARD, ABACUS_PHASE_LOSS, ABACUS_PHASE_BACKWARD, ABACUS_PHASE_STEP, ABACUS_PHASE_COUNT
} abacus_phase;

/* "forward", "loss", "backward", "step". */
const char *abacus_phase_name(abacus_phase p);

typedef struct abacus_memory_step {
	abacus_phase phase;
	int64_t layer;           /* the layer (abacus_analysis_layer's index) of a forward or backward step; -1
	                          * for the loss and the optimizer step */
	int64_t peak;            /* the largest live total during this step, persistent state included (the
	                          * kernel's transient buffers with the tensors it reads and writes) */
	int64_t live;            /* the live total once the step is done */
} abacus_memory_step;

/* Resolves shapes (constant-folding shape sub-graphs), accounts costs, and simulates the training step
 * for `cfg`. `g` is not modified and may be shared between threads. */
int abacus_analyze(abacus_analysis **out, const abacus_graph *g, const abacus_config *cfg, abacus_error *err);
void abacus_analysis_free(abacus_analysis *a);

const abacus_totals *abacus_analysis_totals(const abacus_analysis *a);
const abacus_memory *abacus_analysis_memory(const abacus_analysis *a);
/* The simulated iteration's steps (abacus_memory_step), step i in the order they run (NULL past the end); the
 * largest `peak` of them is abacus_memory's peak. Valid until the analysis is freed. */
size_t abacus_analysis_n_memory_steps(const abacus_analysis *a);
const abacus_memory_step *abacus_analysis_memory_step(const abacus_analysis *a, size_t i);
/* The number of layers, and layer i in topological order (NULL past the end), valid until the analysis is
 * freed. Through these a program does not depend on sizeof(abacus_layer), which may grow. */
size_t abacus_analysis_n_layers(const abacus_analysis *a);
const abacus_layer *abacus_analysis_layer(const abacus_analysis *a, size_t i);
/* The layers as one array; *n receives the count. Indexing it assumes this header's sizeof(abacus_layer):
 * prefer abacus_analysis_layer in code built apart from the library. */
const abacus_layer *abacus_analysis_layers(const abacus_analysis *a, size_t *n);
/* Distinct op types not in the op table, and how many nodes use each. */
size_t abacus_analysis_n_unknown(const abacus_analysis *a);
const char *abacus_analysis_unknown(const abacus_analysis *a, size_t i, int64_t *count);
/* Graph outputs: rank and dims of output `i`. */
size_t abacus_analysis_n_outputs(const abacus_analysis *a);
int abacus_analysis_output(const char **name, int *rank, int64_t dims[ABACUS_MAX_RANK], const abacus_analysis *a,
                           size_t i);

/* ---- Features: the network structural matrix and the predictor's input vector -------------------- */

/* Number of columns in the feature schema (fixed for a given library version). */
size_t abacus_features_count(void);
/* Writes the name of column `i` ("batch", "cat_conv_fwd_flops", "nsm_conv_to_batchnorm", ...). */
int abacus_feature_name(char *buf, size_t len, size_t i);
/* Fills out[0..n) with the feature vector of an analysis; n must equal abacus_features_count(). */
int abacus_features(double *out, size_t n, const abacus_analysis *a, abacus_error *err);

/* ---- Datasets: the measurement CSV written by `abacus profile` (docs/DATASET.md) -------------------- */

typedef struct abacus_dataset abacus_dataset;

/* A row whose timed iterations shared the machine with more than this share of other work (busy_other) has a
 * time that is an upper bound, not a measurement: `abacus profile --wait-quiet` measures it again (at most
 * twice) and `abacus eval` scores the quiet rows' time apart (ABACUS_EVAL_TIME_QUIET). */
#define ABACUS_BUSY_OTHER_LIMIT 0.10

/* One measured configuration. Strings are owned by the dataset; numbers that a failed row lacks are
 * NaN (times) or -1 (byte and parameter counts). */
typedef struct abacus_row {
	const char *network, *graph, *input_shape, *optimizer, *hw, *status, *error;
	int64_t batch, threads, repeat;
	double time_s, calib_s, busy_other;
	int64_t memory_bytes, persistent_bytes, params;
	size_t line;             /* line number in the file, for error messages */
	/* The machine id that measured the row (docs/DATASET.md, "The machines table"): "unrecorded" for rows of
	 * measurement protocol 1, whose files have no such column; and the runtime ("torch-1.13.1"). */
	const char *machine, *runtime;
	/* When the row was measured: seconds since 1970-01-01 UTC, from its `timestamp` column
	 * (YYYY-MM-DDTHH:MM:SSZ); NaN when the file has no such column or the field is empty. The noise floor of
	 * repeats measured ABACUS_LATE_REPEAT_S apart or more is judged on it (abacus_eval_get). */
	double measured_at;
} abacus_row;

/* Parses CSV bytes; `name` (may be NULL) names the source in errors. */
int abacus_dataset_load(abacus_dataset **out, const char *data, size_t len, const char *name, abacus_error *err);
int abacus_dataset_load_file(abacus_dataset **out, const char *path, abacus_error *err);
size_t abacus_dataset_n_rows(const abacus_dataset *d);
const abacus_row *abacus_dataset_row(const abacus_dataset *d, size_t i);
void abacus_dataset_free(abacus_dataset *d);

/* ---- Machine profiles: this machine's measured rates (`abacus calibrate --out FILE`) ---------------- */

/* A machine profile (docs/MACHINES.md): the machine id (collector/machine.py), its thread count and
 * runtime, and per kind of work the time model prices its measured seconds per unit. */
typedef struct abacus_machine abacus_machine;

/* Parses a profile file's bytes; every malformed line, a missing or unknown rate, a non-positive rate is
 * an error naming the line. */
int abacus_machine_load(abacus_machine **out, const char *data, size_t len, abacus_error *err);
int abacus_machine_load_file(abacus_machine **out, const char *path, abacus_error *err);
/* Serialises a profile (the same format); *out is freed with abacus_buffer_free. */
int abacus_machine_save(char **out, size_t *len, const abacus_machine *m, abacus_error *err);
void abacus_machine_free(abacus_machine *m);
const char *abacus_machine_id(const abacus_machine *m);
int abacus_machine_threads(const abacus_machine *m);
const char *abacus_machine_runtime(const abacus_machine *m);
/* Few-shot (`abacus adapt`): the time factor (measured / predicted) that `rows` rows measured on this
 * machine gave; predictions on the profile are multiplied by it. Saved with the profile. */
int abacus_machine_adapt(abacus_machine *m, double factor, int rows, abacus_error *err);
/* The factor (1 when not adapted) and how many rows gave it. */
double abacus_machine_adapted(const abacus_machine *m, int *rows);
size_t abacus_machine_n_shots(const abacus_machine *m);
/* Leave-one-out: shot i's relative time error when the factor and the other shots predict it. */
double abacus_machine_shot_loo(const abacus_machine *m, size_t i);
/* Forgets the factor and the shots: the profile as measured. */
void abacus_machine_unadapt(abacus_machine *m);
/* How long measuring the profile took, in seconds. */
double abacus_machine_seconds(const abacus_machine *m);
/* The rates' names, in the profile's order. */
size_t abacus_machine_n_rates(void);
const char *abacus_machine_rate_name(size_t i);
/* Seconds per unit of rate `name` (and its relative spread over the calibration runs), or -1 for an
 * unknown name. */
double abacus_machine_rate(const abacus_machine *m, const char *name, double *spread);

/* ---- Predictor: learned time and memory, trained on measured rows -------------------------------- */

typedef struct abacus_predictor abacus_predictor;

/* Version 2 added `progress` and `payload`, version 3 `family_of`, version 4 `score_runtime`. An older struct (a program built against an
 * older header) is still accepted: only its fields are read, the later ones keep their defaults. */
#define ABACUS_TRAIN_OPTS_VERSION 4
typedef struct abacus_train_opts {
	unsigned int version;     /* ABACUS_TRAIN_OPTS_VERSION */
	uint64_t seed;            /* row shuffling, folds and XGBoost's sampling */
	int rounds;               /* boosting rounds per target */
	int max_depth;
	double eta;
	const char *graph_root;   /* directory the rows' graph paths are relative to (the repository) */
	/* Machine profiles (`abacus calibrate --out`): rows whose `machine` names one are priced from its
	 * rates by the leave-one-machine-out evaluation. NULL/0: none. */
	const abacus_machine *const *machines;
	size_t n_machines;
	int shots;                /* lomachine: K rows of the held-out machine refit its speed; loruntime: K rows of
	                           * the held-out runtime join the training rows (0: zero-shot) */
	/* Version 2. Progress of abacus_train and abacus_evaluate (NULL: none), for a caller that shows it; the
	 * library itself never prints. Called on the calling thread with done = 0 before the work starts, then
	 * after each unit of work with done increasing by one, the last call with done == total (a run that
	 * fails stops calling). The unit is one fold of the protocol for abacus_evaluate (5 for random, one per
	 * network for lomo, per hardware id for cross-hw, per machine profile for lomachine), one model fit for
	 * abacus_train (the final fit and the cross-validation fits that size the 90 % intervals, again for the
	 * profile-mode model when machine profiles are given): units of similar cost, so that elapsed / done
	 * × (total − done) is a fair estimate of the time left. `payload` is passed through untouched. */
	void (*progress)(size_t done, size_t total, void *payload);
	void *payload;
	/* Version 3. The family of each network for leave-one-family-out (ABACUS_EVAL_LOFO): n_family_of pairs,
	 * family_of[2i] a network and family_of[2i+1] its family ("resnet", "gen_cnn"); a network not listed is
	 * a family of its own. The caller's strings, read during the call. abacus_train uses them too: its 90 %
	 * intervals are then calibrated on whole families held out as well as single networks, so that they
	 * widen as far as a network unlike the training data needs. */
	const char *const *family_of;
	size_t n_family_of;
	/* Version 4. abacus_evaluate scores only the rows of this runtime ("tf-2.21.0"; NULL: every row), so that
	 * a runtime's figures cost only the folds that hold its rows; every other row still trains as the
	 * protocol says (lomo still holds out a network's rows of every runtime). */
	const char *score_runtime;
} abacus_train_opts;

#define ABACUS_TRAIN_OPTS_INIT { ABACUS_TRAIN_OPTS_VERSION, 1, 400, 6, 0.05, ".", NULL, 0, 0, NULL, NULL, NULL, 0, NULL }
/* Fills *o with the defaults of ABACUS_TRAIN_OPTS_INIT for `version` (1 to 4): for an older version only the
 * fields its struct has are written. ABACUS_EINVAL for a version this library lacks. */
int abacus_train_opts_init(abacus_train_opts *o, unsigned int version);

/* Trains on every `ok` row of the datasets (XGBoost, one booster per target). Deterministic for a seed. */
int abacus_train(abacus_predictor **out, abacus_dataset *const *sets, size_t n_sets, const abacus_train_opts *o,
                 abacus_error *err);
/* Serialises to a versioned text bundle; *out is freed with abacus_buffer_free. */
int abacus_predictor_save(char **out, size_t *len, const abacus_predictor *p, abacus_error *err);
int abacus_predictor_save_file(const abacus_predictor *p, const char *path, abacus_error *err);
int abacus_predictor_load(abacus_predictor **out, const char *data, size_t len, abacus_error *err);
int abacus_predictor_load_file(abacus_predictor **out, const char *path, abacus_error *err);
void abacus_predictor_free(abacus_predictor *p);
void abacus_buffer_free(void *p);

/* Large blocks that graphs and analyses free are kept (at most 64 MiB, process-wide) so that the next
 * load reuses memory already touched instead of faulting in fresh pages; this returns them to the system.
 * Thread-safe; call it when the process is done with Abacus for a while. */
void abacus_release_memory(void);
/* Hardware ids the predictor was trained on ("cpu1", "cpu2", ...). */
size_t abacus_predictor_n_hw(const abacus_predictor *p);
const char *abacus_predictor_hw(const abacus_predictor *p, size_t i);
/* The median speed index (calib_s) of the training rows measured on `hw`, or -1 when it is unknown. */
double abacus_predictor_calib(const abacus_predictor *p, const char *hw);
/* Few-shot (`abacus adapt`): the time factor that n rows of a machine priced from its profile (running
 * `threads` threads) support, from their log ratios measured / predicted (reordered): their median, shrunk
 * toward 1 by the prior the bundle learnt of how far machines scatter (n / (n + its prior rows)). 1 for
 * n = 0; without that prior (a bundle of before 2026-12-07), the median alone. *prior_rows (may be NULL):
 * the prior's weight in rows, 0 when the bundle has none. */
double abacus_predictor_shot_factor(const abacus_predictor *p, double *log_ratios, size_t n, int threads,
                                    double *prior_rows);

typedef struct abacus_prediction {
	double time_s, time_lo_s, time_hi_s;                       /* one training iteration, 90 % interval */
	int64_t memory_bytes, memory_lo_bytes, memory_hi_bytes;    /* peak memory, 90 % interval */
	const char *hw;                                            /* owned by the predictor */
	double calib_s;                                            /* machine speed index used */
	double time_analytic_s;                                    /* the fitted analytic time alone, before the
	                                                            * learned correction */
	double novelty;          /* distance of the network's composition (per operator category: shares of layers,
	                          * FLOPs, output bytes) from the nearest graph the predictor was trained on: ~0
	                          * for a trained network at any batch, 0.2-0.5 for a network of another family;
	                          * the memory correction fades and the intervals widen with it (0 for bundles
	                          * before version 17) */
} abacus_prediction;

/* Predicts the configuration analysed in `a` on hardware `hw` (NULL: the first known). `calib_s` is the
 * machine's current speed index (`abacus calibrate`), or 0 for the training data's median on `hw`. A
 * hardware id whose training rows showed its speed index to be noisier than its times ignores calib_s;
 * out->calib_s says which was used. */
int abacus_predict(abacus_prediction *out, const abacus_predictor *p, const abacus_analysis *a, const char *hw,
                   double calib_s, abacus_error *err);

/* Predicts on the machine a profile describes (`abacus calibrate --out`), with the profile-mode time model
 * (trained with machine profiles; ABACUS_EINVAL otherwise): every term priced at the machine's measured
 * rate, then the learned correction. `calib_s` > 0 corrects the host's drift since the profile was taken
 * (the reference workload timed now); 0 uses the profile as measured. Memory does not depend on the
 * machine. out->hw is the machine id. */
int abacus_predict_machine(abacus_prediction *out, const abacus_predictor *p, const abacus_analysis *a,
                           const abacus_machine *machine, double calib_s, abacus_error *err);
/* Few-shot, locally: a configuration measured on this machine (its analysis, `measured_s` seconds per
 * iteration and the speed index `calib_s` of that measurement, or 0) becomes a shot of the profile, saved
 * with it: `abacus_predict_machine` corrects configurations near a shot (the same network at another batch
 * or optimizer, one of the same make-up) by what the shot was off beyond the factor (docs/MACHINES.md).
 * *log_ratio (may be NULL) gets log(measured / predicted by the bare profile), the factor's input. */
int abacus_machine_add_shot(abacus_machine *m, const abacus_predictor *p, const abacus_analysis *a, double measured_s,
                            double calib_s, double *log_ratio, abacus_error *err);
/* Whether the predictor has the profile-mode time model. */
int abacus_predictor_has_profile(const abacus_predictor *p);

/* How the predictor's analytic time on hardware `hw` (NULL: the first known) divides among the layers of
 * `a`: share[i] for layer i of abacus_analysis_layers (n entries), from the per-kind rates the predictor
 * fitted for that hardware (dense convolution, grouped convolution and matrix-product FLOPs, bytes moved, a
 * fixed cost per layer), so that a depthwise convolution with few FLOPs but many bytes gets its due.
 * *step_share (may be NULL) is the optimizer step's share, which belongs to no layer. The shares and
 * *step_share sum to 1. */
int abacus_predictor_layer_shares(double *share, size_t n, double *step_share, const abacus_predictor *p,
                                  const abacus_analysis *a, const char *hw, abacus_error *err);

/* ---- Planning over batch sizes ------------------------------------------------------------------ */

/* The largest batch b <= max_batch whose predicted peak memory on `hw` (NULL: the first known), at the upper
 * end of its 90 % interval, fits in `budget` bytes: *out = b, or 0 (not an error) when batch 1 does not fit.
 * cfg's batch is ignored. Peak memory grows with the batch: doubling then bisection, about 2·log2(b)
 * analyses of g. */
int abacus_max_batch(int64_t *out, const abacus_predictor *p, const abacus_graph *g, const abacus_config *cfg,
                     const char *hw, int64_t budget, int64_t max_batch, abacus_error *err);
/* The batches a plan table shows around the largest fitting batch `good`: powers of two up to the first past
 * `good`, `good` itself and good + 1, each at most max_batch, ascending, once each. Writes at most `cap` to
 * out and returns how many (at most 66, so out[66] always holds them). */
size_t abacus_plan_batches(int64_t *out, size_t cap, int64_t good, int64_t max_batch);

/* ---- Evaluation against measured rows (docs/DESIGN.md protocols) -------------------------------- */

/* lomachine: every machine with a profile and rows is predicted by a model trained on the other machines'
 * rows, from its profile alone (opts.shots = 0) or with K of its rows (few-shot); rows of machines without
 * a profile are left out. loruntime: every runtime's rows are predicted by a model trained on the other
 * runtimes' rows (opts.shots = K: and K rows of its own, one per network first, which are not scored). */
typedef enum {
	ABACUS_EVAL_RANDOM, ABACUS_EVAL_LOMO, ABACUS_EVAL_CROSS_HW, ABACUS_EVAL_LOMACHINE, ABACUS_EVAL_LOFO,
	ABACUS_EVAL_LORUNTIME
} abacus_eval_protocol;

typedef enum {
	ABACUS_EVAL_TIME,                /* predictor, with the row's measured speed index (calib_s) */
	ABACUS_EVAL_TIME_RAW,            /* predictor, with the hardware's median speed index */
	ABACUS_EVAL_MEMORY,              /* predictor */
	ABACUS_EVAL_ANALYTIC_TIME,       /* baseline: calib × fitted analytic terms, no trees */
	ABACUS_EVAL_ANALYTIC_MEMORY,     /* baseline: the simulated peak, no learning */
	ABACUS_EVAL_FLOPS_TIME,          /* baseline: FLOPs / rate, rate fitted per hardware */
	ABACUS_EVAL_NOISE_TIME,          /* repeated measurements of one configuration */
	ABACUS_EVAL_NOISE_TIME_ADJUSTED, /* the same on time_s / calib_s */
	ABACUS_EVAL_NOISE_MEMORY,
	ABACUS_EVAL_TIME_QUIET,          /* ABACUS_EVAL_TIME over the rows timed on a quiet machine alone (busy_other
	                                  * at most 0.1, or not recorded): a row whose timed iterations shared the
	                                  * machine has a time that is an upper bound, not a measurement */
	ABACUS_EVAL_NOISE_TIME_LATE,     /* the noise floor of the repeated pairs measured ABACUS_LATE_REPEAT_S apart
	                                  * or more (both rows timestamped) */
	ABACUS_EVAL_NOISE_TIME_LATE_ADJUSTED /* the same on time_s / calib_s */
} abacus_eval_metric;
/* Repeats measured this many seconds apart or more count for the late noise floor. A configuration's repeats
 * normally run back to back (about 10 s apart), while the rows a predictor is trained on and the rows it is
 * judged on were measured hours or sessions apart, so the usual floor could leave out the machine's drift
 * between them. The first late repeats (2026-12-07, amd-f26m2-avx512-t1-f8d3dca9, 96 pairs about 28 h
 * apart): 5.68 % speed-adjusted against its back-to-back 5.40 %, raw 8.60 % against 7.30 % (docs/PROTOCOL.md). */
#define ABACUS_LATE_REPEAT_S 3600.0

typedef struct abacus_eval_stats {
	double mre, median, p90;  /* of |predicted − measured| / measured */
	size_t n;
} abacus_eval_stats;

typedef struct abacus_eval_net {
	const char *network;
	double time_mre, memory_mre;
	size_t n;
} abacus_eval_net;

/* One scored row: measured and predicted values (for scatter plots). */
typedef struct abacus_eval_point {
	const char *network;
	const abacus_row *row;   /* the measured row (owned by the dataset, which must outlive the eval) */
	double time_s, time_pred_s, time_raw_pred_s; /* predicted with the row's speed index, and without */
	double memory_bytes, memory_pred_bytes;
	double time_base_s, memory_base_bytes;       /* the analytic estimates alone (with the row's speed index) */
	double time_lo_s, time_hi_s;                 /* the 90 % interval (lomachine, lomo; else 0) */
	double memory_lo_bytes, memory_hi_bytes;     /* memory's 90 % interval (lomachine, lomo; else 0) */
	double novelty;          /* the row's distance from its fold's training graphs (abacus_prediction.novelty) */
	double memory_held_bytes; /* the simulated peak with hand-written forwards' values held
	                          * (abacus_memory.held_peak), toward which memory_hi_bytes moves with novelty */
} abacus_eval_point;

/* The same scores split by hardware id: the predictor's time error on that id's rows, and the noise
 * floor of that id's repeated pairs (targets are judged against the noise of the same hardware). */
typedef struct abacus_eval_hw {
	const char *hw;
	abacus_eval_stats time, time_raw, memory;
	abacus_eval_stats noise_time, noise_time_adjusted;
	abacus_eval_stats noise_time_late, noise_time_late_adjusted; /* pairs ABACUS_LATE_REPEAT_S apart or more */
} abacus_eval_hw;

/* The scores of the rows of one machine id: error, its own noise floor (repeated pairs of that machine),
 * and the share of its measured times inside the 90 % interval (lomachine; NaN otherwise). */
typedef struct abacus_eval_machine {
	const char *machine;
	abacus_eval_stats time, time_raw, memory;
	abacus_eval_stats noise_time, noise_time_adjusted;
	double coverage;
	double shot_scale;   /* few-shot: the time factor its K rows gave (1 when zero-shot) */
	abacus_eval_stats noise_time_late, noise_time_late_adjusted; /* pairs ABACUS_LATE_REPEAT_S apart or more */
} abacus_eval_machine;

typedef struct abacus_eval abacus_eval;

int abacus_evaluate(abacus_eval **out, abacus_dataset *const *sets, size_t n_sets, abacus_eval_protocol protocol,
                    const abacus_train_opts *o, abacus_error *err);
const abacus_eval_stats *abacus_eval_get(const abacus_eval *ev, abacus_eval_metric m);
const abacus_eval_net *abacus_eval_networks(const abacus_eval *ev, size_t *n);
const abacus_eval_point *abacus_eval_points(const abacus_eval *ev, size_t *n);
const abacus_eval_hw *abacus_eval_hardware(const abacus_eval *ev, size_t *n);
/* The share of measured times inside the 90 % interval: lomachine (the model's interval, from
 * leave-one-machine-out residuals inside its training rows) and lomo (each network's interval from the
 * other networks' out-of-fold residuals); NaN for the other protocols. */
double abacus_eval_coverage(const abacus_eval *ev);
/* The share of scored rows whose measured peak memory exceeds the upper end of its predicted 90 % interval:
 * the out-of-memory risk a scheduler that trusts the interval runs (lomachine, lomo; NaN otherwise). */
double abacus_eval_memory_underestimate(const abacus_eval *ev);
/* Per machine id of the scored rows ("unrecorded" for rows of protocol 1). */
const abacus_eval_machine *abacus_eval_machines(const abacus_eval *ev, size_t *n);
void abacus_eval_free(abacus_eval *ev);

/* Whether `op_type` (default domain) is in the op table, and its category. */
int abacus_op_known(const char *op_type, abacus_category *category);

#ifdef __cplusplus
}
#endif
#endif
