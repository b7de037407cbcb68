/*
 * test_memory_rules.c — what PyTorch 1.13's backward holds beyond the saved tensors, and which tensors
 * computed from weights are tensors of their own (docs/COSTS.md, "Memory of one training iteration"):
 * CumSum's reversed cumsum, broadcasting products, Einsum's copies, sums whose gradient is a view, GLU,
 * weight-derived kernels and the order they run in, and a second gradient of one activation. Every
 * number is worked out in the comment beside it (float32: 4 bytes an element).
 */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "runtime.h"
#include "tests.h"

abacus_analysis *t_analyze(tb_model *m, int64_t batch, abacus_graph **g, abacus_error *err);
abacus_analysis *t_analyze_cfg(tb_model *m, const abacus_config *cfg, abacus_graph **g, abacus_error *err);

/* The index of the first layer running `op`, or -1. */
static int layer_of(const abacus_analysis *a, const char *op)
{
	for (size_t L = 0; L < a->n_layers; L++)
		if (!strcmp(a->g->nodes[a->layer_node[L]].op, op))
			return (int)L;
	return -1;
}

#define ANALYZE_OR_RETURN(m, batch)                                                       \
	abacus_graph *g;                                                                      \
	abacus_error err;                                                                     \
	abacus_analysis *a = t_analyze((m), (batch), &g, &err);                               \
	if (!a) {                                                                             \
		fprintf(stderr, "  analysis failed: %s\n", err.msg);                              \
		t_failed_checks++;                                                                \
		return;                                                                           \
	}
#define FREE_ANALYSIS()        \
	abacus_analysis_free(a); \
	abacus_graph_free(g)

/* CumSum's backward is grad.flip().cumsum().flip(): two buffers of its output's size beside the
 * gradients. h = x·W is 2×8×32 floats (2,048 B) at batch 2: 4,096 B. A CumSum of the graph input needs
 * no gradient and holds nothing. */
void test_cumsum_backward_memory(void);
void test_cumsum_backward_memory(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 16));
	tb_weight(m, "w", D(16, 32));
	tb_ints(m, "ax", 1, (const int64_t[]){ 1 });
	tb_node(m, "CumSum", L("x", "ax"), L("cx"));
	tb_node(m, "MatMul", L("cx", "w"), L("h"));
	tb_node(m, "CumSum", L("h", "ax"), L("c"));
	tb_output(m, "c");
	ANALYZE_OR_RETURN(m, 2);
	CHECK(a->n_layers == 3);
	if (a->n_layers == 3) {
		CHECK_EQ_I64(a->costs[0].bwd_workspace, 0);
		CHECK_EQ_I64(a->costs[2].bwd_workspace, 2 * 2048);
	}
	FREE_ANALYSIS();
}

/* A product's backward makes each operand's gradient at the output's size; one smaller than the output
 * is summed down afterwards: a buffer of the output's size per such operand needing a gradient. h is
 * 2×4×16 (512 B) at batch 2, g a [16] weight: h·g and g·h hold 512 B alike; h / g holds three (the
 * divisor's gradient, -grad·(a/b)/b); h·h (no broadcast) and h·s (s a 1×1×16 graph input, which needs
 * no gradient) nothing. */
void test_broadcast_product_memory(void);
void test_broadcast_product_memory(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 4, 16));
	tb_weight(m, "w", D(16, 16));
	tb_weight(m, "g", D(16));
	tb_input(m, "s", D(1, 1, 16));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "Mul", L("h", "g"), L("p1"));
	tb_node(m, "Mul", L("g", "p1"), L("p2"));
	tb_node(m, "Div", L("p2", "g"), L("p3"));
	tb_node(m, "Mul", L("p3", "p3"), L("p4"));
	tb_node(m, "Mul", L("p4", "s"), L("y"));
	tb_output(m, "y");
	ANALYZE_OR_RETURN(m, 2);
	CHECK(a->n_layers == 6);
	if (a->n_layers == 6) {
		CHECK_EQ_I64(a->costs[1].bwd_workspace, 512);
		CHECK_EQ_I64(a->costs[2].bwd_workspace, 512);
		CHECK_EQ_I64(a->costs[3].bwd_workspace, 3 * 512);
		CHECK_EQ_I64(a->costs[4].bwd_workspace, 0);
		CHECK_EQ_I64(a->costs[5].bwd_workspace, 0);
	}
	FREE_ANALYSIS();
}

/* Einsum. "bi,bj->bij" sums nothing: a broadcasting product whose two factors (2×16 and 2×8 at batch 2)
 * are both summed down from the 2×16×8 output (1,024 B): 2,048 B. "bld,edh->bleh" is one bmm of x as
 * [BL, D] and the weight as [D, E·H], for which PyTorch copies the [E, D, H] weight (3×8×5: 480 B) and
 * keeps the copy for x's gradient, not the weight; "bleh,ehd->bled" reads its input as [E, BL, H]
 * batch-strided, no copy, and its output's groups (b, l | e | d) are adjacent in the equation's order. */
void test_einsum_copies(void);
void test_einsum_copies(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16));
	tb_weight(m, "wp", D(16, 16));
	tb_weight(m, "wq", D(16, 8));
	tb_node(m, "MatMul", L("x", "wp"), L("p"));
	tb_node(m, "MatMul", L("x", "wq"), L("q"));
	tb_node(m, "Einsum", L("p", "q"), L("o"));
	tb_attr_str(m, "equation", "bi,bj->bij");
	tb_output(m, "o");
	ANALYZE_OR_RETURN(m, 2);
	int e = layer_of(a, "Einsum");
	CHECK(e >= 0);
	if (e >= 0)
		CHECK_EQ_I64(a->costs[e].bwd_workspace, 2 * 1024);
	FREE_ANALYSIS();

	tb_model *m2 = tb_new(14);
	tb_input(m2, "x0", D(-1, 4, 8));
	tb_weight(m2, "w0", D(8, 8));
	tb_weight(m2, "w1", D(3, 8, 5));
	tb_weight(m2, "w2", D(3, 5, 6));
	tb_node(m2, "MatMul", L("x0", "w0"), L("x"));
	tb_node(m2, "Einsum", L("x", "w1"), L("h"));
	tb_attr_str(m2, "equation", "bld,edh->bleh");
	tb_node(m2, "Einsum", L("h", "w2"), L("y"));
	tb_attr_str(m2, "equation", "bleh,ehd->bled");
	tb_output(m2, "y");
	abacus_graph *g2;
	abacus_analysis *a2 = t_analyze(m2, 2, &g2, &err);
	CHECK(a2 != NULL);
	if (a2 && a2->n_layers == 3) {
		CHECK_EQ_I64(a2->costs[1].extra_bytes, 3 * 8 * 5 * 4);
		CHECK_EQ_I64(a2->costs[1].in_mask, 1);
		CHECK_EQ_I64(a2->costs[1].bwd_workspace, 0);
		CHECK_EQ_I64(a2->costs[2].extra_bytes, 0);
		CHECK_EQ_I64(a2->costs[2].in_mask, 3);
		CHECK_EQ_I64(a2->costs[2].bwd_workspace, 0);
	}
	abacus_analysis_free(a2);
	abacus_graph_free(g2);
}

/* A sum's backward expands its output's gradient, a view: the product before it reads it in place.
 * x 2×8×16 (input), W 16×32 (2,048 B), h = x·W 2×8×32 (H = 2,048 B), s = ReduceSum(h, 2) 2×8×1
 * (S = 64 B), MSE. Forward: h, then s, h dies (nothing saves it): S; the loss keeps S and passes S (3S).
 * Backward: ds (S) and s dies; the sum's gradient shares ds (no H); the product adds dW: W + 2S, the
 * peak (an H-sized gradient of h would have made it W + H + 2S), with the autograd Nodes of the product
 * and the sum (tests.h REC; neither saves an activation) and dW's host memory (tests.h TENS). Persistent:
 * W, momentum, x 1,024, the zero target S, and W's and its momentum's host memory. */
void test_sum_grad_is_view(void);
void test_sum_grad_is_view(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 16));
	tb_weight(m, "w", D(16, 32));
	tb_ints(m, "axes", 1, (const int64_t[]){ 2 });
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "ReduceSum", L("h", "axes"), L("s"));
	tb_attr_int(m, "keepdims", 1);
	tb_output(m, "s");
	ANALYZE_OR_RETURN(m, 2);
	const abacus_memory *mem = abacus_analysis_memory(a);
	int64_t W = 2048, S = 64;
	CHECK_EQ_I64(mem->persistent, 2 * W + 1024 + S + TENS(1, 0, 0, TENS_SGD));
	CHECK_EQ_I64(mem->peak - mem->persistent, W + 2 * S + REC(2, 0) + TENS(0, 0, 1, 0));
	FREE_ANALYSIS();
}

