/*
 * runtime.h — the boundary between what a graph computes and what it costs on one runtime.
 *
 * The analysis (analysis.c, the op table and its rules in ops*.c, memory.c) says what each layer computes
 * and what a reverse-mode step needs: shapes, FLOPs, bytes read and written, the tensors saved for
 * backward, and the kind of kernel (a convolution's window, groups and layout). A runtime says what that
 * work costs on it: which kernel it picks (oneDNN or its own im2col path, channel blocking), what it fuses,
 * the transient memory its kernels hold beyond the generic rule, its measured fixed costs per layer and
 * per activation, and how a layer's work becomes the analytic time terms (model.h ab_term). TensorFlow and
 * PyTorch 2 are new runtime_*.c files with a row in runtime.c's table, not edits through the analysis.
 *
 * Every runtime is an `ab_runtime` of function pointers and measured constants; an analysis holds the one
 * its configuration named (abacus_config.runtime; NULL is the first of the table).
 */
#ifndef ABACUS_RUNTIME_H
#define ABACUS_RUNTIME_H

#include "model.h"
#include "ops.h"

/* What the analysis knows of one convolution, for the runtime's kernel choice. */
typedef struct ab_conv_desc {
	const ab_shape *x, *w, *y;        /* input, weight, output */
	int nsp;                          /* spatial dims */
	int64_t group;
	int64_t k[ABACUS_MAX_RANK], s[ABACUS_MAX_RANK], d[ABACUS_MAX_RANK]; /* kernel, stride, dilation */
	int64_t ksz;                      /* kernel elements (product of the weight's spatial dims) */
	int transpose;                    /* ConvTranspose */
	int x_grad, w_grad;               /* the input's and the weight's gradients are computed */
	int x_channels_last;              /* the input is an activation held channels-last */
	int x_permuted;                   /* the input is another permuted view (not channels-last): strided */
	int padded;                       /* any padding */
	int threads;                      /* the configuration's intra-op threads (at least 1) */
	int no_avx;                       /* the machine's kernels have no AVX (abacus_config.isa) */
} ab_conv_desc;

/* What a runtime's training step keeps alive beyond the generic rule (memory.c): counts of output-sized
 * buffers around the loss, and of largest-parameter-sized temporaries in the optimizer step. */
typedef struct ab_step_memory {
	int ce_backward_buffers;   /* cross-entropy's backward: output-sized buffers beside dL/d(output) */
	int mse_forward_buffers;   /* MSE's forward: output-sized transient buffers */
	int mse_keeps_error;       /* MSE's loss keeps its unreduced error alive until the step returns (1/0) */
	int adam_temporaries;      /* Adam's step: temporaries the size of the largest parameter */
	int sgd_temporaries;       /* SGD with momentum's step: the same (PyTorch's updates in place: 0) */
	/* Adam updates each parameter as soon as its gradient is made, in that layer's backward, and frees the
	 * gradient (TensorFlow's dataflow executor; 1/0): its temporaries meet that one gradient, not all of
	 * them. 0: the step runs after backward with every gradient live (PyTorch). */
	int adam_update_in_backward;
	/* SGD with momentum as Keras 3 writes it (m ← m·momentum − g·lr; w ← w + m) under a dataflow executor (1/0):
	 * m·momentum reads no gradient, so every parameter's product is made when the step starts, a parameter-sized
	 * tensor live until that parameter's update, and the update runs as soon as its gradient exists, in the
	 * backward that made it, freeing the gradient and the old m (TensorFlow's; runtime_tf_cpu.c). 0: the step
	 * runs after backward with sgd_temporaries (PyTorch's, in place). */
	int sgd_momentum_early;
	/* A weight's later gradient made by an embedding lookup's backward (Gather) is added into the earlier
	 * one in place (1/0): one weight-sized buffer beside the sum for the moment, not two (memory.c
	 * param_grads). PyTorch 2.15's; 1.13 sums out of place whatever the reader. */
	int gather_grad_in_place;
	/* A module run in place on a view (an ONNX graph cannot say so: the exporter names such nodes,
	 * ab_node.inplace_view) has its backward through a copy of the view's base: output-sized buffers its
	 * backward holds beyond an out-of-place one's (PyTorch's CopySlices: 2, measured: docs/COSTS.md). */
	int inplace_view_copies;
	/* The step runs the forward's operations in the order the graph file lists them, and the backward in
	 * the reverse (1/0; memory.c base_order): an eager runtime whose exporter traced the program (PyTorch's
	 * autograd engine runs the nodes in the reverse of the order they were made). 0: the graph's breadth-first
	 * topological order (TensorFlow's dataflow executor, on tf2onnx's files). */
	int program_order;
	/* A reshape of a strided view (a slice of the last axis, a transpose) whose shape no strides can express
	 * is a copy, a tensor of its own, as PyTorch's reshape makes it (1/0; memory.c reshape_copies). 0: every
	 * reshape shares its input's storage. */
	int reshape_copies;
	/* A gradient made for a permuted view of a tensor (a transpose, a permute) is that tensor's gradient laid
	 * out permuted, and the kernels that need their output's gradient row-major copy it first (1/0; memory.c
	 * permuted_view, strided_grad_copies). 0: views are no tensors (TensorFlow's transposes are copies). */
	int strided_view_grads;
	/* The forward is Python code run eagerly (1/0): a value an operation in a hand-written forward's own body
	 * makes may be bound to a local name (or a list) there and live until that forward returns, past its last
	 * use, where the graph file cannot say which (memory.c held_scopes: abacus_memory.held_peak, the upper end
	 * of the memory interval). 0: a traced program (TensorFlow's tf.function) frees at the last use. */
	int eager_locals;
	int64_t node_bytes;   /* host memory of one operation's autograd record (a layer a gradient reaches),
	                       * from its forward until the graph dies after the step */
	int64_t handle_bytes; /* per activation a layer saves: its saved-tensor handle, to its backward */
	/* Host memory of a tensor beyond its data (its TensorImpl, storage, autograd metadata and the data
	 * block's rounding), per tensor the model keeps: a parameter, a buffer (a batch norm's running
	 * statistics and its counter), a parameter's gradient (from its first accumulation to the next
	 * zero_grad) and the optimizer's state per parameter (SGD's momentum; Adam's two moments and step). */
	int64_t param_tensor_bytes, buffer_tensor_bytes, grad_tensor_bytes, sgd_state_bytes, adam_state_bytes;
} ab_step_memory;

