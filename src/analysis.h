/*
 * analysis.h — the typed graph for one configuration: per-tensor shapes and constant values, the layer
 * list with costs, totals and the simulated memory. Built by analysis.c, memory by memory.c.
 */
#ifndef ABACUS_ANALYSIS_H
#define ABACUS_ANALYSIS_H

#include "ops.h"

/* A matrix product that does fewer FLOPs per byte it moves than this (a linear layer at batch 1 reads
 * its whole weight for one row) runs at the speed of memory, not of the BLAS kernels: its FLOPs are a
 * separate time term. */
#define AB_THIN_INTENSITY 8.0
#define AB_SAVE_NOTHING (-2)

/* Layers whose FLOPs run in BLAS matrix-product kernels: linear layers, attention, recurrent cells. */
static inline int ab_is_matrix_product(abacus_category c)
{
	return c == ABACUS_CAT_MATMUL || c == ABACUS_CAT_ATTENTION || c == ABACUS_CAT_RECURRENT;
}

/* A matrix product under AB_THIN_INTENSITY forward FLOPs per byte moved. */
static inline int ab_layer_thin(const abacus_layer *l)
{
	return ab_is_matrix_product(l->category) &&
	       (double)l->forward_flops < AB_THIN_INTENSITY * ((double)l->bytes_read + (double)l->bytes_written);
}

/* What a layer costs PyTorch besides its FLOPs (layer_view below). AB_LAYER_NORM_END is runtime_torch_fusion.c's
 * working mark, never left in a finished analysis. */
enum { AB_LAYER_KERNEL, AB_LAYER_VIEW, AB_LAYER_FREE, AB_LAYER_FUSED, AB_LAYER_NORM_END };

struct abacus_analysis {
	const abacus_graph *g;         /* borrowed: must outlive the analysis */
	const struct ab_runtime *rt;   /* the configuration's runtime (runtime.h): what the work costs there */
	abacus_config cfg;             /* inputs pointer not retained */
	ab_shape *shapes;              /* per tensor */
	ab_value **vals;               /* per tensor: constant value, the graph's or from vals_arena */
	ab_arena vals_arena;           /* the values the analysis folded */
	unsigned char *rg;             /* per tensor: requires grad */
	unsigned char *wl;             /* per tensor: computed from parameters and constants only */
	unsigned char *wm;             /* per tensor: weight-like, but computed by a kernel PyTorch runs (or a view
	                                * of one): a tensor of its own, which memory.c simulates as an activation */
	unsigned char *cl;             /* per tensor: a 4-D activation PyTorch holds channels-last */
	abacus_layer *layers;
	ab_cost *costs;                /* per layer */
	int *layer_node;               /* per layer: node index */
	int *node_layer;               /* per node: layer index or -1 (folded) */
	size_t n_layers;
	abacus_totals totals;
	abacus_memory mem;
	abacus_memory_step *msteps;    /* the simulated iteration's steps (memory.c) */
	size_t n_msteps;
	const char **unk_ops;          /* borrowed from the graph */
	int64_t *unk_counts;
	size_t n_unk;
	int64_t input_bytes;           /* graph inputs at this configuration */
	int64_t target_bytes;          /* labels (cross-entropy) or the zero target (MSE) */
	int64_t loss_bytes;            /* what the loss keeps for backward */
	double *features;              /* the feature vector (features.c), computed once */
	double cat_flops[ABACUS_CAT_COUNT]; /* forward + backward FLOPs per category (the time terms' input) */
	double thin_flops;             /* of which matrix products with under AB_THIN_INTENSITY FLOPs per byte */
	double slow_conv_flops[2];     /* of which dense convolutions on PyTorch's im2col + BLAS path (the runtime's
	                                * conv_kernel): [0] on one thread, [1] on several */
	double pad_extra_flops[2];     /* what rounding oneDNN convolutions' output channels up to 16 adds to
	                                * the dense-convolution FLOPs (ab_cost.pad_weight), by thread class */
	double dw_flops, dw_weighted_flops; /* depthwise convolutions' FLOPs, and weighted by their rates */
	double dense_group_flops;      /* grouped convolutions' FLOPs priced at the dense rate (ab_cost.dense_groups) */
	double dense_group_weighted;   /* the same weighted by their rates (ab_cost.group_weight) */
	double group_extra_flops;      /* what weighting the other grouped convolutions' FLOPs by their rates adds */
	double dw_extra_flops;         /* what weighting depthwise FLOPs by their rates (ab_cost.dw_weight) adds
	                                * to the grouped-convolution FLOPs */
	/* Per layer: AB_LAYER_KERNEL runs a kernel; AB_LAYER_VIEW is a view op (Reshape, Transpose, Slice, ...)
	 * of an activation: no kernel and no data moved, only the dispatch and autograd bookkeeping;
	 * AB_LAYER_FREE is a view of a weight (the exporter's Transpose of a Linear weight), which PyTorch
	 * folds into the consumer's BLAS call: it costs nothing per iteration; AB_LAYER_FUSED is a node of an
	 * operator the exporter decomposed (runtime_torch_fusion.c), whose kernel is the pattern's last node. */
	unsigned char *layer_view;
	int *fused_save;               /* per layer: at a fused pattern's first node, the tensor the pattern
	                                * keeps for backward (its input); AB_SAVE_NOTHING at its last node;
	                                * -1 elsewhere (the op's own masks decide) */
	double view_layers, view_bytes;  /* count and bytes_read of AB_LAYER_VIEW layers */
	double free_layers, free_bytes;  /* the same of AB_LAYER_FREE layers */
	double fused_layers, fused_bytes; /* count and bytes read + written of AB_LAYER_FUSED layers */
	double serial_steps;           /* recurrent time steps × directions over all recurrent layers */
	double norm_rows;              /* batch-norm rows on maps too small to vectorise (ops.h ab_cost) */
	double serial_bytes;           /* recurrent steps' work in recurrent-matrix bytes (ops.h ab_cost) */
	double serial_flops[2];        /* FLOPs those bytes price, of thick [0] and thin [1] products */
	double weight_bytes;           /* of kernel layers' bytes_read, the weights' (ab_layer_weight_bytes) */
	double nodx_weight_bytes;      /* weights of kernel layers no activation input of which needs a
	                                * gradient: their backward never reads them (the time term AB_TERM_STEP_WEIGHTS) */
	double param_tensors;          /* parameter tensors: the optimizer step runs its kernels once per tensor */
	double dispatch;               /* kernel layers' fixed costs, in µs of one thread (ab_layer_dispatch) */
	double arith;                  /* kernel layers' activation arithmetic beyond a ReLU's, in ns of one
	                                * thread (ab_layer_arith) */
	double bmm_us;                 /* kernel layers' batched-product matrices at their fixed cost, in µs of
	                                * one thread (ab_layer_bmm_us) */
};

