/*
 * machine.h — a machine profile (machine.c): the measured rate of each kind of work the time model prices,
 * and the machine id it belongs to (collector/machine.py). The rates are seconds per unit: a FLOP, a byte,
 * a layer, a tensor, a step; names and order are fixed by ab_machine_rate_names and checked by count.
 */
#ifndef ABACUS_MACHINE_H
#define ABACUS_MACHINE_H

#include "abacus.h"
#include "analysis.h"

typedef enum {
	AB_RATE_CONV_DENSE,        /* s per FLOP: 3×3 convolution forward + backward (oneDNN) */
	AB_RATE_CONV_IM2COL,       /* s per FLOP: 1×1 convolution at batch 1 (PyTorch's im2col + BLAS path) */
	AB_RATE_CONV_DEPTHWISE,    /* s per FLOP: depthwise 3×3 */
	AB_RATE_MATMUL_SQUARE,     /* s per FLOP: Linear 512×512 on 512 rows */
	AB_RATE_MATMUL_THIN,       /* s per FLOP: Linear 1024×1024 on 8 rows */
	AB_RATE_MATMUL_BATCHED,    /* s per FLOP: bmm 32 × (128×64 · 64×128) */
	AB_RATE_ELTWISE_MEMORY,    /* s per byte: ReLU fwd + bwd, add, batch norm fwd + bwd over 32 MB */
	AB_RATE_ELTWISE_CACHE,     /* s per byte: add of 64 KB tensors */
	AB_RATE_DISPATCH,          /* s per kernel layer: tiny ReLUs forward + backward */
	AB_RATE_VIEW,              /* s per view layer */
	AB_RATE_WEIGHT_STREAM,     /* s per weight byte: Linear 4096×4096 at batch 1 (three passes) */
	AB_RATE_OPTIMIZER_BYTES,   /* s per parameter byte: SGD-momentum step on 64 MB */
	AB_RATE_OPTIMIZER_CACHE,   /* s per parameter byte: the same on 512 KB (in cache) */
	AB_RATE_OPTIMIZER_TENSORS, /* s per parameter tensor: the step over 200 tiny tensors */
	AB_RATE_RECURRENT_STEP,    /* s per time step: LSTM(32, 32) forward + backward */
	AB_RATE_RECURRENT_WEIGHTS, /* s per weight byte per step: LSTM(256, 256), batch 8 */
	AB_RATE_NORM_ROWS,         /* s per row: BatchNorm2d on 4×4 maps */
	AB_RATE_ACTIVATION_ARITH,  /* s per element: a Mish's forward + backward beyond a ReLU's */
	AB_RATE_REFERENCE,         /* s: the protocol's reference workload (rows' calib_s) */
	AB_RATE_COUNT
} ab_machine_rate;

extern const char *const ab_machine_rate_names[AB_RATE_COUNT];
/* The index of a rate's name, or -1. */
int ab_machine_rate_index(const char *name);

/* A configuration measured on the machine (`abacus adapt`), for the few-shot local correction
 * (ab_shot_correction): where it lies (its composition, features.c ab_composition, and its batch's log) and
 * lr = log(measured / predicted from the bare profile). */
typedef struct ab_shot {
	double lr, log_batch;
	double comp[AB_COMP_DIM];
} ab_shot;
/* At most this many shots: about 0.9 KB each in the file, whose limit is 1 MiB (machine.c). */
#define AB_MAX_SHOTS 1000
/* The local correction's kernel (machine.c says why these values): its bandwidth in composition distance,
 * the weight of the batches' log ratio in that distance, and the prior weight that shrinks it. */
#define AB_SHOT_BANDWIDTH 0.1
#define AB_SHOT_BATCH_WEIGHT 0.03
#define AB_SHOT_PRIOR 0.5

/* The log correction the shots give a configuration at (comp, log_batch) beyond the machine's common factor
 * exp(a): a kernel-weighted mean of the shots' lr − a, shrunk towards 0 (machine.c says how). */
double ab_shot_correction(const ab_shot *s, size_t n, size_t skip, double a, const double comp[AB_COMP_DIM],
                          double log_batch, double prior); /* skip: a shot left out (leave-one-out), SIZE_MAX for
                                                            * none; prior: the shrinking weight, AB_SHOT_PRIOR or
                                                            * more for noisier machines (ab_shot_local_prior) */

struct abacus_machine {
	char id[96];
	char runtime[64];
	char measured[32];
	int threads, runs;
	double seconds;              /* how long measuring took */
	double rate[AB_RATE_COUNT];  /* seconds per unit */
	double spread[AB_RATE_COUNT]; /* (max − min) / median over the runs */
	double adapt;                 /* `abacus adapt`: measured / predicted time on this machine's rows (1) */
	int adapt_rows;               /* how many rows gave it (0: not adapted) */
	ab_shot *shots;               /* the rows of the adaptation, for the local correction (owned) */
	size_t n_shots;
};

#endif
