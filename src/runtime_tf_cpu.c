/*
 * runtime_tf_cpu.c — TensorFlow 2.21.0 (PyPI's tensorflow-cpu, Keras 3.15.1) on a CPU, oneDNN on with the
 * system allocator (TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1), one intra-op and one inter-op thread: the training
 * step of collector/tf_worker.py (a tf.function with GradientTape and optimizer.apply_gradients, the
 * optimizer built before tracing), on graphs exported by collector/tf_export.py (docs/PROTOCOL.md, "Graphs",
 * runtime tf-2.21.0: the weights are data-less initializers named by their variable paths, BatchNormalization
 * one node in training mode, Dropout one training-mode node).
 *
 * Memory: what is measured (scripts/tf_memory_rules.py, the allocator tracker, 2026-12-05; docs/COSTS.md
 * "TensorFlow 2.21" has the table: 40 configurations of 14 small models, batch 4 and 16 or 16 and 64, SGD
 * and Adam, each the peak of 2 steps after 3 warm-up steps) and encoded here:
 * - The optimizer step. Keras 3's SGD with momentum computes m ← 0.9·m − 0.01·g and w ← w + m out of
 *   place: one temporary the size of the variable being updated beside all the gradients. A Dense
 *   2048 → 4096 (33.6 MB of weights) peaked 69.3-70.5 MB above its persistent state at batch 4 to 64
 *   (its gradients and 35.7-36.9 MB more); PyTorch's rule (in place) said 33.6. Its Adam: 67.4-68.2, one
 *   temporary too, where PyTorch's makes two. sgd_temporaries = adam_temporaries = 1.
 * - SGD's momentum products from the step's start (step.sgd_momentum_early): that temporary is m·momentum,
 *   which reads no gradient; the executor makes it for every variable before the forward (the profiler's
 *   kernel order, 2026-12-05: every sgd/Mul of a momentum slot ran before the first convolution) and the
 *   variable's update, run as soon as its gradient exists, consumes it. Every variable's product is live
 *   through the forward and each until its update. Three Dense layers (16.8, 33.6, 8.2 MB) under SGD at batch
 *   4 peaked 85.1 MB above their persistent state, 84.1 with this rule, 92.1 with every gradient and one
 *   temporary at a step after backward; two (mlp2) 34.7-34.9, 33.6-33.7 with it, 41.8 before ("not steady"
 *   in docs/COSTS.md's first table was this); sixteen 3×3 convolutions with batch norms (16×16, 64-128
 *   channels, batch 1 / 4 / 16) −7.7 / −6.6 / −5.7 % of the peak before, −0.7 / +3.4 / −0.2 % now
 *   (docs/COSTS.md, "SGD's momentum products and the executor's order").
 * - Bias-less convolutions' filter gradients after the backward (tf_weight_grad_late).
 * - Adam's step in backward (adam_update_in_backward): the executor runs a variable's Adam update as soon as
 *   its gradient exists and frees it, so its temporary meets that gradient alone. Dense 1024 → 1024 → 1024
 *   → 8192 (4.2, 4.2, 33.6 MB) peaked 67.3-67.8 MB above its persistent state under Adam (the 33.6 MB
 *   gradient and one temporary) and 75.8 under SGD (all gradients and one); vgg16's Adam rows 134-136 MB
 *   (fc2's 67.1 twice) where holding every gradient said 218. Not steady on small models (a three-Dense
 *   model's Adam ranged 67-117 MB between batches and processes: docs/COSTS.md, "Adam's step in backward").
 * - What a gradient reads (tf_saved): average pooling and a global mean only their input's shape, max
 *   pooling its input and output. Conv2D 16 → 64 on 32×32 then GlobalAveragePooling2D grew by 262 KB per
 *   sample between batch 4 and 16, one [32, 32, 64] map; with the pool's input kept, 524.
 * - Element-wise gradients in place (tf_grad_pass): ReluGrad and SigmoidGrad overwrite the output's
 *   gradient: the same convolution with a ReLU or a sigmoid grew by 525 KB per sample, two maps, not three;
 *   so do element-wise ops and a product's first operand (GELU's seven ops: four maps measured, five
 *   simulated, six without).
 * - Convolutions: TensorFlow's oneDNN backward holds no blocked-layout copy of the output's gradient as
 *   PyTorch's does (with one, the first row above would have been 786): bwd_workspace 0.
 * - Batch norm: Keras 3 runs it unfused; with the rules above, Conv2D + BatchNormalization grew by 1,048 KB
 *   per sample, four maps, what one buffer beside the input's gradient (PyTorch's count) gives:
 *   bn_backward_buffers = 1.
 * With these, 23 of the 40 configurations' transient memory (peak less persistent state) is within 5 % of
 * the measurement (with PyTorch's rules 5); the rest are GELU (+24 %), the models below and mlp2 (two weights, whose step
 * peak moved between processes: 87.0 and 95.4 MB at batch 16). Measured and NOT encoded yet (no hook in memory.c): grappler's
 * remapper fuses a residual Add into the preceding convolution, in place (two convolutions and an Add
 * grew by one map per sample, three simulated); the loss's transient buffers (cross-entropy's and MSE's are
 * PyTorch's counts, not confirmed).
 * - Recurrent layers (rnn.bwd_parallel_iterations): Keras 3's tf.while_loop runs up to 32 backward iterations
 *   at once, each holding its partial gradients of the input and recurrent kernels: a GRU(512) over 32 steps
 *   held 108.5 MB of transient memory (32 iterations' 113.2), a GRU(128) 10.2 (9.4) and no more over 128
 *   steps. Not steady (between a few iterations' worth and all 32 between batches and processes), never above
 *   that bound in 34 configurations; the simulation holds the bound. PyTorch's other recurrent costs kept.
 * - XLA's grouped convolutions (tf_xla_dense_filter, held at the end of the forward), DepthwiseConv2D beyond
 *   3×3 (TF_DW_FILTER_COPIES, in tf_saved) and shapes seen once (tf_distinct_bytes): below.
 * - MSE keeps two more output-sized tensors between steps (tf_mse_bytes).
 * - The traced step's state between steps (tf_state_bytes, counted with the buffers): 1.5-3.5 MB on the
 *   single-layer models (7.5 MB with the LSTM), 68-330 MB on the zoo's CNNs with many layers; measured on
 *   stacks of identical layers, it is 259 KB per trainable variable under SGD (509 under Adam), a measured
 *   amount per layer kind and 1.13 MB per model (below). It took the dataset's memory MRE from 46 % to 12 %.
 *
 * Time: not measured on TensorFlow yet. The kernel choice, fixed costs, activation arithmetic and time
 * terms below are PyTorch 1.13's functions by reference (runtime_torch_cpu.c), used as the *form* of the
 * analytic base only: the predictor fits this runtime's rates on its own rows, under its own hardware ids
 * ("tf-2.21.0/cpu1", model.c ab_hw_key), and a bundle without rows of it refuses it. Two differences are
 * TensorFlow's by construction and encoded: with oneDNN on, TensorFlow runs every convolution through oneDNN
 * (_MklConv2D), so none takes PyTorch's im2col path (slow_path 0); and it runs each exported op as its own
 * kernel except grappler's remapper fusions, none of PyTorch's decomposed-operator patterns (mark_fused marks
 * nothing). Keras 3 runs a grouped (non-depthwise) convolution through XLA on the CPU (a nested
 * tf.function(jit_compile=True)); not priced apart.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "graph.h"
#include "runtime.h"

/* The kernel choice of a convolution on TensorFlow: oneDNN always (no im2col path), with its channel blocks
 * and depthwise rates as oneDNN has them under PyTorch (not measured under TensorFlow), and no transient
 * copies in backward (measured: see above). */