/* F.glu as torch.onnx writes it: Split(h) → (a, b), Sigmoid(b), Mul(a, ·): one kernel that keeps h
 * (x 2×4×16, W 16×64: h = 2,048 B at batch 2), not the sigmoid's output (1,024 B more) beside it.
 * Autograd records (tests.h REC): the Nodes of the product and of the GLU's kernel (the Mul; the fused
 * Sigmoid makes none) and the handle of h, which the GLU keeps. The Split, a view layer, keeps a Node too,
 * though PyTorch runs F.glu as one operation without it (reported with the records rule). */
void test_glu_fused(void);
void test_glu_fused(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 4, 16));
	tb_weight(m, "w", D(16, 64));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "Split", L("h"), L("a", "b"));
	tb_attr_int(m, "axis", -1);
	tb_node(m, "Sigmoid", L("b"), L("s"));
	tb_node(m, "Mul", L("a", "s"), L("y"));
	tb_output(m, "y");
	ANALYZE_OR_RETURN(m, 2);
	int sg = layer_of(a, "Sigmoid");
	CHECK(sg >= 0 && a->layer_view[sg] == AB_LAYER_FUSED);
	CHECK_EQ_I64(abacus_analysis_memory(a)->saved, 2048 + REC(2, 1) + REC(1, 0) /* the Split */);
	FREE_ANALYSIS();
}

/* A tensor a kernel computes from a weight is a tensor of its own: e = Exp(p), p a [16] weight, is
 * kept by Exp (its output, 64 B) and by the product h·e (with h, 2×16: 128 B at batch 2): 192 B saved
 * at the end of the forward (it was 128, e counted as a view of its weight). Autograd records (tests.h
 * REC): the Nodes of the MatMul, the Relu, the Exp (computed from a weight, not a view of it) and the Mul;
 * handles on r (Relu), e (Exp), r and e (Mul); the MatMul saves x, a graph input. The simulation is the same
 * whether the file computes e first (as the exporter hoists it) or just before its reader. */
void test_weight_derived_tensor(void);
void test_weight_derived_tensor(void)
{
	int64_t peak[2] = { 0, 0 };
	for (int late = 0; late < 2; late++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 16));
		tb_weight(m, "w", D(16, 16));
		tb_weight(m, "p", D(16));
		if (!late)
			tb_node(m, "Exp", L("p"), L("e"));
		tb_node(m, "MatMul", L("x", "w"), L("h"));
		tb_node(m, "Relu", L("h"), L("r"));
		if (late)
			tb_node(m, "Exp", L("p"), L("e"));
		tb_node(m, "Mul", L("r", "e"), L("y"));
		tb_output(m, "y");
		ANALYZE_OR_RETURN(m, 2);
		const abacus_memory *mem = abacus_analysis_memory(a);
		CHECK_EQ_I64(mem->saved, 64 + 128 + REC(4, 4));
		peak[late] = mem->peak;
		FREE_ANALYSIS();
	}
	CHECK_EQ_I64(peak[0], peak[1]);
}

/* An activation read by two layers gets a gradient from each; the second is a tensor of its own until
 * it is added into the first. x 2×4×16, W0 16×32, h = x·W0, r = Relu(h) (R = 1,024 B), y1 = r·W1,
 * y2 = r·W2 (W1, W2 32×8: 1,024 B each; Y = 256 B), y = y1 + y2, MSE. Backward: the loss leaves its
 * error (Y), dy (Y, shared by y1 and y2), r (R, saved): 3Y·…; y2's product adds dr (R) and dW2:
 * 2Y + 2R + W2 = 3,584; y1's adds dW1 and, for a moment, its own dr (R): 2Y + 3R + W1 + W2 = 5,632, the
 * peak (5,376 without the second gradient: Relu's dh with dW1, dW2), with the autograd records
 * (tests.h REC): the Nodes of all five layers, and the handles on r of y1's product and of Relu, whose
 * backwards have not finished (y2's product released its own), and the host memory of dW1 and dW2 (tests.h
 * TENS). Persistent: weights 4,096, momentum 4,096, x 512, target Y, and the host memory of the three
 * weights and their momentum. */
void test_second_gradient(void);
void test_second_gradient(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 4, 16));
	tb_weight(m, "w0", D(16, 32));
	tb_weight(m, "w1", D(32, 8));
	tb_weight(m, "w2", D(32, 8));
	tb_node(m, "MatMul", L("x", "w0"), L("h"));
	tb_node(m, "Relu", L("h"), L("r"));
	tb_node(m, "MatMul", L("r", "w1"), L("y1"));
	tb_node(m, "MatMul", L("r", "w2"), L("y2"));
	tb_node(m, "Add", L("y1", "y2"), L("y"));
	tb_output(m, "y");
	ANALYZE_OR_RETURN(m, 2);
	const abacus_memory *mem = abacus_analysis_memory(a);
	CHECK_EQ_I64(mem->persistent, 4096 + 4096 + 512 + 256 + TENS(3, 0, 0, TENS_SGD));
	CHECK_EQ_I64(mem->peak - mem->persistent, 5632 + REC(5, 2) + TENS(0, 0, 2, 0));
	FREE_ANALYSIS();
}

/* A layer no gradient reaches keeps nothing: d = h·Wd feeds only ArgMin (a VQ codebook's distances), so
 * its autograd node dies with d. x 2×16, h = x·W, y = Relu(h) (2×16: 128 B at batch 2, kept by Relu):
 * 128 B saved at the end of the forward, not 256 (h kept for Wd's gradient). Autograd records (tests.h
 * REC) likewise only for the layers a gradient reaches: the Nodes of x·W and Relu and Relu's handle on y;
 * none for h·Wd or ArgMin. */
void test_dead_branch_keeps_nothing(void);
void test_dead_branch_keeps_nothing(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16));
	tb_weight(m, "w", D(16, 16));
	tb_weight(m, "wd", D(16, 64));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "MatMul", L("h", "wd"), L("d"));
	tb_node(m, "ArgMin", L("d"), L("k"));
	tb_attr_int(m, "axis", 1);
	tb_node(m, "Relu", L("h"), L("y"));
	tb_output(m, "y");
	tb_output(m, "k");
	ANALYZE_OR_RETURN(m, 2);
	CHECK_EQ_I64(abacus_analysis_memory(a)->saved, 128 + REC(2, 1));
	FREE_ANALYSIS();
}

/* x [B, 4] · W [4, 64] → h, then a chain of n element-wise ops (Relu, Tanh, Relu, ...), each a kernel that
 * keeps its output for backward; cross-entropy over the 64 classes. */
static tb_model *elementwise_chain(int n)
{
	tb_model *m = tb_new(14);
	char in[16] = "h", out[16];
	tb_input(m, "x", D(-1, 4));
	tb_weight(m, "w", D(4, 64));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	for (int k = 1; k <= n; k++) {
		if (k == n)
			snprintf(out, sizeof out, "y");
		else
			snprintf(out, sizeof out, "a%d", k);
		tb_node(m, k % 2 ? "Relu" : "Tanh", L(in), L(out));
		memcpy(in, out, sizeof in);
	}
	tb_output(m, "y");
	return m;
}

/* Autograd's records (memory.c records): every layer a gradient reaches keeps a Node (700 bytes) from its
 * forward until the step returns, and every activation a layer saves a handle (400 bytes) until that layer's
 * backward (tests.h REC). The chain above at batch 2: h and each op's output are T = 2·64·4 = 512 B, W is
 * 1,024 B. Forward: h, then each op's output, kept, while h dies at the first op: n·T saved, with n + 1
 * Nodes (the MatMul's and each op's) and n handles (each op's on its output; the MatMul saves x, a graph
 * input, and its weight, no activation). Cross-entropy: its log-softmax (T), then in backward its buffer and
 * y's gradient (2T more): (n + 3)·T, the peak, before any backward has released a handle. Later moments hold
 * less: op k's backward (k + 2)·T with k handles, the MatMul's dh and dW (T + W = 1,536 < 4T, with dW's host
 * memory, tests.h TENS, still less), the step W. Persistent: W, momentum W, x 2·4·4 = 32, labels 2·8 = 16,
 * and W's and its momentum's host memory (tests.h TENS). TensorFlow's runtime keeps no records: it saves
 * the outputs alike (its ReluGrad and TanhGrad read them), n·T, and peaks at the loss's backward, (n + 3)·T,
 * with W's SGD momentum product, made when the step starts and consumed by W's update in the MatMul's
 * backward (runtime.h step.sgd_momentum_early): (n + 3)·T + W. (The MatMul's backward, dh, dW and the
 * product, T + 2W = 2,560 B, is below it for n = 1 and 8.) */
