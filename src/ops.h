/*
 * ops.h — the op table: one row per supported ONNX op with its NSM category, shape rule, constant
 * folding rule and cost rule (forward/backward FLOPs and what it saves for backward).
 *
 * Rules see one node at a time through an ab_ctx. A shape rule sets every output's shape; a fold rule
 * (only called when every present input has a known value) computes output values; a cost rule fills an
 * ab_cost. Rules return 0 or an ABACUS_E* code with the error filled in, naming the node.
 */
#ifndef ABACUS_OPS_H
#define ABACUS_OPS_H

#include "graph.h"

typedef struct ab_shape {
	int known;
	int dtype;
	int rank;
	int64_t dims[ABACUS_MAX_RANK];
	int64_t numel;
} ab_shape;

typedef struct ab_ctx {
	const abacus_graph *g;
	const ab_node *n;
	ab_shape *shapes;        /* per tensor */
	ab_value **vals;         /* per tensor: known constant value or NULL */
	const unsigned char *rg; /* per tensor: requires grad (for cost rules) */
	abacus_error *err;
	ab_arena *arena;         /* folded values are allocated here (they live as long as the analysis) */
	const unsigned char *cl; /* per tensor: an activation PyTorch holds channels-last (analysis.c) */
	const struct ab_runtime *rt; /* what the work costs on the configuration's runtime (runtime.h) */
	int threads;             /* the configuration's intra-op threads (abacus_config) */
	int no_avx;              /* its machine's kernels have no AVX (abacus_config.isa sse41 or sse) */
} ab_ctx;

/* Saved-for-backward description: bit k of in_mask saves input k, bit k of out_mask saves output k;
 * extra_bytes are buffers the op keeps beside them (pooling indices, dropout masks, statistics). */
typedef struct ab_cost {
	int64_t fwd;
	int64_t bwd;
	unsigned in_mask;
	unsigned out_mask;
	int64_t extra_bytes;
	int64_t bytes_read;
	int64_t bytes_written;
	int category;            /* -1, or a category that overrides the table's (grouped conv, embedding) */
	int64_t serial_steps;    /* steps run one after another, each its own few kernels (recurrent cells) */
	int64_t serial_bytes;    /* those steps' work in bytes of the recurrent matrix streamed (ab_cost_rnn) */
	int64_t serial_flops;    /* of fwd + bwd, the FLOPs serial_bytes prices: left out of the FLOP terms */
	int identity;            /* this instance returns its input 0 itself (Dropout with ratio 0): a view */
	int64_t fwd_workspace;   /* bytes the forward holds transiently beside its outputs (recurrent) */
	int64_t graph_bytes;     /* bytes the forward's autograd records hold until the graph is destroyed
	                          * (after the optimizer step), not freed by this layer's backward */
	int64_t bwd_workspace;   /* bytes the backward holds transiently beside its gradients (oneDNN) */
	int64_t row_major_copy;  /* a fused LayerNorm over a strided view: the row-major copy of its input that
	                          * its forward and its backward each hold while they run (runtime_torch_fusion.c) */
	int slow_path;           /* AB_SLOW_* bits: PyTorch runs its im2col + BLAS convolution, not oneDNN */
	double dw_weight[2];     /* a depthwise convolution's time per forward and per backward FLOP, in
	                          * units of a plain 3×3's (the runtime's conv_kernel); 0: not depthwise */
	double pad_weight;       /* a dense oneDNN convolution's time per FLOP relative to its FLOPs: its
	                          * output channels rounded up to oneDNN's block of 16 (the runtime's
	                          * conv_kernel); 0: 1 */
	int dense_groups;        /* a grouped convolution (not depthwise) whose every group is at least a channel
	                          * block wide in and out: the runtime runs each group as a dense convolution,
	                          * priced at the dense rate (its conv_kernel) */
	double group_weight;     /* a grouped convolution's (not depthwise) time per FLOP in units of its term's
	                          * rate (the dense one when dense_groups): narrower groups run slower (the
	                          * runtime's conv_kernel); 0: 1 */
	int64_t norm_rows;       /* (sample, channel) rows of a batch norm whose maps are too small for
	                          * PyTorch's vectorised kernels: each costs a fixed ~100 ns (ab_cost_norm) */
	double arith_ns;         /* forward + backward arithmetic per output element beyond a ReLU's, in ns
	                          * of one thread: costly activations (the runtime's act_ns, runtime.h) */
	unsigned grad_strided;   /* bit i: input i's gradient is a permuted view of a bmm's output, not
	                          * row-major (an Einsum operand read batch-strided or transposed) */
	int strided_grad_buffers; /* output-sized buffers the backward holds when its output's gradient
	                          * arrives strided (GELU's kernel: runtime_torch_fusion.c) */
	int64_t bmm_items;       /* a batched matrix product (MatMul of stacked matrices, a contracting Einsum):
	                          * its matrices, in the forward's product and in each operand gradient's, which
	                          * is a batched product of the same count; 0: none */
	int64_t bmm_mkn;         /* one of those matrices' m·k·n (the runtime prices an item by it: bmm_item_us) */
} ab_cost;