/* features.c: allocates and fills *out with the feature vector of a finished analysis. */
int ab_features_compute(double **out, const abacus_analysis *a, abacus_error *err);
/* features.c: the configuration's composition (per category: shares of layers, forward FLOPs and output
 * bytes; FLOPs per layer and sample; layer count) from its feature vector `x`: what novelty.c compares. */
#define AB_COMP_DIM (3 * ABACUS_CAT_COUNT + 2)
void ab_composition(double c[AB_COMP_DIM], const double *x);

/* Of layer i's bytes_read, the bytes of inputs that are weights (parameters, or computed from them and
 * constants alone): BLAS streams a weight matrix at several times the rate an element-wise kernel moves
 * activations, so the time terms price them apart (an MLP or VGG's classifier at a small batch is
 * dominated by reading its weights). */
double ab_layer_weight_bytes(const abacus_analysis *a, size_t i);
/* Kernel layer i's fixed cost per iteration (dispatch, autograd, forward and backward), in microseconds of
 * one thread on the analysis's runtime: the time term AB_TERM_KERNELS weighs each layer by it. */
double ab_layer_dispatch(const abacus_analysis *a, size_t i);

/* Kernel layer i's arithmetic beyond what its bytes price, in ns of one thread: arith_ns × its output's
 * elements (the time term AB_TERM_ARITH). */
double ab_layer_arith(const abacus_analysis *a, size_t i);
/* Kernel layer i's batched-product matrices (ab_cost.bmm_items) at the runtime's fixed cost per matrix
 * (bmm_item_us), in µs of one thread: the time term AB_TERM_BMM_ITEMS. */
double ab_layer_bmm_us(const abacus_analysis *a, size_t i);


/* memory.c: fills a->mem from layers, costs and shapes. */
int ab_simulate_memory(abacus_analysis *a, abacus_error *err);

#endif