void test_autograd_records(void);
void test_autograd_records(void)
{
	const int64_t T = 512, W = 1024;
	static const int chain[2] = { 1, 8 };
	int64_t saved[2] = { 0, 0 }, peak[2] = { 0, 0 };
	for (int i = 0; i < 2; i++) {
		int n = chain[i];
		for (int tf = 0; tf < 2; tf++) {
			abacus_config cfg = ABACUS_CONFIG_INIT;
			cfg.batch = 2;
			cfg.runtime = tf ? "tf-2.21.0" : NULL;
			abacus_graph *g;
			abacus_error err;
			abacus_analysis *a = t_analyze_cfg(elementwise_chain(n), &cfg, &g, &err);
			CHECK(a != NULL);
			if (!a) {
				fprintf(stderr, "  analysis failed: %s\n", err.msg);
				continue;
			}
			const abacus_memory *mem = abacus_analysis_memory(a);
			CHECK_EQ_I64(a->n_layers, n + 1);
			if (!tf) {
				CHECK_EQ_I64(mem->persistent, 2 * W + 32 + 16 + TENS(1, 0, 0, TENS_SGD));
				CHECK_EQ_I64(mem->saved, n * T + REC(n + 1, n));
				CHECK_EQ_I64(mem->peak - mem->persistent, (n + 3) * T + REC(n + 1, n));
				saved[i] = mem->saved;
				peak[i] = mem->peak;
			} else {
				CHECK_EQ_I64(mem->saved, n * T);
				CHECK_EQ_I64(mem->peak - mem->persistent, (n + 3) * T + W);
			}
			FREE_ANALYSIS();
		}
	}
	/* Seven more ops: seven more outputs kept, seven more Nodes and handles, at the end of the forward and at
	 * the peak alike. */
	CHECK_EQ_I64(saved[1] - saved[0], 7 * T + REC(7, 7));
	CHECK_EQ_I64(peak[1] - peak[0], 7 * T + REC(7, 7));
}

/* PyTorch's own convolution path (batch 1 on a small input; every transposed convolution) unfolds
 * columns. x 1×16×32×32 (16,384 elements, under oneDNN's 20,480), W 16×16×3×3: [16·9, 1,024] columns,
 * 589,824 B, in the forward and in the backward; at batch 2 oneDNN runs it, no columns. A transposed
 * convolution of an 8×4×4 input to 4 channels (W 8×4×3×3) folds [4·9, 16] columns per sample: 2,304 B
 * at batch 2 as at 1. */
void test_slow_conv_columns(void);
void test_slow_conv_columns(void)
{
	for (int batch = 1; batch <= 2; batch++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 16, 32, 32));
		tb_weight(m, "w", D(16, 16, 3, 3));
		tb_node(m, "Conv", L("x", "w"), L("y"));
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_output(m, "y");
		ANALYZE_OR_RETURN(m, batch);
		int64_t cols = batch == 1 ? 16 * 9 * 1024 * 4 : 0;
		CHECK_EQ_I64(a->costs[0].fwd_workspace, cols);
		if (batch == 1)
			CHECK_EQ_I64(a->costs[0].bwd_workspace, cols);
		FREE_ANALYSIS();
	}
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 4, 4));
	tb_weight(m, "w", D(8, 4, 3, 3));
	tb_node(m, "ConvTranspose", L("x", "w"), L("y"));
	tb_output(m, "y");
	ANALYZE_OR_RETURN(m, 2);
	CHECK_EQ_I64(a->costs[0].fwd_workspace, 4 * 9 * 16 * 4);
	FREE_ANALYSIS();
}

/* A 1×1 unstrided convolution at batch under 16 runs PyTorch's own path on one thread, which makes its
 * input's gradient one sample at a time through a buffer of its own: a = 2×16×16×16 at batch 2, one
 * sample 16·16·16·4 = 16,384 B. */
void test_slow_conv_1x1_grad(void);
void test_slow_conv_1x1_grad(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 16, 16));
	tb_weight(m, "w0", D(16, 8, 3, 3));
	tb_weight(m, "w1", D(4, 16, 1, 1));
	tb_node(m, "Conv", L("x", "w0"), L("a"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	tb_node(m, "Conv", L("a", "w1"), L("y"));
	tb_output(m, "y");
	ANALYZE_OR_RETURN(m, 2);
	CHECK(a->n_layers == 2);
	if (a->n_layers == 2)
		CHECK_EQ_I64(a->costs[1].bwd_workspace, 16 * 16 * 16 * 4);
	FREE_ANALYSIS();
}

/* Without AVX (abacus_config.isa "sse41") a convolution's backward runs oneDNN's gemm path, im2col plus a
 * per-thread weight-reduction buffer (runtime_torch_cpu.c gemm_backward_bytes). The second of two 64 → 64
 * 3×3 convolutions (pad 1) on 16×16 maps at batch 4: ic = oc = 64, ks = 9, os = is = 256, the weight
 * Wb = 64·64·9·4 = 147,456 B, the columns col = 4·64·9·256 = 589,824 B; the size limit 15·T·(262,144 +
 * 147,456 + 262,144) is not reached.
 *   one thread:  data 589,824 + 512·256 + 1180·64 = 796,416; weights (256 positions per thread is not
 *                under 256: one reduction buffer) 589,824 + 4·147,456 + 4·(576 + 64)·256 + 32,768
 *                = 1,867,776, the larger;
 *   two threads: data 2·589,824 + 131,072 + 75,520 = 1,386,240; weights (128 per thread: two)
 *                2·(589,824 + 589,824) + 655,360 + 32,768 = 3,047,424.
 * With the weight gradient itself the helper's single-layer measurement: 2.01 / 3.19 MB (2.02 / 3.19 here).
 * An AVX machine keeps the blocked copies of the output's and input's gradients: 2 · 262,144 = 524,288. */
void test_no_avx_conv_workspace(void);
void test_no_avx_conv_workspace(void)
{
	static const struct {
		const char *isa;
		int threads;
		int64_t ws;
	} cases[] = { { "sse41", 1, 1867776 }, { "sse41", 2, 3047424 }, { NULL, 1, 524288 }, { "avx512", 2, 524288 } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 64, 16, 16));
		tb_weight(m, "w0", D(64, 64, 3, 3));
		tb_weight(m, "w1", D(64, 64, 3, 3));
		tb_node(m, "Conv", L("x", "w0"), L("a"));
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_node(m, "Conv", L("a", "w1"), L("y"));
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_output(m, "y");
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = 4;
		cfg.isa = cases[i].isa;
		cfg.threads = cases[i].threads;
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze_cfg(m, &cfg, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		CHECK(a->n_layers == 2);
		if (a->n_layers == 2)
			CHECK_EQ_I64(a->costs[1].bwd_workspace, cases[i].ws);
		FREE_ANALYSIS();
	}
	/* A hardware id sets both: "cpu2@amd-f25m17-sse41-t2-8ed9a3b6" is two threads without AVX. */
	abacus_config cfg = ABACUS_CONFIG_INIT;
	abacus_config_hw(&cfg, "cpu2@amd-f25m17-sse41-t2-8ed9a3b6");
	CHECK_EQ_I64(cfg.threads, 2);
	CHECK(cfg.isa && !strcmp(cfg.isa, "sse41"));
	abacus_config_init(&cfg, ABACUS_CONFIG_VERSION);
	abacus_config_hw(&cfg, "tf-2.21.0/cpu1@amd-f25m17-avx512-t1-6e793d1e");
	CHECK_EQ_I64(cfg.threads, 1);
	CHECK(cfg.isa && !strcmp(cfg.isa, "avx512"));
	abacus_config_init(&cfg, ABACUS_CONFIG_VERSION);
	abacus_config_hw(&cfg, "cpu2");
	CHECK_EQ_I64(cfg.threads, 2);
	CHECK(cfg.isa == NULL);
	/* Absurd thread counts and an ISA no machine id names are clear errors. */
	{
		tb_model *m5 = tb_new(14);
		tb_input(m5, "x", D(-1, 4));
		tb_node(m5, "Relu", L("x"), L("y"));
		tb_output(m5, "y");
		abacus_config c5 = ABACUS_CONFIG_INIT;
		c5.threads = 5000;
		abacus_graph *g5;
		abacus_error e5;
		abacus_analysis *a5 = t_analyze_cfg(m5, &c5, &g5, &e5);
		CHECK(a5 == NULL);
		CHECK_STR_CONTAINS(e5.msg, "threads must be 1 to 4096 (got 5000)");
		abacus_graph_free(g5);
	}
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 4));
	tb_node(m, "Relu", L("x"), L("y"));
	tb_output(m, "y");
	cfg.isa = "avx9";
	abacus_graph *g;
	abacus_error err;
	abacus_analysis *a = t_analyze_cfg(m, &cfg, &g, &err);
	CHECK(a == NULL);
	CHECK_STR_CONTAINS(err.msg, "unknown vector ISA 'avx9'");
	abacus_graph_free(g);
}

