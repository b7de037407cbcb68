/*
 * runtime_torch2_cpu.c — PyTorch 2.15.0 on a CPU: PyPI's wheel (oneDNN 3.13, MKL linked in, CPU capability
 * AVX512 here), run eagerly by the same collector and step as 1.13 (docs/PROTOCOL.md, the runtime
 * torch-2.15.0), against torch 1.13's graphs.
 *
 * What is known so far, measured on amd-f25m17 (one thread, 2026-12-05): the training step keeps the same
 * memory as 1.13's. The first eight configurations of its fingerprint (csp_mish and srresnet_small at 32×32,
 * batch 1 and 4, SGD and Adam) peaked within 0.02-0.3 % of 1.13's rows of the same configurations, and
 * resnet18 at 64×64, batch 2, SGD at 143,201,608 bytes against 143,183,904 (+0.01 %). Its optimizer steps are
 * per tensor as 1.13's (torch 2 defaults to the foreach kernels only for accelerator tensors). So the step's
 * buffers, recurrent costs and kernel choice are 1.13's (runtime_torch_cpu.c) until rows say otherwise; its
 * speed is not: those eight ran 0.75-1.10× 1.13's time, so the predictor fits this runtime's rates apart
 * (its hardware ids are "torch-2.15.0/cpu1", ...: model.c).
 *
 * One difference found since (2026-12-05 13:15, the allocator tracker in the protocol's environment, three
 * steps, the backward's peak above the live memory before it, in units of the weight W): a weight read by
 * two or three embedding lookups peaks at 2.0 W in 2.15 against 3.0 W in 1.13 (Embedding 8192 × 128), while
 * a Linear 1024 × 1024 applied two or three times peaks at 3.0 W in both: 2.15 adds an embedding's later
 * gradient into the earlier one in place (step.gather_grad_in_place). That is the networks whose encoder and
 * decoder share one embedding: lstm_seq2seq's and seq2seq_transformer's SGD rows peaked 4.1-4.8 MB (one
 * embedding) lower on 2.15 than on 1.13. Its LSTMs differ too (lstm_lm's SGD transient 1.7 → 7.3 MB at
 * batch 1, 5.1 → 17.6 at 4; the GRU and plain RNN networks the same as 1.13's). The reason (2026-12-06, the
 * allocator tracker with a per-op trace): 2.15 trains a CPU LSTM through oneDNN's RNN primitive, one
 * mkldnn_rnn_layer per layer and direction forward and one mkldnn_rnn_layer_backward back, where 1.13 runs a
 * dozen kernels a step; GRU and plain RNN still run step by step. What the fused kernel holds, fitted on 24
 * single-direction LSTMs (sequence 16 and 64, batch 1 and 8, input 32 and 128, H 32, 128 and 256; bytes,
 * s·b = steps × samples, M = max(H, input)): it keeps for backward, beyond its outputs, 38.7·s·b·H +
 * 23.6·s·b·M + 17 kB (oneDNN's workspace, sized by the larger of input and hidden width; within 10 %, mean
 * 2.4 %); its forward holds 16.4·s·b·H (the gates) + 16.3·H·(H + input) (its weights reordered) + 124 kB
 * more while it runs (within 2.2 %); its backward, beyond the gradients it returns, 16.5·s·b·H + 3.6·s·b·M +
 * 13.7·H·(H + input) + 22.6·H² + 20 kB (mean 18 %, at most 160 kB off). The gradients it returns are the
 * input's, W's, R's and the biases' and initial states', exactly (s·b·input + 4H·(H + input) + 8H + 2·b·H
 * floats). That replaces 1.13's per-step rule for LSTMs here (lstm_fused, ops_nn.c ab_cost_rnn), for time too:
 * one kernel per direction, its recurrent products priced as matrix-product FLOPs (leave-one-model-out on
 * this runtime's 873 rows 14.59 → 12.55 %, small_bilstm_tagger 164 → 6.3 %: README).
 *
 * Not priced (2026-12-07 evening, amd-f26m2, one thread): Adam's step on networks with large fully-connected
 * weights costs 2.15 about twice what it costs 1.13 (alexnet at 64×64, batch 1: its step 180-200 ms against
 * 91, SGD's 35-45 ms in both; in the family 25 machine's fingerprint rows Adam's extra time over SGD's is
 * 2.6-2.9 ns per parameter on alexnet and vgg16_bn in 2.15 against 1.1-1.2 in 1.13, and 1.0-1.5 in both on
 * most networks of 20 M parameters or more). The reason is 2.15's `sqrt` kernel
 * (the step's denominator, out of place): on the same 151 MB tensor, into a preallocated output, 7.5 ms in
 * 1.13 whatever the values, and in 2.15 14.4 ms on random values, 69 ms on zeros, 112 ms on 80 % zeros and
 * 448 ms on denormals. A weight whose inputs are zero in every step (a ReLU or dropout before it, an
 * embedding's rows never looked up) keeps exact zeros in Adam's second moment: alexnet's first classifier
 * weight had 80.5 % after five steps. How many zeros a weight keeps depends on the values a step sees, not on
 * the graph, and the networks it shows on were 87 of the 1,925 rows (their Adam rows 16 % off; halving that
 * would make the random split 11.17 → 10.81 %): left to the trees. Separately, an out-of-place result that
 * glibc cannot place in a freed block (posix_memalign's slack: the freed block is a few bytes short) lands on
 * pages never touched and faults them in, ~10 µs a 4 KiB page on these VMs (a 151 MB `sqrt` 370 ms instead of
 * 14): seen in isolated loops in both runtimes, never in a training step's steady state here (0 faults per
 * iteration over 8 iterations of alexnet in both).
 */