/* A recurrent layer run step by step (ops_nn.c ab_cost_rnn), one layer and direction per step: what a step
 * costs besides streaming its recurrent matrix R, in bytes of R streamed in the same time (LSTM/GRU and a
 * plain RNN: its dispatch; per row-MAC of its three products once the batch makes them compute-bound; per
 * gate element), and the autograd records it keeps from its forward to its backward and to the graph's end. */
/* Bytes of a fused recurrent kernel as a sum of terms: per step and sample, × H and × max(H, input); × H·(H + input)
 * (a copy of the weights, W and R); × H²; and a constant. */
typedef struct ab_rnn_bytes {
	double sbh, sbm, hw, hh, c;
} ab_rnn_bytes;

typedef struct ab_rnn_costs {
	double step_bytes, plain_step_bytes, mac_bytes;
	/* A step's cost grows with the sequence it belongs to (the autograd records of every earlier step stay
	 * live): per step, these bytes' worth per step of the layer's sequence (LSTM/GRU, plain RNN). */
	double seq_bytes, plain_seq_bytes;
	int64_t gate_bytes;
	int64_t record_bytes, graph_bytes, plain_record_bytes, plain_graph_bytes;
	/* What a step keeps per sample for backward: bytes per hidden unit (LSTM/GRU), per gate element (plain
	 * RNN); and the backward's peak accumulation of R's gradient, in multiples of R (one direction, two). */
	int64_t saved_per_h, plain_saved_per_gate;
	double bwd_accum_r, bwd_accum_r_two_dirs;
	/* A runtime that runs backward through time as a while loop with this many iterations in flight
	 * (TensorFlow's parallel_iterations) holds, instead of the bwd_accum_r rule, up to min(sequence, this)
	 * iterations' partial gradients of the layer's input and recurrent weights (ops_nn.c ab_cost_rnn). 0: no
	 * such loop (PyTorch). */
	int bwd_parallel_iterations;
	/* An LSTM the runtime trains through one fused kernel per layer and direction (PyTorch 2.15's CPU
	 * mkldnn_rnn_layer, oneDNN's RNN primitive), not step by step (1/0): what that kernel keeps for its
	 * backward beyond its outputs, and the transient bytes of its forward and of its backward beyond the
	 * gradients it returns, per direction, as sums of terms in bytes (ops_nn.c ab_cost_rnn). */
	int lstm_fused;
	ab_rnn_bytes fused_saved, fused_fwd, fused_bwd;
} ab_rnn_costs;