/* oneDNN makes a convolution's weight gradient in its own layout and reorders it into PyTorch's: one
 * weight-sized buffer beside the new gradient where the blocked copies of the output's and input's
 * gradients are smaller. Batch 4 (oneDNN), 3×3 pad 1 on 4×4 maps:
 *   conv a: 8 → 256, no input gradient: blocked y = 4·256·16·4 = 65,536 B, W = 256·8·9·4 = 73,728 B:
 *           73,728;
 *   conv y: 256 → 256: blocked y + blocked x = 2 · 65,536 = 131,072, W = 256·256·9·4 = 2,359,296:
 *           2,359,296 (measured 2.37 MB for this layer). */
void test_conv_weight_reorder(void);
void test_conv_weight_reorder(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 4, 4));
	tb_weight(m, "w0", D(256, 8, 3, 3));
	tb_weight(m, "w1", D(256, 256, 3, 3));
	tb_node(m, "Conv", L("x", "w0"), L("a"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	tb_node(m, "Conv", L("a", "w1"), L("y"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	tb_output(m, "y");
	ANALYZE_OR_RETURN(m, 4);
	CHECK(a->n_layers == 2);
	if (a->n_layers == 2) {
		CHECK_EQ_I64(a->costs[0].bwd_workspace, 73728);
		CHECK_EQ_I64(a->costs[1].bwd_workspace, 2359296);
	}
	FREE_ANALYSIS();
}

/* An Einsum operand that bmm reads batch-strided gets its gradient strided, bmm's [batch, ·, ·] result
 * viewed back in the operand's order; GELU's backward on such a gradient holds two more of its size.
 * An MoE's experts at batch 2: x = x0·W0 2×4×8, h = einsum("bld,edh->bleh", x, W1) 2×4×3×5 (480 B),
 * GELU (Div, Erf, Add, Mul, Mul: one kernel), y = einsum("bleh,ehd->bled", g, W2): its operand g is read
 * as [e, bl, h] (strided: bit 0), W2 as it is; the first einsum's x is read in its own order (no bit).
 * GELU's kernel (the last Mul) holds 2 · 480 B more in its backward. */
void test_gelu_strided_grad(void);
void test_gelu_strided_grad(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x0", D(-1, 4, 8));
	tb_weight(m, "w0", D(8, 8));
	tb_weight(m, "w1", D(3, 8, 5));
	tb_weight(m, "w2", D(3, 5, 6));
	tb_scalar(m, "sqrt2", 1, 1.4142135);
	tb_scalar(m, "one", 1, 1.0);
	tb_scalar(m, "half", 1, 0.5);
	tb_node(m, "MatMul", L("x0", "w0"), L("x"));
	tb_node(m, "Einsum", L("x", "w1"), L("h"));
	tb_attr_str(m, "equation", "bld,edh->bleh");
	tb_node(m, "Div", L("h", "sqrt2"), L("v"));
	tb_node(m, "Erf", L("v"), L("er"));
	tb_node(m, "Add", L("er", "one"), L("a1"));
	tb_node(m, "Mul", L("h", "a1"), L("mm"));
	tb_node(m, "Mul", L("mm", "half"), L("g"));
	tb_node(m, "Einsum", L("g", "w2"), L("y"));
	tb_attr_str(m, "equation", "bleh,ehd->bled");
	tb_output(m, "y");
	ANALYZE_OR_RETURN(m, 2);
	int e1 = layer_of(a, "Einsum"), e2 = (int)a->n_layers - 1;
	CHECK(e1 >= 0 && e2 > e1 && !strcmp(a->g->nodes[a->layer_node[e2]].op, "Einsum"));
	if (e1 >= 0 && e2 > e1) {
		CHECK_EQ_I64(a->costs[e1].grad_strided, 0);
		CHECK_EQ_I64(a->costs[e2].grad_strided, 1);
		CHECK_EQ_I64(a->costs[e2 - 1].strided_grad_buffers, 2); /* the GELU's kernel */
		CHECK_EQ_I64(a->costs[e1 + 1].strided_grad_buffers, 0); /* its fused Div */
	}
	FREE_ANALYSIS();
}

/* Host memory per tensor beyond its data (runtime.h param/buffer/grad/state tensor bytes): a Linear
 * (x·W + b, W 16×32, b [32]) at batch 2. Weights 2,048 + 128 = 2,176 B; SGD's momentum as much; the
 * input 2×16×4 = 128 B and the class labels 2×8 = 16 B. Two parameter tensors each keep 580 B and one
 * momentum tensor 380 B: buffers 2 × 960 = 1,920, persistent 2,176 + 1,920 + 2,176 + 144 = 6,416. With
 * Adam, two moments and a step tensor, 1,250 B a parameter: buffers 2 × 1,830 = 3,660, optimizer
 * 4,352, persistent 2,176 + 3,660 + 4,352 + 144 = 10,332. */
void test_tensor_overhead_memory(void);
void test_tensor_overhead_memory(void)
{
	for (int adam = 0; adam <= 1; adam++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 16));
		tb_weight(m, "w", D(16, 32));
		tb_weight(m, "b", D(32));
		tb_node(m, "MatMul", L("x", "w"), L("h"));
		tb_node(m, "Add", L("h", "b"), L("y"));
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = 2;
		cfg.optimizer = adam ? ABACUS_OPT_ADAM : ABACUS_OPT_SGD;
		abacus_analysis *a = t_analyze_cfg(m, &cfg, &g, &err);
		if (!a) {
			fprintf(stderr, "  analysis failed: %s\n", err.msg);
			t_failed_checks++;
			continue;
		}
		const abacus_memory *mem = abacus_analysis_memory(a);
		CHECK_EQ_I64(mem->weights, 2176);
		CHECK_EQ_I64(mem->buffers, adam ? 3660 : 1920);
		CHECK_EQ_I64(mem->persistent, adam ? 10332 : 6416);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* A dilated depthwise convolution's backward holds 86,016 B beside an input-sized buffer however small
 * its map (oneDNN; runtime_torch_cpu.c). x is 4×8×5×5 (800 floats, 3,200 B) at batch 4, 3×3 kernels,
 * 8 groups, output 5×5. Dilated 2 (pads 2): 86,016 + 3,200 = 89,216. Undilated (pads 1): the blocked
 * copies of the output's gradient and of the input (x is a graph input, no gradient, but the
 * backward-weights pass reorders it: weights_pass_input_bytes), 8 channels padded to 16 each:
 * 2 · 4×16×25×4 = 12,800 B. */
void test_dilated_depthwise_backward(void);
void test_dilated_depthwise_backward(void)
{
	for (int dil = 1; dil <= 2; dil++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 8, 5, 5));
		tb_weight(m, "w", D(8, 1, 3, 3));
		tb_node(m, "Conv", L("x", "w"), L("y"));
		tb_attr_int(m, "group", 8);
		tb_attr_ints(m, "kernel_shape", D(3, 3));
		tb_attr_ints(m, "dilations", D(dil, dil));
		tb_attr_ints(m, "pads", D(dil, dil, dil, dil));
		tb_output(m, "y");
		ANALYZE_OR_RETURN(m, 4);
		int L = layer_of(a, "Conv");
		CHECK(L >= 0);
		if (L >= 0)
			CHECK_EQ_I64(a->costs[L].bwd_workspace, dil == 2 ? 89216 : 12800);
		FREE_ANALYSIS();
	}
}

/* An analysis of `m` at `batch` under `runtime` (NULL: the default, torch-1.13.1). */
static abacus_analysis *analyze_rt(tb_model *m, int64_t batch, const char *runtime, abacus_graph **g,
                                   abacus_error *err)
{
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = batch;
	cfg.runtime = runtime;
	return t_analyze_cfg(m, &cfg, g, err);
}

/* x [B, 8, 16] · W [16, 64] → h [B, 8, 64], then a mean of h over `axes` (NULL: over everything). */
static tb_model *mean_model(const int64_t *axes)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 16));
	tb_weight(m, "w", D(16, 64));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "ReduceMean", L("h"), L("y"));
	if (axes)
		tb_attr_ints(m, "axes", 1, axes);
	tb_attr_int(m, "keepdims", 0);
	tb_output(m, "y");
	return m;
}

/* PyTorch 1.13's mean over given dims (MeanBackward1) keeps its whole input for backward; a mean over
 * everything (MeanBackward0) and 2.15's mean over dims keep its sizes alone (runtime_torch_cpu.c
 * torch113_saved). So the ReduceMean layer saves input 0 (in_mask 1) only under 1.13 with axes. */