static void tf_conv_kernel(const ab_conv_desc *cv, ab_cost *k)
{
	ab_torch_conv_kernel(cv, k);
	k->dense_groups = 0; /* Keras 3 runs grouped convolutions through XLA (tf_grouped_kind) */
	k->group_weight = 0;
	k->slow_path = 0;
	k->bwd_workspace = 0;
}

/* Which Keras layer a grouped ONNX Conv was: the kernel variable's layout says it (collector/tf_export.py writes
 * the variables as they are): a Conv2D with groups keeps [kh, kw, C_in / groups, C_out] and Keras 3 runs it
 * through XLA (tf_xla_dense_filter), a DepthwiseConv2D [kh, kw, C_in, multiplier] and TensorFlow's own kernel
 * (tf_saved). */
enum { TF_GROUPED_NONE, TF_GROUPED_XLA, TF_GROUPED_DEPTHWISE };

static int tf_param_root(const abacus_graph *g, int t, int depth)
{
	if (t < 0 || depth > 8)
		return -1;
	if (g->tensors[t].is_param)
		return t;
	int p = g->tensors[t].producer;
	return p >= 0 && g->nodes[p].n_in > 0 ? tf_param_root(g, g->nodes[p].in[0], depth + 1) : -1;
}

static int tf_grouped_kind(const abacus_graph *g, const ab_shape *shapes, const ab_node *n)
{
	if (strcmp(n->op, "Conv") || n->n_in < 2 || n->in[1] < 0)
		return TF_GROUPED_NONE;
	int64_t group = ab_attr_int(n, "group", 1);
	int p = tf_param_root(g, n->in[1], 0);
	if (group < 2 || p < 0)
		return TF_GROUPED_NONE;
	const ab_shape *kv = &shapes[p], *w = &shapes[n->in[1]]; /* Keras's kernel; ONNX's [C_out, C_in / g, kh, kw] */
	if (!kv->known || !w->known || kv->rank != 4 || w->rank != 4)
		return TF_GROUPED_NONE;
	if (kv->dims[3] == w->dims[0] && kv->dims[2] == w->dims[1])
		return TF_GROUPED_XLA;
	if (w->dims[1] == 1 && kv->dims[2] == group && kv->dims[0] == w->dims[2] && kv->dims[1] == w->dims[3])
		return TF_GROUPED_DEPTHWISE;
	return TF_GROUPED_NONE;
}