typedef struct ab_runtime {
	const char *name;                 /* as rows' `runtime` column says it: "torch-1.13.1" */
	ab_step_memory step;              /* the training step's memory beyond the generic rule */
	ab_rnn_costs rnn;                 /* recurrent layers' per-step costs */
	/* Batch norm: input-sized buffers its backward holds beside the input's gradient, and the map sizes
	 * (elements per (sample, channel) row) its kernels run row by row, unvectorised (AB_TERM_NORM_ROWS). */
	int bn_backward_buffers;
	int64_t bn_scalar_map_min, bn_scalar_map_max;
	/* Kernel selection of a convolution: fills k->slow_path, k->pad_weight, k->dw_weight and the transient
	 * bytes its backward kernels hold (k->bwd_workspace). */
	void (*conv_kernel)(const ab_conv_desc *cv, ab_cost *k);
	/* Kernel layer i's fixed cost per iteration (dispatch, autograd, forward and backward), in µs of one
	 * thread. */
	double (*dispatch_us)(const abacus_analysis *a, size_t i);
	/* A batched matrix product's fixed cost per matrix (ab_cost.bmm_items), in µs of one thread, beside its
	 * FLOPs: [0] for matrices of m·k·n under bmm_loop_mkn, [1] for the others (the time term
	 * AB_TERM_BMM_ITEMS, analysis.c ab_layer_bmm_us). */
	double bmm_item_us[2];
	int64_t bmm_loop_mkn;
	/* Forward + backward arithmetic per output element beyond a ReLU's, ns of one thread, per class. */
	double act_ns[AB_ACT_COUNT];
	/* A LayerNorm row of n elements pays act_ns[AB_ACT_LN_ROW_TAIL] beside act_ns[AB_ACT_LN_ROW] when n is not a
	 * multiple of 8 and below this (ab_ln_arith_ns). */
	int64_t ln_tail_below;
	/* What its backward keeps of a layer where that is not what the op table says (the table's rules are
	 * PyTorch's autograd): adjusts k->in_mask, k->out_mask and k->extra_bytes after the op's cost rule. NULL:
	 * the table's. */
	void (*saved)(const ab_ctx *c, const ab_opdef *def, ab_cost *k);
	/* Which inputs' gradients its backward writes into the output's gradient buffer (memory.c): a bit per
	 * input, for an op of the table (def) or an unknown one (NULL). NULL: the table's grad_pass. */
	unsigned (*grad_pass)(const ab_opdef *def);
	/* Marks the members of operators the exporter decomposed but the runtime runs as one kernel
	 * AB_LAYER_FUSED (analysis.h). */
	void (*mark_fused)(abacus_analysis *a);
	/* What the runtime keeps between training steps beyond the weights, the optimizer's state and the inputs,
	 * in bytes (memory.c counts it with the buffers, after a->param_tensors is known): TensorFlow's traced step,
	 * whose size follows the graph's variables and layers. NULL: nothing (PyTorch's bookkeeping is left to the
	 * learned correction). */
	int64_t (*state_bytes)(const abacus_analysis *a);
	/* Transient bytes the runtime holds once the forward has run, with its saved tensors (and TensorFlow's SGD
	 * momentum products, step.sgd_momentum_early) live (memory.c): TensorFlow's XLA-compiled grouped
	 * convolutions' dense filters (runtime_tf_cpu.c). NULL: nothing. */
	int64_t (*forward_end_bytes)(const abacus_analysis *a);
	/* Layer L's parameter gradients are made after the whole backward, in the forward's order, and the layer
	 * keeps its output's gradient and what it saved until then (1/0; memory.c weight_grads_late): TensorFlow's
	 * executor leaves a bias-less convolution's filter gradient for last (runtime_tf_cpu.c). NULL: none. */
	int (*weight_grad_late)(const abacus_analysis *a, size_t L);
	/* The analytic time terms of an analysed configuration on `threads` threads. */
	void (*time_terms)(double t[AB_TIME_TERMS], const abacus_analysis *a, int threads);
	/* What of the dense-convolution term t[AB_TERM_CONV] (time_terms' t) is depthwise convolutions priced at a
	 * fixed multiple of the dense rate: dw[0] its share of the term, dw[1] the depthwise FLOPs (weighted by
	 * their kernels' rates) per unit of the term. A machine profile prices that share at the machine's own
	 * depthwise rate (model.c ab_profile_term_rate). NULL: none. */
	void (*conv_depthwise)(double dw[2], const double t[AB_TIME_TERMS], const abacus_analysis *a, int threads);
	/* Layer i's part of the time base under the coefficients c (seconds per unit of each term). */
	double (*layer_time)(const double c[AB_TIME_TERMS], const abacus_analysis *a, size_t i, int threads);
} ab_runtime;