void test_mean_dims_saves_input(void);
void test_mean_dims_saves_input(void)
{
	const struct {
		int axes;
		const char *runtime;
		unsigned in_mask;
	} cases[] = { { 1, NULL, 1 }, { 1, "torch-2.15.0", 0 }, { 0, NULL, 0 }, { 0, "torch-2.15.0", 0 } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = analyze_rt(mean_model(cases[i].axes ? (const int64_t[]){ 1 } : NULL), 4,
		                                cases[i].runtime, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		int L = layer_of(a, "ReduceMean");
		CHECK(L >= 0);
		if (L >= 0)
			CHECK_EQ_I64(a->costs[L].in_mask, cases[i].in_mask);
		FREE_ANALYSIS();
	}
}

/* A max reduction's backward holds a bool mask of its input (1 B an element) and, over dims, the mask cast
 * to float (4 B) beside the gradient it makes; over everything the count's int64 cast (8 B) instead (ops_nn.c
 * select_backward_bytes). h = x·W is [2, 8, 32] at batch 2: 512 elements: over axis 2, 512 · (1 + 4) =
 * 2,560 B; over everything 512 · (1 + 8) = 4,608 B. A max of the graph input, which needs no gradient,
 * holds nothing. */
void test_reduce_max_backward_mask(void);
void test_reduce_max_backward_mask(void)
{
	const struct {
		int axes, of_input;
		int64_t ws;
	} cases[] = { { 1, 0, 2560 }, { 0, 0, 4608 }, { 1, 1, 0 } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 8, 32));
		tb_weight(m, "w", D(32, 32));
		tb_node(m, "MatMul", L("x", "w"), L("h"));
		tb_node(m, "ReduceMax", L(cases[i].of_input ? "x" : "h"), L("r"));
		if (cases[i].axes)
			tb_attr_ints(m, "axes", 1, (const int64_t[]){ 2 });
		tb_node(m, "Add", L("r", "h"), L("y")); /* keepdims (default 1): r broadcasts over h */
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = analyze_rt(m, 2, NULL, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		int L = layer_of(a, "ReduceMax");
		CHECK(L >= 0);
		if (L >= 0)
			CHECK_EQ_I64(a->costs[L].bwd_workspace, cases[i].ws);
		FREE_ANALYSIS();
	}
}

/* A Conv1d over a transposed view (x.transpose(1, 2), an embedding's) copies it contiguous in its forward
 * and again in its backward (runtime_torch_cpu.c strided_input_copy). h = x·W is [2, 32, 16] at batch 2,
 * its transpose t [2, 16, 32]: X = 2·16·32·4 = 4,096 B; the 16 → 16 kernel-3 convolution (oneDNN: kernel
 * not 1, batch 2) makes y [2, 16, 30]: 3,840 B. Read contiguous (a ReLU of t between, a tensor of its own):
 * the backward holds the blocked copies of y and x (16 channels: no padding), 3,840 + 4,096 = 7,936 B,
 * more than the weight's reorder (16·16·3·4 = 3,072), and the forward nothing; read as the transpose, one
 * X more in each: 12,032 and 4,096. */
void test_conv_permuted_input_copy(void);
void test_conv_permuted_input_copy(void)
{
	for (int relu = 0; relu < 2; relu++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 32, 16));
		tb_weight(m, "w", D(16, 16));
		tb_weight(m, "k", D(16, 16, 3));
		tb_node(m, "MatMul", L("x", "w"), L("h"));
		tb_node(m, "Transpose", L("h"), L(relu ? "t" : "c"));
		tb_attr_ints(m, "perm", 3, (const int64_t[]){ 0, 2, 1 });
		if (relu)
			tb_node(m, "Relu", L("t"), L("c"));
		tb_node(m, "Conv", L("c", "k"), L("y"));
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = analyze_rt(m, 2, NULL, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		int L = layer_of(a, "Conv");
		CHECK(L >= 0);
		if (L >= 0) {
			CHECK_EQ_I64(a->costs[L].bwd_workspace, relu ? 7936 : 7936 + 4096);
			CHECK_EQ_I64(a->costs[L].fwd_workspace, relu ? 0 : 4096);
		}
		FREE_ANALYSIS();
	}
}

/* PyTorch runs the operations in the order its exporter lists them (memory.c base_order), not breadth
 * first. x [64, 4] · W0 [4, 4] → h (1,024 B); two branches h · W1, h · W2 ([4, 1024] each) → big1, big2
 * [64, 1024] (262,144 B each), each summed over axis 1 → s1, s2 [64, 1] (256 B each); y = s1 + s2. Listed
 * branch after branch (a), big1 dies at its sum before big2 exists: the forward's peak is at the second sum,
 * h + s1 + big2 + s2 + the records of MatMul0, MatMul1, ReduceSum1, MatMul2, ReduceSum2 (5 Nodes) and the
 * handles of the two products that save h (MatMul0 saves the graph input x, no activation): REC(5, 2). Both
 * products first (b), as a program that computes them first runs them: at the first sum h + big1 + big2 +
 * s1 + REC(4, 2) (MatMul0, MatMul1, MatMul2, ReduceSum1). (b) − (a) = big1 − s2 − one Node = 262,144 − 256
 * − 700. The backward holds less (the sums' gradients are views; the weights' gradients 16 kB each). */
void test_program_order(void);
void test_program_order(void)
{
	int64_t peak[2] = { 0, 0 };
	for (int both_first = 0; both_first < 2; both_first++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 4));
		tb_weight(m, "w0", D(4, 4));
		tb_weight(m, "w1", D(4, 1024));
		tb_weight(m, "w2", D(4, 1024));
		tb_node(m, "MatMul", L("x", "w0"), L("h"));
		tb_node(m, "MatMul", L("h", "w1"), L("big1"));
		if (both_first)
			tb_node(m, "MatMul", L("h", "w2"), L("big2"));
		tb_node(m, "ReduceSum", L("big1"), L("s1"));
		tb_attr_ints(m, "axes", 1, (const int64_t[]){ 1 });
		if (!both_first)
			tb_node(m, "MatMul", L("h", "w2"), L("big2"));
		tb_node(m, "ReduceSum", L("big2"), L("s2"));
		tb_attr_ints(m, "axes", 1, (const int64_t[]){ 1 });
		tb_node(m, "Add", L("s1", "s2"), L("y"));
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = analyze_rt(m, 64, NULL, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		const abacus_memory *mem = abacus_analysis_memory(a);
		peak[both_first] = mem->peak - mem->persistent;
		CHECK_EQ_I64(peak[both_first], both_first ? 1024 + 2 * 262144 + 256 + REC(4, 2)
		                                          : 1024 + 256 + 262144 + 256 + REC(5, 2));
		FREE_ANALYSIS();
	}
	CHECK_EQ_I64(peak[1] - peak[0], 262144 - 256 - 700);
}

/* oneDNN's backward-weights pass copies its input into the blocked layout even when the input needs no
 * gradient (runtime_torch_cpu.c weights_pass_input_bytes). A 3×3 (pads 1) C → 16 convolution on the graph's
 * input [4, C, 8, 8] at batch 4: y [4, 16, 8, 8] = 16,384 B (16 channels, no padding); its weight's reorder
 * 16·C·9·4 B (at most 13,824) is smaller than the copies. The input's copy is none for C = 3 (an image: the
 * first-layer kernel reads it as it is), 8 channels' worth for C = 6 (4·8·64·4 = 8,192 B), 16 for C = 12
 * (16,384 B) and 32 (padded to 16) for C = 24 (32,768 B). */
void test_conv_weights_pass_input_copy(void);
void test_conv_weights_pass_input_copy(void)
{
	const struct {
		int64_t c, ws;
	} cases[] = { { 3, 16384 }, { 6, 16384 + 8192 }, { 12, 16384 + 16384 }, { 24, 16384 + 32768 } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, cases[i].c, 8, 8));
		tb_weight(m, "w", D(16, cases[i].c, 3, 3));
		tb_node(m, "Conv", L("x", "w"), L("y"));
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_output(m, "y");
		ANALYZE_OR_RETURN(m, 4);
		CHECK(a->n_layers == 1);
		if (a->n_layers == 1)
			CHECK_EQ_I64(a->costs[0].bwd_workspace, cases[i].ws);
		FREE_ANALYSIS();
	}
}

/* A convolution makes its output in its input's memory format whatever its shape (analysis.c): convnext's
 * downsampling 2×2/2 convolution on a permuted (channels-last) LayerNorm output hands the stage's first
 * depthwise convolution a channels-last input. x [B, 8, 8, 16] → Transpose [0,3,1,2] → Relu (so the
 * convolution's input needs a gradient) → Conv 16 → 32, 2×2 stride 2 → [B, 32, 4, 4] (half the input's
 * elements) → depthwise 7×7 (pads 3) over 32 channels: W = 32·49·4 = 6,272 B, its backward holds 256·W =
 * 1,605,632 B. From an NCHW input (no Transpose) the same depthwise convolution holds the blocked copies of
 * its output's gradient and of its input's gradient: 2 · 2·32·16·4 = 8,192 B at batch 2, more than W. */