/* A DepthwiseConv2D whose kernel is not 3×3 holds 256 copies of its filter in its backward. Measured 2026-12-05
 * with scripts/tf_memory_rules.py (models dwstackN_K_C_HW: a 1×1 Conv2D to C channels on an HW×HW map, then N
 * DepthwiseConv2D K×K, each with BatchNormalization and ReLU, GlobalAveragePooling2D and Dense(10); batch 1
 * and 4, SGD and Adam), transient memory beyond the simulation's: 14.5-14.9 MB with K 5 and 576 channels
 * whatever the map (1×1, 4×4), the stride (1, 2), the batch, the optimizer and N (1, 2, 4, 8: the largest
 * layer's, not a sum), 28.8-29.0 with K 7, 2.5 and 4.9-5.0 with K 5 and 96 and 192 channels: 256.0-257 times
 * the filter (576 · 25 · 4 = 57,600 bytes; 576 · 49 · 4 = 112,896); with K 3 0.1-0.15 (nothing; TensorFlow's
 * 3×3 depthwise gradients have their own kernels). Not separated further (which kernel holds them). */
#define TF_DW_FILTER_COPIES 256

/* What TensorFlow's gradient functions read, where the op table (PyTorch's autograd) says otherwise:
 * - average pooling and a global mean need only the input's shape (AvgPoolGrad, Mean's gradient), not the
 *   input: Conv2D 16 → 64 on 32×32 then GlobalAveragePooling2D grew by 262 KB per sample (one [32, 32, 64]
 *   map, the convolution's output or its gradient), the simulation with the input kept by 524; with an
 *   AveragePooling2D(2) before it 328 against 590;
 * - max pooling's gradient (MaxPoolGrad(orig_input, orig_output, grad)) reads its input and its output, not
 *   int64 indices. */
static void tf_saved(const ab_ctx *c, const ab_opdef *def, ab_cost *k)
{
	/* EluGrad and SeluGrad read the forward's output (nn_grad.py), where PyTorch keeps the input. */
	if (def->act == AB_ACT_ELU) {
		k->in_mask = 0;
		k->out_mask = 1;
		return;
	}
	if (tf_grouped_kind(c->g, c->shapes, c->n) == TF_GROUPED_DEPTHWISE) {
		const ab_shape *w = &c->shapes[c->n->in[1]];
		if ((w->dims[2] != 3 || w->dims[3] != 3) && c->rg[c->n->in[1]] && w->numel <= INT64_MAX / 1024)
			k->bwd_workspace = TF_DW_FILTER_COPIES * 4 * w->numel;
		return;
	}
	if (def->cat != ABACUS_CAT_POOL)
		return;
	if (def->flags & AB_OP_ARGMAX) {
		k->in_mask = 1;
		k->out_mask = 1;
		k->extra_bytes = 0;
	} else {
		k->in_mask = 0;
	}
}

/* TensorFlow's element-wise kernels, gradients included (ReluGrad, SigmoidGrad, the Mul of a product's
 * gradient, ...), write into an input's buffer when they are its last reader (forward_input_or_allocate_output):
 * an activation's or an element-wise op's input gradient takes over the output's gradient buffer, and so does
 * a product's first operand's (the second's is a tensor of its own). Conv2D 16 → 64 on 32×32 with a ReLU or
 * a sigmoid, then GlobalAveragePooling2D, grew by 525 KB per sample, two [32, 32, 64] maps (the activation's
 * saved output and one gradient), where a fresh input gradient made three (786); with TensorFlow's exact
 * GELU (seven element-wise ops) 1,048, four maps, where this rule says five and fresh gradients six. */