/* The runtime called `name`, or the default (the table's first) for NULL; NULL when none has that name. */
const ab_runtime *ab_runtime_find(const char *name);
/* How many runtimes the table has (runtime.c checks it), and a runtime's position in it (the feature
 * vector's runtime columns, features.c); -1 for one not in the table. */
#define AB_N_RUNTIMES 3
int ab_runtime_index(const ab_runtime *rt);

/* runtime_torch_cpu.c: PyTorch 1.13.1 on a CPU (oneDNN, OpenBLAS), measured on this project's machines. */
extern const ab_runtime ab_runtime_torch_1_13_cpu;
/* runtime_torch2_cpu.c: PyTorch 2.15.0 on a CPU (PyPI's wheel: oneDNN, MKL), which shares 1.13's rules until
 * its rows say otherwise. */
extern const ab_runtime ab_runtime_torch_2_15_cpu;
/* runtime_tf_cpu.c: TensorFlow 2.21.0 on a CPU (tensorflow-cpu, Keras 3, oneDNN), on collector/tf_export.py's
 * graphs: its measured memory rules; its time terms PyTorch's form until its rows fit them. */
extern const ab_runtime ab_runtime_tf_2_21_cpu;
/* PyTorch's rules on a CPU (runtime_torch_cpu.c says where each number comes from), for the runtime files of
 * the PyTorch versions that share them: kernel choice, fixed costs, time terms, a layer's part of the time. */
void ab_torch_conv_kernel(const ab_conv_desc *cv, ab_cost *k);
double ab_torch_dispatch_us(const abacus_analysis *a, size_t i);
void ab_torch_time_terms(double t[AB_TIME_TERMS], const abacus_analysis *a, int threads);
void ab_torch_conv_depthwise(double dw[2], const double t[AB_TIME_TERMS], const abacus_analysis *a, int threads);
double ab_torch_layer_time(const double c[AB_TIME_TERMS], const abacus_analysis *a, size_t i, int threads);
/* The step's buffers, recurrent steps' costs and activation arithmetic measured on PyTorch 1.13.1
 * (runtime_torch_cpu.c explains each). */
#define AB_TORCH_STEP_MEMORY_FIELDS                                                                       \
	.ce_backward_buffers = 1, .mse_forward_buffers = 1, .mse_keeps_error = 1, .adam_temporaries = 2,     \
	.program_order = 1, .strided_view_grads = 1, .eager_locals = 1, .inplace_view_copies = 2,                             \
	.node_bytes = 700, .handle_bytes = 400, .param_tensor_bytes = 580, .buffer_tensor_bytes = 360,           \
	.grad_tensor_bytes = 775, .sgd_state_bytes = 380, .adam_state_bytes = 1250
#define AB_TORCH_STEP_MEMORY { AB_TORCH_STEP_MEMORY_FIELDS }
#define AB_TORCH_RNN_COSTS_FIELDS                                                                         \
	.step_bytes = 361000, .plain_step_bytes = 156000, .mac_bytes = 0.3, .gate_bytes = 48,                \
	.seq_bytes = 282, .plain_seq_bytes = 122,                                                            \
	.record_bytes = 4400, .graph_bytes = 9600, .plain_record_bytes = 950, .plain_graph_bytes = 3000,    \
	.saved_per_h = 30, .plain_saved_per_gate = 4, .bwd_accum_r = 3.0, .bwd_accum_r_two_dirs = 4.0
#define AB_TORCH_RNN_COSTS { AB_TORCH_RNN_COSTS_FIELDS }
#define AB_TORCH_ACT_ARITH                                                                                \
	[AB_ACT_SIGMOID] = 0.35, [AB_ACT_ELU] = 0.9, [AB_ACT_TANH] = 2.1, [AB_ACT_SOFTPLUS] = 2.65,           \
	[AB_ACT_PRELU] = 5.3, [AB_ACT_MISH] = 14.3, [AB_ACT_GELU] = 0.9, [AB_ACT_SILU] = 0.8,                  \
	[AB_ACT_CUMSUM] = 3.5, [AB_ACT_CUMSUM_STRIDED] = 8, [AB_ACT_CUMSUM_PAGED] = 7.5