void test_conv_keeps_channels_last(void);
void test_conv_keeps_channels_last(void)
{
	for (int permuted = 0; permuted < 2; permuted++) {
		tb_model *m = tb_new(14);
		if (permuted) {
			tb_input(m, "x", D(-1, 8, 8, 16));
			tb_node(m, "Transpose", L("x"), L("t"));
			tb_attr_ints(m, "perm", 4, (const int64_t[]){ 0, 3, 1, 2 });
		} else {
			tb_input(m, "t", D(-1, 16, 8, 8));
		}
		tb_weight(m, "wd", D(32, 16, 2, 2));
		tb_weight(m, "w", D(32, 1, 7, 7));
		tb_node(m, "Relu", L("t"), L("r"));
		tb_node(m, "Conv", L("r", "wd"), L("d"));
		tb_attr_ints(m, "strides", 2, (const int64_t[]){ 2, 2 });
		tb_node(m, "Conv", L("d", "w"), L("y"));
		tb_attr_int(m, "group", 32);
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 3, 3, 3, 3 });
		tb_output(m, "y");
		ANALYZE_OR_RETURN(m, 2);
		size_t last = a->n_layers - 1;
		CHECK(!strcmp(a->layers[last].op, "Conv"));
		CHECK_EQ_I64(a->costs[last].bwd_workspace, permuted ? 256 * 6272 : 2 * 2 * 32 * 16 * 4);
		FREE_ANALYSIS();
	}
}

/* A matrix product keeps each operand only for the other's gradient (ops.h ab_product_in_mask): dense_gnn's
 * A·H with A a fixed adjacency keeps nothing of H. x [2, 16, 8] (a graph input) · W [8, 8] → h [2, 16, 8]
 * (1,024 B at batch 2); y = adj [16, 16] (a graph input: no gradient) · h; r = Relu(y), the output. What the
 * forward keeps: Relu's output r (1,024 B, one handle); h is not kept (adj needs no gradient), nor x (an
 * input) and W (a parameter) for the first product; three records (two MatMuls, the Relu): 1,024 + REC(3, 1).
 * The second product's in_mask is bit 0 alone (adj, which is no activation). */
void test_product_saves_for_other_operand(void);
void test_product_saves_for_other_operand(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16, 8));
	tb_input(m, "adj", D(16, 16));
	tb_weight(m, "w", D(8, 8));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "MatMul", L("adj", "h"), L("y"));
	tb_node(m, "Relu", L("y"), L("r"));
	tb_output(m, "r");
	ANALYZE_OR_RETURN(m, 2);
	CHECK(a->n_layers == 3);
	if (a->n_layers == 3)
		CHECK(a->costs[1].in_mask == 1);
	CHECK_EQ_I64(abacus_analysis_memory(a)->saved, 1024 + REC(3, 1));
	FREE_ANALYSIS();
}

/* PyTorch 1.13's reshape of a strided view that no strides can express is a copy of its own (memory.c
 * reshape_copies; 2.15's rows keep the view). p = x·W is [2, 4, 24] at batch 2 (768 B); q = p[:, :, 0:8] a
 * slice of the last axis, strides (96, 24, 1); r = q reshaped to [2, 8, 4] merges the 4 rows with halves of
 * the 8 columns, which no strides over p can do: a copy, 2·8·4·4 = 256 B. y = r·W2 keeps r (W2 needs a
 * gradient). Under 1.13 the forward keeps the 256 B copy, p dying after the reshape; under 2.15 r is a view of
 * p, whose 768 B stay. Records: MatMul, Slice, Reshape, MatMul (4 Nodes), one handle (r): REC(4, 1). */
void test_reshape_copies_strided(void);
void test_reshape_copies_strided(void)
{
	for (int v2 = 0; v2 < 2; v2++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 4, 24));
		tb_weight(m, "w", D(24, 24));
		tb_weight(m, "w2", D(4, 4));
		tb_ints(m, "starts", 1, (const int64_t[]){ 0 });
		tb_ints(m, "ends", 1, (const int64_t[]){ 8 });
		tb_ints(m, "axes", 1, (const int64_t[]){ 2 });
		tb_ints(m, "shape", 3, (const int64_t[]){ -1, 8, 4 });
		tb_node(m, "MatMul", L("x", "w"), L("p"));
		tb_node(m, "Slice", L("p", "starts", "ends", "axes"), L("q"));
		tb_node(m, "Reshape", L("q", "shape"), L("r"));
		tb_node(m, "MatMul", L("r", "w2"), L("y"));
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = analyze_rt(m, 2, v2 ? "torch-2.15.0" : NULL, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		CHECK_EQ_I64(abacus_analysis_memory(a)->saved, (v2 ? 768 : 256) + REC(4, 1));
		FREE_ANALYSIS();
	}
}

/* StopGradient (Abacus's domain: the collector's export of Tensor.detach()): its output requires no
 * gradient. y = detach(x·W1) ⊙ (x·W2) at batch 2, h = x·W1 and g = x·W2 each 2×8×32 floats (2,048 B).
 * PyTorch's Mul saves the detached h for g's gradient and nothing for h's (none flows there): 2,048 B
 * saved by the Mul. As an Identity (what torch's own exporter leaves: nothing) the Mul saves both, 4,096 B. The
 * first MatMul's saved x is the graph input, never an activation. The same op name in the default
 * domain is not this op. */
static int64_t detached_product_saved(const char *domain)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 16));
	tb_weight(m, "w1", D(16, 32));
	tb_weight(m, "w2", D(16, 32));
	tb_node(m, "MatMul", L("x", "w1"), L("h"));
	if (domain)
		tb_node_in(m, domain, "StopGradient", L("h"), L("hs"));
	else
		tb_node(m, "Identity", L("h"), L("hs"));
	tb_node(m, "MatMul", L("x", "w2"), L("g"));
	tb_node(m, "Mul", L("hs", "g"), L("y"));
	tb_output(m, "y");
	abacus_graph *g;
	abacus_error err;
	abacus_analysis *a = t_analyze(m, 2, &g, &err);
	if (!a) {
		fprintf(stderr, "  analysis failed: %s\n", err.msg);
		return -1;
	}
	int mul = layer_of(a, "Mul"), sg = layer_of(a, "StopGradient");
	int64_t saved = mul >= 0 ? abacus_analysis_layer(a, (size_t)mul)->saved_bytes : -1;
	CHECK((sg >= 0) == (domain != NULL));
	if (sg >= 0)
		CHECK_EQ_I64(abacus_analysis_layer(a, (size_t)sg)->saved_bytes, 0);
	abacus_analysis_free(a);
	abacus_graph_free(g);
	return saved;
}

void test_stop_gradient(void);
void test_stop_gradient(void)
{
	CHECK_EQ_I64(detached_product_saved("ai.abacus"), 2048);
	CHECK_EQ_I64(detached_product_saved(NULL), 4096);

	/* StopGradient in another domain is an unknown op: --strict names it. */
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8));
	tb_node_in(m, "com.example", "StopGradient", L("x"), L("y"));
	tb_output(m, "y");
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.strict = 1;
	abacus_graph *g;
	abacus_error err;
	CHECK(t_analyze_cfg(m, &cfg, &g, &err) == NULL);
	CHECK(err.code == ABACUS_EUNSUPPORTED && strstr(err.msg, "com.example.StopGradient") != NULL);
}

/* PyTorch's Concat hands each input a narrowed view of its output's gradient: the whole gradient lives
 * until the last part is consumed, and the parts are no tensors of their own. y = Concat(x·W1, x·W2) on
 * the last axis, x B×8×512, W1 and W2 512×32 (65,536 B each, so the peak is in the products' backward,
 * where both weight gradients are live), MSE. Per sample h = 8·32·4 = 1,024 B, y = 2,048 B. The products
 * run backward in reverse order, x·W2 first: at x·W1's the workspace holds MSE's unreduced error (Y: it
 * lives until the step, runtime_torch_cpu.c) and the concat's whole output gradient (Y), dh1 being a view
 * of it: 2Y, where parts of their own would hold Y + H. Measured 2026-12-06 with the allocator tracker
 * (this module in PyTorch 1.13.1, batch 2 and 16): peaks of 452,832 and 768,304 B, the simulation with
 * parts of their own 2.3 and 3.2 % below, with views 1.8 and 1.1 %. (TensorFlow's concat gradient is
 * sliced into tensors of their own: tf_grad_pass; its simulation of this graph did not move.) */
void test_concat_grad_is_narrowed(void);
void test_concat_grad_is_narrowed(void)
{
	for (int64_t batch = 2; batch <= 16; batch += 14) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 8, 512));
		tb_weight(m, "w1", D(512, 32));
		tb_weight(m, "w2", D(512, 32));
		tb_node(m, "MatMul", L("x", "w1"), L("h1"));
		tb_node(m, "MatMul", L("x", "w2"), L("h2"));
		tb_node(m, "Concat", L("h1", "h2"), L("y"));
		tb_attr_int(m, "axis", 2);
		tb_output(m, "y");
		ANALYZE_OR_RETURN(m, batch);
		int64_t Y = 2048 * batch; /* (parts of their own would hold Y + H, H = Y / 2) */
		CHECK_EQ_I64(abacus_analysis_memory(a)->workspace, 2 * Y);
		FREE_ANALYSIS();
	}
}