#include "runtime.h"

const ab_runtime ab_runtime_torch_2_15_cpu = {
	.name = "torch-2.15.0",
	.step = { AB_TORCH_STEP_MEMORY_FIELDS, .gather_grad_in_place = 1 },
	.bn_backward_buffers = 1,
	.bn_scalar_map_min = 2,
	.bn_scalar_map_max = 15,
	.rnn = { AB_TORCH_RNN_COSTS_FIELDS, .lstm_fused = 1, .fused_saved = { .sbh = 38.7, .sbm = 23.6, .c = 17194 },
	         .fused_fwd = { .sbh = 16.4, .hw = 16.3, .c = 123888 },
	         .fused_bwd = { .sbh = 16.5, .sbm = 3.6, .hw = 13.7, .hh = 22.6, .c = 19905 } },
	.conv_kernel = ab_torch_conv_kernel,
	.dispatch_us = ab_torch_dispatch_us,
	/* PyPI's wheel batches its products through MKL: per product-matrix 0.17 µs at [8, 8]×[8, 8], 0.31 at
	 * 16³ (its FLOPs), 0.69 at [160, 8]×[8, 1], 0.75 at [8, 8]×[8, 6] (measured as 1.13's, runtime_torch_cpu.c). */
	.bmm_item_us = { 0.5, 0.5 },
	.bmm_loop_mkn = 400,
	/* Its LayerNorm runs rows of 8 or more at one rate whatever their length (runtime.h AB_TORCH_LN_ARITH):
	 * only rows below 8 pay the tail, 60 ns more (5 and 7: 89 and 109 ns a row against 31-39). */
	.act_ns = { AB_TORCH_ACT_ARITH, AB_TORCH_POOL_ARITH, [AB_ACT_LN_ROW] = 30, [AB_ACT_LN_ROW_TAIL] = 60 },
	.ln_tail_below = 8,
	.mark_fused = ab_torch_mark_fused,
	.time_terms = ab_torch_time_terms,
	.conv_depthwise = ab_torch_conv_depthwise,
	.layer_time = ab_torch_layer_time,
};