static unsigned tf_grad_pass(const ab_opdef *def)
{
	if (!def)
		return 0;
	/* TensorFlow's concat gradient slices its output's gradient into tensors of their own. */
	if (def->flags & AB_OP_NARROW_GRAD)
		return 0;
	switch (def->cat) {
	case ABACUS_CAT_RELU:
	case ABACUS_CAT_ACT:
	case ABACUS_CAT_ELTWISE:
	case ABACUS_CAT_MUL:
		return def->grad_pass | 1u;
	default:
		return def->grad_pass;
	}
}

/* Grappler's remapper fuses Conv2D + BiasAdd (+ Add) (+ ReLU) and MatMul + BiasAdd into one oneDNN
 * kernel; none of PyTorch's decomposed-operator kernels exist here. Not marked yet (see above). */
static void tf_mark_fused(abacus_analysis *a)
{
	(void)a;
}

/* The traced step's state between steps (docs/COSTS.md, "State per op"). Every configuration keeps, beyond
 * its variables, its optimizer's slots and its inputs, what tracing the step left alive: the function's graph
 * (forward, gradients and the optimizer's per-variable updates), its instantiated and grappler-rewritten
 * copies and the executor's kernels. Measured with stacks of N identical Keras layers on an 8×8×8 input
 * (scripts/tf_memory_rules.py, models stack_KIND_N, N = 1 to 16, batch 2; persistent bytes per added layer;
 * KB = 1,000 bytes; the slopes are within 0.1 MB over 16 layers): it does not depend on the batch nor on the
 * variables' sizes (a 3×3 convolution of 8 channels costs what VGG's do per variable), but on how many
 * variables and layers there are:
 * - per trainable variable, 259 KB under SGD with momentum and 509 KB under Adam: a Conv2D with a bias grew
 *   by 531.9 KB a layer and one without by 272.8, so a bias (its variable, its BiasAdd and gradient, its
 *   update) costs 259; Adam added 252, 253, 246 and 249 KB per variable to stacks of convolutions,
 *   depthwise convolutions, Dense and BatchNormalization layers over SGD (its two slots, more update ops);
 * - per layer beyond its variables (tf_layer_state): what each layer kind grew by, less 259 KB per
 *   variable;
 * - a fixed 1.13 MB per model: the step's own graph (loss, tape, the optimizer's iteration counter), from
 *   the stacks with no layer added (a 1×1 Conv2D and a Dense(10): their 4 variables and 3 layers less). */
#define TF_STATE_FIXED 1130000
#define TF_STATE_VAR_SGD 259000
#define TF_STATE_VAR_ADAM 509000

/* Layer i's part of the traced step beyond its variables, in bytes. The ONNX layer stands for the Keras layer
 * it was exported from; measured (per added layer, less its variables): BatchNormalization 570 KB (Keras 3's
 * training-mode batch norm is some 60 TensorFlow ops: moments, the moving averages' updates, their
 * gradients; 568 under Adam), Dropout 313 (its random-number ops), LSTM 3,660 and GRU 4,110 (SGD and Adam
 * averaged: the while loop's body, its gradient body and their captures; 64 steps, independent of the
 * length), ZeroPadding2D 85, Concatenate 77, the swish activation 173 (a Sigmoid and a Mul in the graph:
 * 142 + 31), MaxPooling2D 35, Multiply 31, ReLU 21 and ReLU6 22, Add 6, a convolution 14 and a depthwise
 * one 17 beyond their variables, Dense 0 (its MatMul and the bias's Add: −14 ± 60). LayerNormalization
 * grew by 416 KB beyond its variables, exported as 3 Add, 4 Mul, Sub, Neg, Reciprocal, Sqrt and 2 ReduceMean
 * layers: with the Adds and Muls at their own kinds' values, 54 KB for each of the other five. Layout layers
 * (the exporter's Transposes and Reshapes, most of which Keras never runs) count nothing; kinds not measured
 * count a Multiply's 31. */
#define TF_STATE_BN 570000