enum {
	AB_OP_VIEW = 1,        /* output 0 shares input 0's storage (reshape, transpose, slice ...) */
	AB_OP_NOGRAD = 2,      /* outputs never require grad (comparisons, shape queries, argmax) */
	AB_OP_CONSTANT = 4,    /* a constant: folded even without inputs, and never a layer (Constant) */
	AB_OP_MEAN_GRAD = 8,   /* its input's gradient is an expansion, laid out like one (ReduceMean; memory.c) */
	AB_OP_COPIES_MEAN_GRAD = 16, /* copies such a gradient before using it as its output's (MatMul, Gemm) */
	AB_OP_SELECT = 32,     /* input 0 is a condition; the output's dtype is input 1's (Where) */
	AB_OP_TRANSPOSED = 64, /* a transposed convolution (ConvTranspose) */
	AB_OP_PERMUTE = 128,   /* a permutation of axes (Transpose): it may leave an activation channels-last */
	AB_OP_GROUPS = 256,    /* with attribute group > 1 the layer is a grouped convolution (Conv) */
	AB_OP_LOOKUP = 512,    /* reading rows of a parameter makes it an embedding (Gather) */
	AB_OP_PRODUCT = 1024,  /* a product of two activations is attention-like (MatMul, Einsum) */
	AB_OP_GLOBAL = 2048,   /* pooling over the whole map (GlobalAveragePool ...) */
	AB_OP_ARGMAX = 4096,   /* routes gradients through the positions of maxima it keeps (max pooling) */
	AB_OP_EXPAND_GRAD = 8192, /* its input's gradient is its output's, expanded: a view, no buffer (ReduceSum) */
	AB_OP_NARROW_GRAD = 16384, /* each input's gradient is a narrowed view of its output's (PyTorch's Concat) */
	AB_OP_PARTS = 32768    /* its outputs are parts of its input, whose gradients stay apart until its own
	                        * backward concatenates them (Split: chunk, unbind) */
};

/* The output's dtype (ab_shape_unary, ab_shape_broadcast, ab_shape_reduce): the input's, bool, the `to`
 * attribute, input 1's, or int64 indices. */
enum { AB_OUT_SAME, AB_OUT_BOOL, AB_OUT_CAST_TO, AB_OUT_LIKE_IN1, AB_OUT_INDEX /* int64 (ArgMax) */ };

/* An element-wise op's arithmetic class: what it costs beyond a ReLU per element is the runtime's
 * measurement (runtime_torch_cpu.c); the decomposed SiLU, GELU and Mish patterns get theirs from fusion.
 * A cumulative sum and a windowed pooling are not activations but are priced the same way: a scan runs
 * element by element, a pooling window by window (analysis.c picks their classes). */
typedef enum ab_act {
	AB_ACT_NONE, AB_ACT_SIGMOID, AB_ACT_ELU, AB_ACT_TANH, AB_ACT_SOFTPLUS, AB_ACT_PRELU, AB_ACT_MISH, AB_ACT_GELU,
	AB_ACT_SILU,
	AB_ACT_CUMSUM,         /* a scan whose elements lie under 128 apart (analysis.c scan_arith_ns) */
	AB_ACT_CUMSUM_STRIDED, /* a scan 128 or more elements apart */
	AB_ACT_CUMSUM_PAGED,   /* more per element for each 256 steps beyond 256 of a scan a page or more apart */
	AB_ACT_POOL,           /* a windowed pooling's output element (analysis.c pool_arith_ns) */
	AB_ACT_POOL_AVG_WIN,   /* more per element of an average pooling's window */
	AB_ACT_POOL_MAX_WIN,   /* more per element of a max pooling's window */
	AB_ACT_LN_ROW,         /* a LayerNorm's row, forward and backward: per row, not per element (ab_ln_arith_ns);
	                        * also the class that marks the ONNX LayerNormalization op (analysis.c) */
	AB_ACT_LN_ROW_TAIL,    /* more per row whose length is not a multiple of 8 (ab_runtime.ln_tail_below) */
	AB_ACT_COUNT
} ab_act;