/* A split's parts get gradients of their own, which its backward concatenates into the whole (beside them
 * for a moment). h = x·W (x B×8×16, W 16×64: H = 2,048 B a sample), a, b = Split(h) (H/2 each), y =
 * Relu(a) + Sigmoid(b) (Y = H/2), MSE (its unreduced error, Y, lives until the step). Backward: dy (Y)
 * goes to both branches (the Add's buffer); the Sigmoid's makes db (H/2) while it keeps its output (H/2)
 * and the Relu its own (H/2); the Relu's makes da (H/2); at the split's backward the whole (H) joins the
 * parts (H): per sample 2.5H at either moment (error + dy + parts + the Relu's output; error + parts +
 * whole), the peak's growth with the batch. Giving the storage its whole gradient at the first part, as
 * before, made 3H. Measured 2026-12-06 with the allocator tracker on this module in PyTorch 1.13.1 (the
 * chunk of one product, relu + sigmoid, MSE; the input and target, 1,536 B a sample, in the peak too):
 * 6,598 and 6,656 B a sample from batch 2 to 16 and 16 to 64, against 2.5H + 1,536 = 6,656 (3H: 7,680). */
void test_split_part_grads(void);
void test_split_part_grads(void)
{
	int64_t above[2];
	for (int i = 0; i < 2; i++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 8, 16));
		tb_weight(m, "w", D(16, 64));
		tb_node(m, "MatMul", L("x", "w"), L("h"));
		tb_node(m, "Split", L("h"), L("a", "b"));
		tb_attr_int(m, "axis", 2);
		tb_node(m, "Relu", L("a"), L("ra"));
		tb_node(m, "Sigmoid", L("b"), L("sb"));
		tb_node(m, "Add", L("ra", "sb"), L("y"));
		tb_output(m, "y");
		ANALYZE_OR_RETURN(m, i ? 16 : 2);
		const abacus_memory *mem = abacus_analysis_memory(a);
		above[i] = mem->peak - mem->persistent;
		FREE_ANALYSIS();
	}
	int64_t H = 2048;
	CHECK_EQ_I64(above[1] - above[0], 14 * (5 * H / 2));
}

/* The simulated iteration step by step (abacus_analysis_memory_step): x (B×8×16, an input) · W (16×64) = h, y =
 * Relu(h), MSE. At batch 2 h and y are 4,096 B each; the runtime's autograd record per layer (node_bytes)
 * and saved-tensor handle (handle_bytes) are PyTorch 1.13's. Steps: MatMul's and Relu's forward, the loss,
 * Relu's and MatMul's backward, the optimizer step. MatMul's forward leaves h and its record (it saved x, an
 * input, and W). Relu's makes y and frees h (nothing saved h): its record and its handle on y stay. The loss
 * keeps its unreduced error (y's size) and makes dL/dy (y's size): +8,192 B. Relu's backward makes dL/dh
 * (+4,096 B at its peak) and releases y, dL/dy and its handle. The largest step peak is the memory's peak;
 * every step's peak is at least what it leaves live and what was live before it. */
void test_memory_timeline(void);
void test_memory_timeline(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 16));
	tb_weight(m, "w", D(16, 64));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "Relu", L("h"), L("y"));
	tb_output(m, "y");
	ANALYZE_OR_RETURN(m, 2);
	size_t n = abacus_analysis_n_memory_steps(a);
	CHECK(n == 6);
	CHECK(abacus_analysis_memory_step(a, n) == NULL);
	if (n == 6) {
		const abacus_memory_step *e[6];
		for (size_t i = 0; i < 6; i++)
			e[i] = abacus_analysis_memory_step(a, i);
		const abacus_phase want[6] = { ABACUS_PHASE_FORWARD, ABACUS_PHASE_FORWARD, ABACUS_PHASE_LOSS,
			                           ABACUS_PHASE_BACKWARD, ABACUS_PHASE_BACKWARD, ABACUS_PHASE_STEP };
		const int64_t layer[6] = { 0, 1, -1, 1, 0, -1 };
		int64_t top = 0;
		for (size_t i = 0; i < 6; i++) {
			CHECK(e[i]->phase == want[i]);
			CHECK_EQ_I64(e[i]->layer, layer[i]);
			CHECK(e[i]->peak >= e[i]->live);
			CHECK(i == 0 || e[i]->phase == ABACUS_PHASE_STEP || e[i]->peak >= e[i - 1]->live);
			top = e[i]->peak > top ? e[i]->peak : top;
		}
		const abacus_memory *mem = abacus_analysis_memory(a);
		CHECK_EQ_I64(top, mem->peak);
		int64_t rec = a->rt->step.node_bytes, handle = a->rt->step.handle_bytes;
		CHECK_EQ_I64(e[0]->live - mem->persistent, 4096 + rec);
		CHECK_EQ_I64(e[1]->live - e[0]->live, rec + handle);
		CHECK_EQ_I64(e[2]->live - e[1]->live, 8192);
		CHECK_EQ_I64(e[3]->peak - e[2]->live, 4096);
		CHECK_EQ_I64(e[3]->live - e[2]->live, 4096 - 8192 - handle);
		CHECK(!strcmp(abacus_phase_name(ABACUS_PHASE_BACKWARD), "backward"));
		CHECK(!strcmp(abacus_phase_name(ABACUS_PHASE_COUNT), "?"));
	}
	FREE_ANALYSIS();
}

/* What an activation keeps for its backward: PyTorch's ELU, SELU and CELU their input, ReLU its output
 * (measured with the allocator tracker: the comment at ELU's row in ops.c); TensorFlow's EluGrad the
 * output. h = x·W (B×8×64, 4,096 B at batch 2) is kept anyway by h·h; y = act(h); out = y + h·h. At the end
 * of the forward ReLU keeps y beside h, ELU nothing more: the saved bytes differ by y's 4,096 B (one saved
 * tensor each, so the same records and handles). */
static tb_model *act_model(const char *act)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 16));
	tb_weight(m, "w", D(16, 64));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "Mul", L("h", "h"), L("z"));
	tb_node(m, act, L("h"), L("y"));
	tb_node(m, "Add", L("y", "z"), L("out"));
	tb_output(m, "out");
	return m;
}

void test_elu_keeps_its_input(void);
void test_elu_keeps_its_input(void)
{
	static const char *const runtimes[3] = { "torch-1.13.1", "torch-2.15.0", "tf-2.21.0" };
	for (int r = 0; r < 3; r++) {
		int64_t saved[4];
		static const char *const acts[4] = { "Relu", "Elu", "Selu", "Celu" };
		for (int k = 0; k < 4; k++) {
			abacus_graph *g;
			abacus_error err;
			abacus_analysis *a = analyze_rt(act_model(acts[k]), 2, runtimes[r], &g, &err);
			CHECK(a != NULL);
			if (!a) {
				fprintf(stderr, "  analysis failed: %s\n", err.msg);
				return;
			}
			saved[k] = abacus_analysis_memory(a)->saved;
			int L = layer_of(a, acts[k]);
			CHECK(L >= 0);
			if (L >= 0 && k > 0 && r < 2)
				CHECK(a->costs[L].in_mask == 1 && a->costs[L].out_mask == 0);
			if (L >= 0 && k > 0 && k < 3 && r == 2)
				CHECK(a->costs[L].in_mask == 0 && a->costs[L].out_mask == 1);
			abacus_analysis_free(a);
			abacus_graph_free(g);
		}
		if (r < 2) {
			CHECK_EQ_I64(saved[0] - saved[1], 4096);
			CHECK_EQ_I64(saved[1], saved[2]);
			CHECK_EQ_I64(saved[1], saved[3]);
		} else {
			CHECK_EQ_I64(saved[0], saved[1]); /* TensorFlow: ELU keeps its output, as ReLU does */
		}
	}
}

/* A kernel that wants its output's gradient row-major copies it when the gradient arrives through a
 * permuted view (memory.c strided_grad_copies; measured with the allocator tracker: an embedding read
 * transposed by a convolution held one output more in its backward, 1.50 against 0.50 outputs). h = the
 * lookup of x (B×256 ids) in E (1024×64): B×256×64, 65,536 B a sample. Read transposed by a 1×1 convolution,
 * the lookup's backward holds that copy beside E's gradient; read by a product (row-major), not. The same
 * for a LayerNormalization of a product's output. TensorFlow has no views: no copy. */