/* Keras 3 runs a grouped Conv2D (ConvNeXt's 7×7 "depthwise" convolutions, which are Conv2D(groups = C), not
 * DepthwiseConv2D) as a nested tf.function(jit_compile=True): XLA on the CPU, which has no grouped kernel and
 * rewrites the convolution (its gradients) as a dense one over a block-diagonal filter. Measured 2026-12-05 with
 * scripts/tf_memory_rules.py (models gconv_N_C_HW_G: N such 7×7 convolutions of C channels in G groups on an
 * HW×HW map, then GlobalAveragePooling2D and Dense(10); cnx_*: ConvNeXt's last stage, 1×1×768):
 * - one of 768 channels in 768 groups left 232.3-232.6 MB of transient memory beyond the simulation's at
 *   batch 1 and 4, on a 1×1 and an 8×8 map, under SGD and Adam: two dense [7, 7, 768, 768] filters
 *   (2 · 115.6 MB = 231.2); 96 channels in 96 groups 3.8 (2 · 1.8 = 3.6), in 2 groups 3.7 (the same dense
 *   filter). With several such convolutions only the largest counts (three of 768: 232.0-234.6 MB);
 * - it is held before any variable's update has run: three ConvNeXt blocks of 768 (56.6 MB of weights) peaked
 *   289.7 MB above their persistent state under SGD (231.2 + 56.6 + 1.9: every variable's momentum product,
 *   step.sgd_momentum_early, which the profiler shows the Dense layers' updates consuming in their own
 *   backward, before the grouped convolutions'), also with the grouped convolution after the Dense layers
 *   (288.9), and 232.5 under Adam, which makes no product. The simulation holds the pair at the end of the
 *   forward (runtime.h forward_end_bytes), with every product and the forward's saved tensors: convnext_tiny's
 *   Adam rows at 32×32 measured 237.7 and 248.8 MB at batch 1 and 4 against 231.2 when held at the end of the
 *   backward, 235.3 and 247.7 now;
 * - the compiled function stays between steps: 790 KB of persistent state per such convolution beyond a
 *   grouped convolution's 17 KB (12 against 1 of 96 channels: 775 KB each at batch 1, 800 at batch 4).
 * The ONNX Conv does not say which Keras layer it was; the kernel's layout does: a Conv2D's variable is
 * [kh, kw, C_in / groups, C_out], a DepthwiseConv2D's [kh, kw, C_in, multiplier] (no XLA: tf_grouped_kind).
 * Returns the bytes of layer i's dense filter (kh · kw · C_in · C_out floats) if it is such a convolution,
 * else 0. */
static int64_t tf_xla_dense_filter(const abacus_analysis *a, size_t i)
{
	const ab_node *n = &a->g->nodes[a->layer_node[i]];
	if (a->layers[i].category != ABACUS_CAT_GROUPCONV || tf_grouped_kind(a->g, a->shapes, n) != TF_GROUPED_XLA)
		return 0;
	const ab_shape *w = &a->shapes[n->in[1]]; /* ONNX's [C_out, C_in / groups, kh, kw] */
	int64_t b; /* the weight's bytes times its groups; an absurd graph's that overflow count as none */
	if (ab_mul(4 * w->numel, ab_attr_int(n, "group", 1), &b) || b < 0)
		return 0;
	return b;
}

/* The end of the forward (runtime.h forward_end_bytes): two dense filters of the largest XLA grouped convolution. */
static int64_t tf_forward_end_bytes(const abacus_analysis *a)
{
	int64_t max = 0;
	for (size_t i = 0; i < a->n_layers; i++) {
		int64_t b = tf_xla_dense_filter(a, i);
		max = b > max ? b : max;
	}
	return max > INT64_MAX / 2 ? INT64_MAX : 2 * max; /* (saturated: memory.c reports the overflow) */
}

