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
 * output-sized tensors between steps); and a fixed 1.5-3.5 MB per model (7.5 MB with the LSTM) that lives
 * between steps (the traced function, oneDNN's primitive cache), left to the learned correction as
 * PyTorch's bookkeeping is.
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
#include "analysis.h"
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

const ab_runtime ab_runtime_tf_2_21_cpu = {
	.name = "tf-2.21.0",
	/* Cross-entropy and MSE around the loss: PyTorch's counts until measured otherwise (the logits
	 * measurements of docs/COSTS.md are within 8 % of the simulation's slope per sample with them). */
	.step = { .ce_backward_buffers = 1, .mse_forward_buffers = 1, .mse_keeps_error = 1,
	          .adam_temporaries = 1, .sgd_temporaries = 1 },
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
	.time_terms = ab_torch_time_terms,
	.layer_time = ab_torch_layer_time,
};