static tb_model *strided_model(int norm, int transposed)
{
	tb_model *m = tb_new(17);
	if (norm) {
		tb_input(m, "x", D(-1, 256, 16));
		tb_weight(m, "w0", D(16, 64));
		tb_weight(m, "g", D(64));
		tb_weight(m, "b", D(64));
		tb_node(m, "MatMul", L("x", "w0"), L("p"));
		tb_node(m, "LayerNormalization", L("p", "g", "b"), L("h"));
		tb_attr_int(m, "axis", -1);
	} else {
		tb_input_typed(m, "x", 7, D(-1, 256));
		tb_weight(m, "e", D(1024, 64));
		tb_node(m, "Gather", L("e", "x"), L("h"));
	}
	if (transposed) {
		tb_weight(m, "wc", D(64, 64, 1));
		tb_node(m, "Transpose", L("h"), L("ht"));
		tb_attr_ints(m, "perm", 3, (const int64_t[]){ 0, 2, 1 });
		tb_node(m, "Conv", L("ht", "wc"), L("y"));
	} else {
		tb_weight(m, "w", D(64, 64));
		tb_node(m, "MatMul", L("h", "w"), L("y"));
	}
	tb_output(m, "y");
	return m;
}

/* What the backward of the first layer after the input (the lookup, or the LayerNormalization) holds above
 * what was live before it. */
static int64_t first_backward_extra(const abacus_analysis *a, const char *op)
{
	int L = layer_of(a, op);
	size_t n = abacus_analysis_n_memory_steps(a);
	for (size_t i = 1; i < n; i++) {
		const abacus_memory_step *e = abacus_analysis_memory_step(a, i);
		if (e->phase == ABACUS_PHASE_BACKWARD && e->layer == L)
			return e->peak - abacus_analysis_memory_step(a, i - 1)->live;
	}
	return -1;
}

void test_strided_grad_copies(void);
void test_strided_grad_copies(void)
{
	static const char *const runtimes[3] = { "torch-1.13.1", "torch-2.15.0", "tf-2.21.0" };
	for (int norm = 0; norm < 2; norm++)
		for (int r = 0; r < 3; r++) {
			int64_t extra[2];
			for (int tr = 0; tr < 2; tr++) {
				abacus_graph *g;
				abacus_error err;
				abacus_analysis *a = analyze_rt(strided_model(norm, tr), 2, runtimes[r], &g, &err);
				CHECK(a != NULL);
				if (!a) {
					fprintf(stderr, "  analysis failed: %s\n", err.msg);
					return;
				}
				extra[tr] = first_backward_extra(a, norm ? "LayerNormalization" : "Gather");
				CHECK(extra[tr] > 0);
				abacus_analysis_free(a);
				abacus_graph_free(g);
			}
			CHECK_EQ_I64(extra[1] - extra[0], r < 2 ? 2 * 65536 : 0);
		}
}

/* PyTorch 2.15's fused CPU LSTM (runtime.h rnn.lstm_fused, runtime_torch2_cpu.c has the fit): x [8, B, 16] →
 * LSTM, hidden 8 (W [1, 32, 16], R [1, 32, 8]), at batch 2: s·b = 16, M = max(8, 16) = 16. Kept for backward
 * beyond its outputs: 38.7·16·8 + 23.6·16·16 + 17,194 = 28,189.2 B; its forward's transient 16.4·16·8 +
 * 16.3·8·(8 + 16) + 123,888 = 129,116.8; its backward's 16.5·16·8 + 3.6·16·16 + 13.7·8·24 + 22.6·64 + 19,905 =
 * 27,015.4 (truncated to bytes). No per-step records, and for time one kernel, not eight steps; under 1.13 the
 * same layer keeps 30 B per hidden unit and sample (3,840) and 4,400 B of records per step (35,200). */
void test_torch2_fused_lstm(void);
void test_torch2_fused_lstm(void)
{
	for (int r = 0; r < 2; r++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = analyze_rt(lstm8(), 2, r ? "torch-2.15.0" : "torch-1.13.1", &g, &err);
		CHECK(a != NULL);
		if (!a) {
			fprintf(stderr, "  analysis failed: %s\n", err.msg);
			return;
		}
		int L = layer_of(a, "LSTM");
		CHECK(L >= 0);
		if (L >= 0 && r) {
			CHECK_EQ_I64(a->costs[L].extra_bytes, 28189);
			CHECK_EQ_I64(a->costs[L].fwd_workspace, 129116);
			CHECK_EQ_I64(a->costs[L].bwd_workspace, 27015);
			CHECK_EQ_I64(a->costs[L].graph_bytes, 0);
			CHECK_EQ_I64(a->costs[L].serial_steps, 1); /* one kernel for the one direction */
			CHECK_EQ_I64(a->costs[L].serial_flops, 0);
		} else if (L >= 0) {
			CHECK_EQ_I64(a->costs[L].extra_bytes, 3840 + 35200);
			CHECK_EQ_I64(a->costs[L].serial_steps, 8); /* a step at a time */
		}
		FREE_ANALYSIS();
	}
}

/* A VQ-like step whose codebook distances d = h·Wd (B × 4,096: 32,768 B at batch 2) feed only ArgMax, then
 * a lookup in 64 codes and an add (no gradient reaches Wd; the others' are 4 KiB at most). names[] gives
 * the nodes' names as PyTorch's exporter writes them: where the distances' MatMul is in a hand-written
 * forward's body (a scope with scopes below it), a Python name may hold d after ArgMax until that forward
 * returns (memory.c held_scopes). */
static tb_model *vq_like(const char *const names[4])
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16));
	tb_weight(m, "w", D(16, 16));
	tb_weight(m, "wd", D(16, 4096));
	tb_weight(m, "codes", D(64, 16));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_name(m, "/enc/MatMul");
	tb_node(m, "MatMul", L("h", "wd"), L("d"));
	tb_name(m, names[0]);
	tb_node(m, "ArgMax", L("d"), L("k"));
	tb_attr_int(m, "axis", 1);
	tb_attr_int(m, "keepdims", 0);
	tb_name(m, names[1]);
	tb_node(m, "Gather", L("codes", "k"), L("q"));
	tb_name(m, names[2]);
	tb_node(m, "Add", L("q", "h"), L("y"));
	tb_name(m, names[3]);
	tb_output(m, "y");
	return m;
}

/* The largest peak of the forward steps after ArgMax's, up to and including that of the layer whose node is
 * named `last`, from the simulated timeline. */
static int64_t forward_peak_after_argmax(const abacus_analysis *a, const char *last)
{
	int64_t best = 0;
	int after = 0;
	for (size_t i = 0; i < a->n_msteps; i++) {
		const abacus_memory_step *e = &a->msteps[i];
		if (e->phase != ABACUS_PHASE_FORWARD)
			continue;
		const ab_node *n = &a->g->nodes[a->layer_node[e->layer]];
		if (after && e->peak > best)
			best = e->peak;
		if (!strcmp(n->op, "ArgMax"))
			after = 1;
		if (after && !strcmp(n->name, last))
			break;
	}
	return best;
}

/* Held Python names (runtime.h step.eager_locals). The model's own body makes d ("/MatMul" beside the
 * modules "/enc", "/emb"): d stays held through the lookup and the add, so held_peak is the larger of the
 * peak and the largest forward step after ArgMax plus d's 32,768 B; the backward moves B × 16 tensors and
 * 4 KiB gradients, so that is above the peak. A body of its own ("/vq/...", ending with its lookup "/vq/emb/Gather") holds d
 * only until its lookup. Every operation in a module of its own (leaf scopes), TensorFlow's traced step and
 * nodes with no scope names hold nothing: held_peak = peak. */
void test_held_locals(void);
void test_held_locals(void)
{
	const int64_t D_BYTES = 2 * 4096 * 4;
	static const char *const root[4] = { "/MatMul", "/ArgMax", "/emb/Gather", "/Add" };
	static const char *const block[4] = { "/vq/MatMul", "/vq/ArgMax", "/vq/emb/Gather", "/Add" };
	static const char *const leaves[4] = { "/proj/MatMul", "/pick/ArgMax", "/emb/Gather", "/mix/Add" };
	static const char *const plain[4] = { "MatMul_1", "ArgMax_2", "Gather_3", "Add_4" };
	const struct { const char *const *names; const char *runtime; const char *held_until; } cases[] = {
		{ root, NULL, "/Add" }, { root, "torch-2.15.0", "/Add" }, { block, NULL, "/vq/emb/Gather" },
		{ root, "tf-2.21.0", NULL }, { leaves, NULL, NULL }, { plain, NULL, NULL },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = 2;
		cfg.runtime = cases[c].runtime;
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze_cfg(vq_like(cases[c].names), &cfg, &g, &err);
		CHECK(a != NULL);
		if (!a) {
			fprintf(stderr, "  analysis failed: %s\n", err.msg);
			continue;
		}
		const abacus_memory *mem = abacus_analysis_memory(a);
		if (cases[c].held_until) {
			int64_t fwd = forward_peak_after_argmax(a, cases[c].held_until) + D_BYTES;
			CHECK(fwd > mem->peak);
			CHECK_EQ_I64(mem->held_peak, fwd);
		} else {
			CHECK_EQ_I64(mem->held_peak, mem->peak);
		}
		FREE_ANALYSIS();
	}
}