/* ab_opdef.save_in values that depend on which operands require grad (autograd saves conditionally):
 * a product keeps each operand for the other's gradient only (x * w keeps w for dx, x for dw); a
 * quotient a / b keeps b for either gradient and a only for b's (x / constant keeps nothing). */
/* ab_cost.slow_path: the im2col + BLAS convolution on one thread, on several. */
enum { AB_SLOW_ONE_THREAD = 1, AB_SLOW_THREADS = 2 };

enum { AB_SAVE_PRODUCT = 0x10000, AB_SAVE_QUOTIENT = 0x20000 };

/* What one element of an element-wise op's constant inputs becomes (ops_elem.c), for folding shape
 * arithmetic: `f` on doubles; `i` exact on int64 (-1 on overflow or division by zero), NULL when the op
 * has no exact integer form (integers then go through `f`); `fmod` is Mod's attribute. */
typedef struct ab_scalar {
	double (*f)(double a, double b, int fmod);
	int (*i)(int64_t a, int64_t b, int fmod, int64_t *r);
	int arity;  /* 1: unary (b unused); 2: binary or variadic, folded left to right */
	int mean;   /* the folded sum is divided by the number of inputs (Mean) */
} ab_scalar;
extern const ab_scalar ab_sc_add, ab_sc_sub, ab_sc_mul, ab_sc_div, ab_sc_mod, ab_sc_pow, ab_sc_max, ab_sc_min,
	ab_sc_eq, ab_sc_lt, ab_sc_gt, ab_sc_le, ab_sc_ge, ab_sc_and, ab_sc_or, ab_sc_xor, ab_sc_mean, ab_sc_neg,
	ab_sc_abs, ab_sc_same, ab_sc_floor, ab_sc_ceil, ab_sc_round, ab_sc_sqrt, ab_sc_recip, ab_sc_exp, ab_sc_log,
	ab_sc_relu, ab_sc_sign, ab_sc_not, ab_sc_sigmoid, ab_sc_tanh, ab_sc_erf;

typedef struct ab_opdef {
	const char *name;
	const char *domain;                     /* NULL: ONNX's default domain; else a custom one (AB_DOMAIN) */
	abacus_category cat;
	int (*shape)(ab_ctx *c);
	int (*fold)(ab_ctx *c);
	int (*cost)(ab_ctx *c, ab_cost *out);   /* NULL: the element-wise rule from the fields below */
	unsigned flags;
	int fwd_per_elem, bwd_per_elem;         /* FLOPs per output element (element-wise rule) */
	unsigned save_in, save_out;             /* tensors saved for backward (element-wise rule) */
	const ab_scalar *scalar;                /* element-wise folding (fold = ab_fold_elementwise or
	                                         * ab_fold_reduce), or NULL */
	int out_dtype;                          /* AB_OUT_*: the element-wise shape rules' output dtype */
	ab_act act;                             /* the activation's arithmetic class */
	unsigned grad_pass;                     /* bit i: input i receives the output's gradient itself, no
	                                         * copy (Add: every input of its shape; Sub: the first) */
	unsigned state_in;                      /* bit i: a float initializer at input i is state (running
	                                         * statistics, scales, pad values), not a trainable parameter */
	int gates;                              /* recurrent cells: gates per step (LSTM 4, GRU 3, RNN 1) */
	int bwd_out_copies;                     /* output-sized buffers its backward holds beside the gradients
	                                         * (element-wise rule; CumSum's flipped and summed gradient) */
	int bwd_select;                         /* a max or min reduction: its backward finds the selected
	                                         * elements by a mask of the input's size (ab_cost_reduce) */
	int strides;                            /* AB_STRIDES_*: how a view lays out its output over its
	                                         * input's storage (memory.c reshape_copies) */
} ab_opdef;