/* TensorFlow's executor (one inter-op thread) runs a ready node inline only if it is the last expensive one its
 * producer made ready; the others go to the thread pool's queue, which that thread reaches once the inline chain
 * ends, last queued first (executor.cc ScheduleReady). A bias-less convolution's gradients, Conv2DBackpropInput
 * and Conv2DBackpropFilter (DepthwiseConv2dNative's the same), are both made ready by its output's gradient, and
 * the input's gradient is the one run inline: the chain of input gradients runs down the network, and the filter
 * gradients, each with its variable's update behind it, run after it, the first layer's first. Until then the
 * layer's input (the filter gradient reads it), its output's gradient and, under SGD, its momentum product
 * (sgd_momentum_early) stay live. With a bias the oneDNN rewrite fuses the bias's gradient into the filter's
 * (_MklNativeConv2DBackpropFilterWithBias), which runs inline, in the layer's backward. Measured 2026-12-05 with
 * the TensorFlow profiler's kernel order (SGD; tf_memory_rules.py's environment): of the filter gradients of
 * bias-less convolutions that also make an input gradient, DenseNet121 (32×32) ran 110 of 119 (batch 1) and 111
 * (batch 4) after the last input gradient, MobileNetV2 39 of 51, EfficientNetV2B0 34 of 58 (16 more after their
 * own input gradient), MobileNetV3Small 7 of 33 (20 more after their own); of those with a bias, ResNet50 1 of
 * 52 (1 more after its own), EfficientNetV2B0's squeeze-excite convolutions 0 of 32, MobileNetV3Small's 1 of 20. Not steady: four 3×3
 * convolutions of 64 channels on 16×16 (no bias) left 3 of 3 for last at batch 1 and 4, none at 16. Their
 * transient memory (measured; simulated with this rule, without): batch 4 3.08 MB (2.67, 2.33), batch 16 6.20
 * (9.75, 7.05); sixteen such convolutions at batch 16 36.3 (34.9, 21.4); over 31 configurations of such stacks
 * (4 or 16 layers, 64 channels or 68-128, with and without batch norm, batch 1-16, SGD and Adam) the peak's MRE
 * went from 6.87 to 6.77 % (9.57 % before sgd_momentum_early), over the dataset's TensorFlow rows from 3.23 to
 * 3.21 %. The 5×5 depthwise filter copies (TF_DW_FILTER_COPIES) belong to the filter gradient (a
 * DepthwiseConv2D on the graph input, which makes no input gradient, held them: 14.99 MB measured, 14.90
 * simulated; a frozen one none), but stay at the layer's backward in the simulation: charged with the late
 * filter gradient the dataset's TensorFlow MRE went to 3.66 %. XLA's grouped convolutions (with a bias, in a
 * function of their own) are never late. */
static int tf_weight_grad_late(const abacus_analysis *a, size_t L)
{
	const ab_node *n = &a->g->nodes[a->layer_node[L]];
	int cat = a->layers[L].category;
	if (strcmp(n->op, "Conv") || (cat != ABACUS_CAT_CONV && cat != ABACUS_CAT_GROUPCONV))
		return 0;
	if (n->n_in >= 3 && n->in[2] >= 0)
		return 0; /* a bias: the fused filter gradient runs inline */
	if (cat == ABACUS_CAT_GROUPCONV && tf_grouped_kind(a->g, a->shapes, n) == TF_GROUPED_XLA)
		return 0;
	return n->n_in > 0 && n->in[0] >= 0 && a->rg[n->in[0]] && !a->g->tensors[n->in[0]].is_param;
}

/* t is a buffer (a moving statistic), or a few ops made it from one (the variance reshaped, plus ε). */
static int tf_from_buffer(const abacus_graph *g, int t, int depth)
{
	if (t < 0 || depth > 4)
		return 0;
	if (g->tensors[t].is_buffer)
		return 1;
	int p = g->tensors[t].producer;
	if (p < 0)
		return 0;
	for (int j = 0; j < g->nodes[p].n_in; j++)
		if (tf_from_buffer(g, g->nodes[p].in[j], depth + 1))
			return 1;
	return 0;
}

static int64_t tf_layer_state(const abacus_analysis *a, size_t i)
{
	const abacus_graph *g = a->g;
	const ab_node *n = &g->nodes[a->layer_node[i]];
	/* What the exporter computes from weights and statistics alone (the LSTM bias's zero half, a batch norm's
	 * scale) is part of its Keras layer's ops, counted with the layer. A batch norm the exporter could not
	 * fuse (no scale or centre, not 4-D: collector/tf_export.py) is such a chain, the variance's Sqrt its
	 * mark, and the Mul and Add that apply it: it counts a batch norm's 570 KB less those two's 37. */
	if (n->n_out > 0 && n->out[0] >= 0 && a->wl[n->out[0]])
		return strcmp(n->op, "Sqrt") == 0 && n->n_in > 0 && tf_from_buffer(g, n->in[0], 0) ? TF_STATE_BN - 37000 : 0;
	switch (a->layers[i].category) {
	case ABACUS_CAT_LAYOUT:
		return 0;
	case ABACUS_CAT_BATCHNORM:
		return TF_STATE_BN;
	case ABACUS_CAT_DROPOUT:
		return 313000;
	case ABACUS_CAT_RECURRENT: {
		/* A bidirectional layer is two Keras layers, each with its loop. Plain RNN: not measured, an LSTM's. */
		const char *dir = ab_attr_str(n, "direction", "forward");
		int64_t one = strcmp(n->op, "GRU") == 0 ? 4110000 : 3660000;
		return strcmp(dir, "bidirectional") == 0 ? 2 * one : one;
	}
	case ABACUS_CAT_PAD:
		return 85000;
	case ABACUS_CAT_CONCAT:
		return 77000;
	case ABACUS_CAT_ACT:
		return 142000;
	case ABACUS_CAT_POOL:
		return 35000;
	case ABACUS_CAT_RELU:
		return 21000;
	case ABACUS_CAT_ADD:
		return 6000;
	case ABACUS_CAT_CONV:
		return 14000;
	case ABACUS_CAT_GROUPCONV: /* an XLA one keeps its compiled function (tf_xla_dense_filter) */
		return tf_xla_dense_filter(a, i) ? 17000 + 790000 : 17000;
	case ABACUS_CAT_MATMUL:
		return 0;
	case ABACUS_CAT_ELTWISE:
	case ABACUS_CAT_REDUCE:
		return 54000;
	default:
		return 31000;
	}
}

