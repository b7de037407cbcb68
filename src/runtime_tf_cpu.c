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
 * grew by one map per sample, three simulated); an LSTM run as a while loop (12.4-12.8 MB for H 256, sequence 32, at
 * batch 4 and 16, against 4.9-8.8 simulated with PyTorch's recurrent rules, kept here: AB_TORCH_RNN_COSTS;
 * 43.8 MB for the same configuration in another process: not steady enough to derive a rule from);
 * the loss (cross-entropy's and MSE's buffers are PyTorch's counts, not confirmed: MSE keeps two more
 * output-sized tensors between steps).
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
	k->slow_path = 0;
	k->bwd_workspace = 0;
}

/* What TensorFlow's gradient functions read, where the op table (PyTorch's autograd) says otherwise:
 * - average pooling and a global mean need only the input's shape (AvgPoolGrad, Mean's gradient), not the
 *   input: Conv2D 16 → 64 on 32×32 then GlobalAveragePooling2D grew by 262 KB per sample (one [32, 32, 64]
 *   map, the convolution's output or its gradient), the simulation with the input kept by 524; with an
 *   AveragePooling2D(2) before it 328 against 590;
 * - max pooling's gradient (MaxPoolGrad(orig_input, orig_output, grad)) reads its input and its output, not
 *   int64 indices. */
static void tf_saved(const ab_ctx *c, const ab_opdef *def, ab_cost *k)
{
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
	case ABACUS_CAT_GROUPCONV:
		return 17000;
	case ABACUS_CAT_MATMUL:
		return 0;
	case ABACUS_CAT_ELTWISE:
	case ABACUS_CAT_REDUCE:
		return 54000;
	default:
		return 31000;
	}
}

static int64_t tf_state_bytes(const abacus_analysis *a)
{
	int64_t per_var = a->cfg.optimizer == ABACUS_OPT_ADAM ? TF_STATE_VAR_ADAM : TF_STATE_VAR_SGD;
	int64_t b = TF_STATE_FIXED + per_var * (int64_t)a->param_tensors;
	for (size_t i = 0; i < a->n_layers; i++)
		b += tf_layer_state(a, i);
	return b;
}

const ab_runtime ab_runtime_tf_2_21_cpu = {
	.name = "tf-2.21.0",
	/* Cross-entropy and MSE around the loss: PyTorch's counts until measured otherwise (the logits
	 * measurements of docs/COSTS.md are within 8 % of the simulation's slope per sample with them). */
	.step = { .ce_backward_buffers = 1, .mse_forward_buffers = 1, .mse_keeps_error = 1,
	          .adam_temporaries = 1, .sgd_temporaries = 1, .adam_update_in_backward = 1 },
	.bn_backward_buffers = 1,
	/* Unvectorised small batch-norm maps are PyTorch's kernel's; TensorFlow's unfused ops have none. */
	.bn_scalar_map_min = 0,
	.bn_scalar_map_max = -1,
	.rnn = AB_TORCH_RNN_COSTS,
	.conv_kernel = tf_conv_kernel,
	.saved = tf_saved,
	.grad_pass = tf_grad_pass,
	.dispatch_us = ab_torch_dispatch_us,
	.act_ns = AB_TORCH_ARITH_NS,
	.mark_fused = tf_mark_fused,
	.state_bytes = tf_state_bytes,
	.time_terms = ab_torch_time_terms,
	.layer_time = ab_torch_layer_time,
};