/* ab_opdef.strides: a view's output strides from its input's. RESHAPE (Reshape, Flatten, Squeeze, Unsqueeze)
 * is a view only where PyTorch's computeStride finds strides for the new shape, else a copy; PERMUTE permutes
 * them (Transpose's perm); SLICE keeps them (Slice, Split: a range of one axis); EXPAND makes the broadcast
 * axes' 0; SAME keeps them (Identity). NONE: not a view, or one whose layout is not followed. */
enum { AB_STRIDES_NONE, AB_STRIDES_SAME, AB_STRIDES_RESHAPE, AB_STRIDES_PERMUTE, AB_STRIDES_SLICE, AB_STRIDES_EXPAND };

extern const ab_opdef ab_ops[];
extern const int ab_n_ops;
/* The op table's row of a node, or NULL for an op not in it. */
static inline const ab_opdef *ab_node_def(const ab_node *n)
{
	return n->op_index >= 0 ? &ab_ops[n->op_index] : NULL;
}
/* The row's AB_OP_* flags (0 for an unknown op). */
static inline unsigned ab_node_flags(const ab_node *n)
{
	return n->op_index >= 0 ? ab_ops[n->op_index].flags : 0;
}
/* Abacus's own ONNX domain: ops the collector's exporter writes where ONNX has none (StopGradient). */
#define AB_DOMAIN "ai.abacus"

/* Row index for (op_type, domain), or -1. Domains "" and "ai.onnx" are the standard ops; a custom domain's
 * op is only its own domain's row. */
int ab_op_lookup(const char *op, const char *domain);

/* A reduction node names the axes it reduces (attribute or input), as x.mean(dims) or x.amax(dims) export;
 * without them it reduces everything (x.mean(), x.max()). */
int ab_reduce_has_axes(const ab_node *n);

/* ---- helpers for rules ---- */
static inline const ab_shape *ab_in(const ab_ctx *c, int k)
{
	return (k < c->n->n_in && c->n->in[k] >= 0) ? &c->shapes[c->n->in[k]] : NULL;
}
static inline const ab_value *ab_inval(const ab_ctx *c, int k)
{
	return (k < c->n->n_in && c->n->in[k] >= 0) ? c->vals[c->n->in[k]] : NULL;
}
static inline int ab_has_in(const ab_ctx *c, int k)
{
	return k < c->n->n_in && c->n->in[k] >= 0;
}
static inline int ab_in_cl(const ab_ctx *c, int k)
{
	return ab_has_in(c, k) && c->cl && c->cl[c->n->in[k]];
}
static inline int ab_in_rg(const ab_ctx *c, int k)
{
	return ab_has_in(c, k) && c->rg && c->rg[c->n->in[k]];
}
/* What a product of inputs 0 and 1 keeps for backward: each operand for the other's gradient only (bit 0:
 * input 0, kept where input 1 requires grad; bit 1: input 1, where input 0 does). PyTorch's autograd saves
 * conditionally so for x * w and for every matrix product (mm, bmm, matmul, addmm, linear, einsum): measured
 * 2026-12-05 with the allocator tracker (/tmp/wt-mem2-probe/p_mm_saved.py), what a product keeps once its
 * operands' own references are gone: mm of A [256, 96] (98,304 B) and B [96, 128] (49,152 B) keeps 155,512
 * with both requiring grad, 52,456 with A's alone (B), 101,576 with B's alone (A); bmm, matmul 3-D·2-D,
 * 2-D·3-D and 4-D, addmm, linear and einsum "bij,bjk->bik" the same way. */
static inline unsigned ab_product_in_mask(const ab_ctx *c)
{
	return (ab_in_rg(c, 1) ? 1u : 0u) | (ab_in_rg(c, 0) ? 2u : 0u);
}
/* Sets output k's shape (numel is computed and checked). */
int ab_set_out(ab_ctx *c, int k, int dtype, int rank, const int64_t *dims);
/* Gives output k a value, which must live as long as the analysis: allocated from c->arena, or the
 * graph's own (a Constant node's attribute); its shape is set from the value. */