/* What a layer of a shape not seen before in the graph adds to the traced step's state, beyond tf_layer_state
 * (measured on stacks of identical layers, which share their shapes). Measured 2026-12-05 with
 * scripts/tf_memory_rules.py (models same_KIND_N and distinct_KIND_N: N 1×1 Conv2D layers without bias on an
 * 8×8 map, all of 8 channels or of 8 + k for the k-th, alone or each followed by a layer of KIND; batch 2, SGD,
 * N = 4 and 16): per added layer, the distinct stacks grew by more than the identical ones, beyond the
 * simulation's difference of weights: 35-50 KB (43 on average) with the convolution alone or followed by a
 * ReLU, a swish, x·x, x + x, x concatenated with itself or an average pooling, so those kinds add nothing
 * measurable and a convolution 43 KB; with a BatchNormalization 126 (83 for it), a BatchNormalization(scale =
 * False), which the exporter leaves as a chain (tf_from_buffer), 159 (116), a 3×3 DepthwiseConv2D before it
 * 83 (40). TensorFlow and oneDNN cache kernels per shape (oneDNN's primitives for the forward and both
 * gradients), and grappler merges the identical shape constants of identical layers; which of the two it is
 * was not separated. The unfused batch norm is priced at the product that applies its scale to the
 * activation (Mul by a weight-like tensor made from its moving variance), whose shapes are the map's. */
static int64_t tf_distinct_cost(const abacus_analysis *a, size_t i)
{
	const ab_node *n = &a->g->nodes[a->layer_node[i]];
	switch (a->layers[i].category) {
	case ABACUS_CAT_CONV:
		return 43000;
	case ABACUS_CAT_BATCHNORM:
		return 83000;
	case ABACUS_CAT_GROUPCONV:
		return 40000;
	case ABACUS_CAT_MUL:
		if (n->n_out < 1 || n->out[0] < 0 || a->wl[n->out[0]])
			return 0;
		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] >= 0 && a->wl[n->in[j]] && tf_from_buffer(a->g, n->in[j], 0))
				return 116000;
		return 0;
	default:
		return 0;
	}
}