/* PyTorch's windowed pooling on NCHW maps (runtime_torch_cpu.c): per output element, and per window element. */
#define AB_TORCH_POOL_ARITH [AB_ACT_POOL] = 10, [AB_ACT_POOL_AVG_WIN] = 0.64, [AB_ACT_POOL_MAX_WIN] = 1.6
/* native_layer_norm, forward and backward, per row of n elements beyond what a ReLU costs on the same tensor
 * (one thread, amd-f26m2, 2026-12-07; 2^21 floats in rows of n, median of 7): in 1.13 35-40 ns a row for n a
 * multiple of 8 up to 64 (8, 16, 24, 40), and 140-200 ns for every n that is not, small or large (4, 5, 6, 7,
 * 10, 12, 18, 20, 36, 60, 100: 140-197; 300: 225 against 200's 86): its vectorised kernel runs rows of other
 * lengths on a slow path, mostly in the backward (n = 6: forward 47 ns a row, forward and backward 183).
 * 2.15 pays the tail only below 8 (5 and 7: 89 and 109 ns; 10, 18, 20: 36-39; 40: 31). The analysis prices
 * the row's bytes already (a few ns here), so 30 ns a row and 120 more for the tail. The generated CNNs with
 * a LayerNorm2d (97 rows on three quiet one-thread machines, random split of the rows of 2026-12-07 21:10):
 * the analytic base 18.2 → 10.4 % fast on average (MRE 25.3 → 22.0 %), the learned model 12.83 → 12.38 %.
 * Most of what is left is not in the graph: an in-place activation on a LayerNorm2d's permuted output
 * (nn.Mish(inplace=True)) costs 44 ns an element forward and backward in 1.13 against 8 out of place, the
 * exported graph being the same (conv → LayerNorm2d → activation → conv, 4 × 64 × 96², one thread). */
#define AB_TORCH_LN_ARITH [AB_ACT_LN_ROW] = 30, [AB_ACT_LN_ROW_TAIL] = 120
#define AB_TORCH_ARITH_NS { AB_TORCH_ACT_ARITH, AB_TORCH_POOL_ARITH, AB_TORCH_LN_ARITH }
/* The optimizer step as PyTorch 1.13 runs it without foreach (its default): per parameter tensor, SGD
 * with momentum runs 3 element-wise kernels (buf.mul_, buf.add_, p.add_: 32 bytes moved per element),
 * Adam 9 (the step count, two moments in two kernels each, sqrt, divide, add eps, addcdiv: 80 bytes and
 * temporaries). Measured here on one thread: 4.5 µs (SGD) and 16 µs (Adam) per small tensor; per
 * parameter byte on large ones 0.13 and 0.38 ns (the step alone, timed inside the iteration: resnet18,
 * vgg11 and an MLP all give Adam/SGD = 3.0). The step terms count tensors and bytes in units of SGD's
 * cost, so one fitted rate per term serves both optimizers. */
#define AB_TORCH_ADAM_STEP_TENSOR 3.5 /* Adam's step cost per parameter tensor, in units of SGD's */
#define AB_TORCH_DW_DENSE_RATIO 6.0  /* a 3×3 depthwise FLOP costs this many dense-convolution FLOPs */
#define AB_TORCH_LLC_BYTES 33554432.0 /* the last-level cache the step's parameter traffic can stay in */
#define AB_TORCH_ADAM_STEP_BYTES 3.0  /* Adam's step cost per parameter byte, in units of SGD's */
/* runtime_torch_fusion.c: PyTorch's kernels for the exporter's decomposed LayerNorm, GELU, SiLU, Mish and
 * GroupNorm. */
void ab_torch_mark_fused(abacus_analysis *a);
/* A LayerNorm's arithmetic per element of its rows of n elements, forward and backward, ns of one thread: the
 * row's cost (act_ns's AB_ACT_LN_ROW and AB_ACT_LN_ROW_TAIL) over n; 0 for n < 1. */
double ab_ln_arith_ns(const ab_runtime *rt, int64_t n);

#endif