int ab_set_outval(ab_ctx *c, int k, ab_value *v);
/* Requires input k to be present with a known shape; reports an error naming the node otherwise. */
int ab_need(ab_ctx *c, int k);
/* Requires input k's value (a shape-like constant); `what` names it in the error. */
int ab_need_val(ab_ctx *c, int k, const char *what);
/* An error naming the node. */
int ab_node_err(ab_ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Normalises a possibly negative axis against rank; -1 when out of range. */
int ab_axis(int64_t axis, int rank);
/* Multiplies with overflow check into *acc; returns -1 on overflow. */
int ab_muladd(int64_t *acc, int64_t a, int64_t b);

/* Rule families, defined in ops_*.c and referenced by the table in ops.c. */
int ab_shape_unary(ab_ctx *c);
int ab_shape_broadcast(ab_ctx *c);
int ab_fold_elementwise(ab_ctx *c);
int ab_fold_where(ab_ctx *c);
int ab_broadcast_dims(ab_ctx *c, const ab_shape *a, const ab_shape *b, int *rank, int64_t *dims);

/* ops_shape.c */
int ab_fold_same_data(ab_ctx *c);
int ab_shape_reshape(ab_ctx *c);
int ab_shape_flatten(ab_ctx *c);
int ab_shape_transpose(ab_ctx *c);
int ab_fold_transpose(ab_ctx *c);
int ab_shape_squeeze(ab_ctx *c);
int ab_shape_unsqueeze(ab_ctx *c);
int ab_shape_concat(ab_ctx *c);
int ab_fold_concat(ab_ctx *c);
int ab_shape_split(ab_ctx *c);
int ab_shape_slice(ab_ctx *c);
int ab_fold_slice(ab_ctx *c);
int ab_shape_gather(ab_ctx *c);
int ab_fold_gather(ab_ctx *c);
int ab_shape_expand(ab_ctx *c);
int ab_shape_tile(ab_ctx *c);
int ab_fold_expand(ab_ctx *c);
int ab_fold_tile(ab_ctx *c);
int ab_shape_shape(ab_ctx *c);
int ab_shape_size(ab_ctx *c);
int ab_shape_constant(ab_ctx *c);
int ab_shape_constant_of_shape(ab_ctx *c);
int ab_shape_range(ab_ctx *c);
int ab_shape_pad(ab_ctx *c);
int ab_shape_resize(ab_ctx *c);
int ab_shape_upsample(ab_ctx *c);
int ab_shape_like_input1(ab_ctx *c);
int ab_shape_depth_to_space(ab_ctx *c);
int ab_shape_space_to_depth(ab_ctx *c);
int ab_shape_random(ab_ctx *c);
int ab_shape_random_like(ab_ctx *c);
int ab_shape_onehot(ab_ctx *c);
int ab_shape_gather_nd(ab_ctx *c);

/* ops_nn.c */
int ab_shape_conv(ab_ctx *c);
int ab_shape_conv_transpose(ab_ctx *c);
int ab_cost_conv(ab_ctx *c, ab_cost *k);
int ab_shape_pool(ab_ctx *c);
int ab_cost_pool(ab_ctx *c, ab_cost *k);
int ab_shape_gemm(ab_ctx *c);
int ab_cost_gemm(ab_ctx *c, ab_cost *k);
int ab_shape_matmul(ab_ctx *c);
int ab_cost_matmul(ab_ctx *c, ab_cost *k);
int ab_shape_einsum(ab_ctx *c);
int ab_cost_einsum(ab_ctx *c, ab_cost *k);
int ab_shape_batchnorm(ab_ctx *c);
int ab_shape_layernorm(ab_ctx *c);
int ab_cost_norm(ab_ctx *c, ab_cost *k);
int ab_shape_dropout(ab_ctx *c);
int ab_cost_dropout(ab_ctx *c, ab_cost *k);
int ab_shape_reduce(ab_ctx *c);
int ab_fold_reduce(ab_ctx *c);
int ab_cost_reduce(ab_ctx *c, ab_cost *k);
int ab_shape_topk(ab_ctx *c);
int ab_shape_rnn(ab_ctx *c);
int ab_cost_rnn(ab_ctx *c, ab_cost *k);
int ab_cost_gather(ab_ctx *c, ab_cost *k);
int ab_cost_resize(ab_ctx *c, ab_cost *k);
int ab_cost_move(ab_ctx *c, ab_cost *k);
/* ops.c: the element-wise cost rule driven by the table's per-element fields. */
int ab_cost_table(ab_ctx *c, const ab_opdef *d, ab_cost *k);
/* The transient bytes of a broadcasting product's (quotient's) backward (ops_elem.c): the gradient of an
 * operand smaller than the output is made output-sized, then summed down. */
int64_t ab_broadcast_product_workspace(const ab_ctx *c, int quotient);

#endif