/* A layer's shape signature: its op, its inputs' and its first output's shapes. */
static uint64_t tf_shape_key(const abacus_analysis *a, size_t i)
{
	const ab_node *n = &a->g->nodes[a->layer_node[i]];
	uint64_t h = 1469598103934665603ull;
	for (const char *c = n->op; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	for (int j = -1; j < n->n_in; j++) {
		int t = j < 0 ? (n->n_out > 0 ? n->out[0] : -1) : n->in[j];
		const ab_shape *sh = t >= 0 ? &a->shapes[t] : NULL;
		h = (h ^ (uint64_t)(sh ? sh->rank + 1 : 0)) * 1099511628211ull;
		for (int d = 0; sh && d < sh->rank; d++)
			h = (h ^ (uint64_t)sh->dims[d]) * 1099511628211ull;
	}
	return h;
}

static int tf_cmp_key(const void *x, const void *y)
{
	uint64_t u = *(const uint64_t *)x, v = *(const uint64_t *)y;
	return u < v ? -1 : u > v;
}

/* The first layer of each shape signature among the kinds tf_distinct_cost prices, in bytes. The cost is a
 * function of the category, and the category of the op and shapes the key hashes, so one key is one cost. */
static int64_t tf_distinct_bytes(const abacus_analysis *a)
{
	size_t n = 0;
	uint64_t *k = ab_malloc((a->n_layers + 1) * 2 * sizeof *k);
	if (!k)
		return 0;
	for (size_t i = 0; i < a->n_layers; i++) {
		int64_t c = tf_distinct_cost(a, i);
		if (c) {
			k[2 * n] = tf_shape_key(a, i);
			k[2 * n + 1] = (uint64_t)c;
			n++;
		}
	}
	qsort(k, n, 2 * sizeof *k, tf_cmp_key);
	int64_t b = 0;
	for (size_t j = 0; j < n; j++)
		if (j == 0 || k[2 * j] != k[2 * j - 2])
			b += (int64_t)k[2 * j + 1];
	ab_free(k);
	return b;
}

/* MSE (the worker's loss for an output that is not [B, classes]) keeps two output-sized tensors between steps
 * beyond the target. Measured (docs/COSTS.md, "TensorFlow 2.21": logits_mse, Dense 64 → 32768 reshaped to
 * [B, 128, 256], against logits, the same Dense under cross-entropy): the persistent state was larger by 6.28
 * MB at batch 16 under SGD and Adam and by 25.26-25.28 at 64, three outputs of 2.10 and 8.39 MB each, of which
 * the simulation had one (the target): 2 more. lstm_lm's rows ([B, 32, 8192], 1.05 MB a sample) grew by 6.4 MB
 * more than the simulation from batch 1 to 4: two outputs of the 3 samples. */
static int64_t tf_mse_bytes(const abacus_analysis *a)
{
	const ab_shape *y = &a->shapes[a->g->outputs[0]];
	int sz = ab_dtype_size(y->dtype);
	if (!y->known || y->rank == 2 || y->numel > INT64_MAX / 8)
		return 0;
	return 2 * y->numel * (sz ? sz : 4);
}

static int64_t tf_state_bytes(const abacus_analysis *a)
{
	int64_t per_var = a->cfg.optimizer == ABACUS_OPT_ADAM ? TF_STATE_VAR_ADAM : TF_STATE_VAR_SGD;
	int64_t b = TF_STATE_FIXED + per_var * (int64_t)a->param_tensors + tf_distinct_bytes(a) + tf_mse_bytes(a);
	for (size_t i = 0; i < a->n_layers; i++)
		b += tf_layer_state(a, i);
	return b;
}

const ab_runtime ab_runtime_tf_2_21_cpu = {
	.name = "tf-2.21.0",
	/* Cross-entropy and MSE around the loss: PyTorch's counts until measured otherwise (the logits
	 * measurements of docs/COSTS.md are within 8 % of the simulation's slope per sample with them). SGD's
	 * temporary is its momentum product (sgd_momentum_early), which replaces the step's sgd_temporaries. */
	.step = { .ce_backward_buffers = 1, .mse_forward_buffers = 1, .mse_keeps_error = 1,
	          .adam_temporaries = 1, .sgd_temporaries = 1, .adam_update_in_backward = 1,
	          .sgd_momentum_early = 1 },
	.bn_backward_buffers = 1,
	/* Unvectorised small batch-norm maps are PyTorch's kernel's; TensorFlow's unfused ops have none. */
	.bn_scalar_map_min = 0,
	.bn_scalar_map_max = -1,
	/* PyTorch's recurrent costs but for backward through time: Keras 3's tf.while_loop, 32 parallel
	 * iterations (see the top of this file; docs/COSTS.md, "Recurrent layers' while loop: iterations in
	 * flight"). */
	.rnn = { AB_TORCH_RNN_COSTS_FIELDS, .bwd_parallel_iterations = 32 },
	.conv_kernel = tf_conv_kernel,
	.saved = tf_saved,
	.grad_pass = tf_grad_pass,
	.dispatch_us = ab_torch_dispatch_us, /* (.bmm_item_us: TensorFlow's BatchMatMul per matrix not measured: 0) */
	/* PyTorch's activations and scans; not its pooling classes: TensorFlow pools through oneDNN's kernels on
	 * blocked maps, not PyTorch's window-by-window NCHW loop (not measured: bytes alone price them). */
	.act_ns = { AB_TORCH_ACT_ARITH },
	.mark_fused = tf_mark_fused,
	.state_bytes = tf_state_bytes,
	.forward_end_bytes = tf_forward_end_bytes,
	.weight_grad_late = tf_weight_grad_late,
	.time_terms = ab_torch_time_terms,
	.conv_depthwise = ab_torch_conv_depthwise,
	.layer_time = ab_torch_layer_time,
};
