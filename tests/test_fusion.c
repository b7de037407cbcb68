/*
 * test_fusion.c — decomposed LayerNorm, GELU and SiLU (fusion.c) are priced as one kernel each, and only
 * when the pattern is complete and private; what dropout and products keep for backward.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "model.h"
#include "tests.h"

abacus_analysis *t_analyze(tb_model *m, int64_t batch, abacus_graph **g, abacus_error *err);

/* LayerNorm of x over its last axis as torch.onnx writes it at opset 14 (9 nodes with the affine
 * Mul/Add; weights two, eps, gamma, beta declared by the caller); the intermediates' names begin with p
 * (two LayerNorms in one graph need two prefixes). */
static void layer_norm_named(tb_model *m, const char *p, const char *x, const char *y)
{
	char n[8][16];
	static const char *suffix[8] = { "m1", "d", "p", "m2", "e", "s", "n", "g" };
	for (int i = 0; i < 8; i++)
		snprintf(n[i], sizeof n[i], "%s%s", p, suffix[i]);
	tb_node(m, "ReduceMean", L(x), L(n[0]));
	tb_attr_ints(m, "axes", D(-1));
	tb_node(m, "Sub", L(x, n[0]), L(n[1]));
	tb_node(m, "Pow", L(n[1], "two"), L(n[2]));
	tb_node(m, "ReduceMean", L(n[2]), L(n[3]));
	tb_attr_ints(m, "axes", D(-1));
	tb_node(m, "Add", L(n[3], "eps"), L(n[4]));
	tb_node(m, "Sqrt", L(n[4]), L(n[5]));
	tb_node(m, "Div", L(n[1], n[5]), L(n[6]));
	tb_node(m, "Mul", L(n[6], "gamma"), L(n[7]));
	tb_node(m, "Add", L(n[7], "beta"), L(y));
}

static void layer_norm(tb_model *m, const char *x, const char *y) /* (intermediate names fixed) */
{
	layer_norm_named(m, "", x, y);
}

/* x: batch×16×32. LayerNorm over the last axis as torch.onnx writes it at opset 14 (9 nodes with the
 * affine Mul/Add), then GELU (5 nodes), then SiLU (2 nodes), then a gate that is not a SiLU (Sigmoid of
 * another tensor). With `leak`, an extra Relu reads the LayerNorm's variance + eps, which PyTorch's
 * fused kernel would never expose: that LayerNorm must stay unfused. */
static tb_model *block(int leak)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16, 32));
	tb_weight(m, "two", D(1));
	tb_weight(m, "eps", D(1));
	tb_weight(m, "gamma", D(32));
	tb_weight(m, "beta", D(32));
	tb_weight(m, "sqrt2", D(1));
	tb_weight(m, "one", D(1));
	tb_weight(m, "half", D(1));
	layer_norm(m, "x", "y1");
	tb_node(m, "Div", L("y1", "sqrt2"), L("v"));
	tb_node(m, "Erf", L("v"), L("er"));
	tb_node(m, "Add", L("er", "one"), L("a1"));
	tb_node(m, "Mul", L("y1", "a1"), L("mm"));
	tb_node(m, "Mul", L("mm", "half"), L("y2"));
	tb_node(m, "Sigmoid", L("y2"), L("sg"));
	tb_node(m, "Mul", L("y2", "sg"), L("y3"));
	tb_node(m, "Sigmoid", L("y3"), L("sg2"));
	tb_node(m, "Mul", L("y1", "sg2"), L("q"));
	tb_output(m, "q");
	if (leak) {
		tb_node(m, "Relu", L("e"), L("r"));
		tb_output(m, "r");
	}
	return m;
}

void test_fusion_patterns(void);
void test_fusion_patterns(void)
{
	for (int leak = 0; leak < 2; leak++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(block(leak), 2, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		/* LayerNorm: 8 of its 9 nodes fused (the final Add is the kernel); GELU 4 of 5; SiLU 1 of 2. */
		CHECK_EQ_I64((int64_t)a->fused_layers, leak ? 4 + 1 : 8 + 4 + 1);
		size_t n;
		const abacus_layer *Ls = abacus_analysis_layers(a, &n);
		/* The non-SiLU gate (the last Sigmoid and the last Mul) keeps both its nodes. */
		size_t last_mul = n, last_sig = n;
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(Ls[i].op, "Mul"))
				last_mul = i;
			if (!strcmp(Ls[i].op, "Sigmoid"))
				last_sig = i;
		}
		int q_kernel = last_mul < n && a->layer_view[last_mul] == AB_LAYER_KERNEL;
		int sig2_kernel = last_sig < n && a->layer_view[last_sig] == AB_LAYER_KERNEL;
		CHECK(q_kernel && sig2_kernel);
		/* The time terms drop exactly the fused layers and their bytes. */
		double t[AB_TIME_TERMS];
		ab_time_terms(t, a, 1);
		const abacus_totals *T = abacus_analysis_totals(a);
		double kernels = 0, all = 0;
		for (size_t i = 0; i < n; i++) {
			if (a->layer_view[i] == AB_LAYER_VIEW || a->layer_view[i] == AB_LAYER_FREE)
				continue;
			all += ab_layer_dispatch(a, i);
			kernels += a->layer_view[i] == AB_LAYER_KERNEL ? ab_layer_dispatch(a, i) : 0;
		}
		CHECK(t[AB_TERM_KERNELS] == kernels);
		CHECK(kernels < all);
		CHECK(a->fused_bytes > 0 &&
		      t[AB_TERM_ACT_BYTES] == (double)T->bytes_read + (double)T->bytes_written - a->view_bytes - a->free_bytes - a->fused_bytes - a->weight_bytes);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* x → MatMul(W1) → h (batch×64) → decomposed `kind` (0 GELU, 1 SiLU, 2 LayerNorm, 3 Mish, 4 GroupNorm
 * with 8 groups: Reshape → InstanceNormalization → Reshape → Mul γ → Add β; and single nodes, 5 Tanh,
 * 6 PRelu with a slope per feature, 7 Relu) → y → MatMul(W2).
 * PyTorch keeps h for the activation's backward and y for the second product's: 2 × batch × 64 × 4
 * bytes, whatever the decomposition's intermediates (which it never materialises), and a norm its rows'
 * statistics. Autograd records
 * (tests.h REC): the Nodes of the two products and of the pattern's kernel (its last node; the fused
 * members make none), and the handles of h (kept by the pattern) and y (by the second product). */
static tb_model *act_between(int kind)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16));
	tb_weight(m, "W1", D(16, 64));
	tb_weight(m, "W2", D(64, 8));
	tb_node(m, "MatMul", L("x", "W1"), L("h"));
	if (kind == 0) {
		tb_weight(m, "sqrt2", D(1));
		tb_weight(m, "one", D(1));
		tb_weight(m, "half", D(1));
		tb_node(m, "Div", L("h", "sqrt2"), L("v"));
		tb_node(m, "Erf", L("v"), L("er"));
		tb_node(m, "Add", L("er", "one"), L("a1"));
		tb_node(m, "Mul", L("h", "a1"), L("mm"));
		tb_node(m, "Mul", L("mm", "half"), L("y"));
	} else if (kind == 1) {
		tb_node(m, "Sigmoid", L("h"), L("sg"));
		tb_node(m, "Mul", L("h", "sg"), L("y"));
	} else if (kind == 2) {
		tb_weight(m, "two", D(1));
		tb_weight(m, "eps", D(1));
		tb_weight(m, "gamma", D(64));
		tb_weight(m, "beta", D(64));
		layer_norm(m, "h", "y");
	} else if (kind == 3) {
		tb_node(m, "Softplus", L("h"), L("sp"));
		tb_node(m, "Tanh", L("sp"), L("th"));
		tb_node(m, "Mul", L("h", "th"), L("y"));
	} else if (kind == 5) {
		tb_node(m, "Tanh", L("h"), L("y"));
	} else if (kind == 6) {
		tb_weight(m, "slope", D(64));
		tb_node(m, "PRelu", L("h", "slope"), L("y"));
	} else if (kind == 7) {
		tb_node(m, "Relu", L("h"), L("y"));
	} else if (kind == 8) {
		tb_ints(m, "axis", 1, (const int64_t[]){ 1 });
		tb_node(m, "CumSum", L("h", "axis"), L("y"));
	} else {
		tb_ints(m, "grouped", 3, (const int64_t[]){ 0, 8, 8 });
		tb_ints(m, "flat", 2, (const int64_t[]){ 0, 64 });
		tb_weight(m, "ones", D(8));
		tb_weight(m, "zeros", D(8));
		tb_weight(m, "gamma", D(64));
		tb_weight(m, "beta", D(64));
		tb_node(m, "Reshape", L("h", "grouped"), L("hg"));
		tb_node(m, "InstanceNormalization", L("hg", "ones", "zeros"), L("ng"));
		tb_node(m, "Reshape", L("ng", "flat"), L("n"));
		tb_node(m, "Mul", L("n", "gamma"), L("ny"));
		tb_node(m, "Add", L("ny", "beta"), L("y"));
	}
	tb_node(m, "MatMul", L("y", "W2"), L("out"));
	tb_output(m, "out");
	return m;
}

void test_fusion_memory(void);
void test_fusion_memory(void)
{
	for (int kind = 0; kind < 5; kind++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(act_between(kind), 4, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		const abacus_memory *M = abacus_analysis_memory(a);
		if (getenv("ABACUS_TEST_VERBOSE"))
			printf("  kind %d: saved %lld\n", kind, (long long)M->saved);
		/* GroupNorm's two Reshapes are views outside the fused members and keep a Node each, though
		 * PyTorch runs F.group_norm as one operation without them (reported with the records rule). */
		int64_t reshapes = kind == 4 ? REC(2, 0) : 0;
		/* The norms' kernels keep a mean and a reciprocal deviation (floats) per row for their backward:
		 * LayerNorm's 4 rows, GroupNorm's 4 × 8 groups (measured on a generated CNN's LayerNorm2d:
		 * runtime_torch_fusion.c layer_norm). */
		int64_t stats = kind == 2 ? 2 * 4 * 4 : kind == 4 ? 2 * 4 * 4 * 8 : 0;
		CHECK_EQ_I64(M->saved, 2 * 4 * 64 * 4 + REC(3, 2) + reshapes + stats);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* Time term 16, activation arithmetic beyond a ReLU's: per element of h (batch 4 × 64 = 256), GELU 0.9 ns,
 * SiLU 0.8, Mish 14.3 (its Softplus and Tanh fused, not charged again), Tanh 2.1, PRelu 5.3, CumSum along
 * the innermost axis 3.5; LayerNorm its 4 rows of 64 at 30 ns (test_layernorm_rows); GroupNorm and ReLU
 * nothing. The layer shares (ab_layer_time_weight) carry it. */
void test_activation_arith(void);
void test_activation_arith(void)
{
	static const double ns[9] = { 0.9, 0.8, 4 * 30.0 / 256, 14.3, 0, 2.1, 5.3, 0, 3.5 };
	ab_model mod;
	memset(&mod, 0, sizeof mod);
	mod.coef[0][AB_TERM_ARITH] = 1;
	for (int kind = 0; kind < 9; kind++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(act_between(kind), 4, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		double t[AB_TIME_TERMS], layers = 0;
		ab_time_terms(t, a, 1);
		for (size_t i = 0; i < a->n_layers; i++)
			layers += ab_layer_time_weight(&mod, 0, a, i, 1);
		if (getenv("ABACUS_TEST_VERBOSE"))
			printf("  kind %d: term 16 %.3f ns\n", kind, t[AB_TERM_ARITH]);
		CHECK(fabs(t[AB_TERM_ARITH] - ns[kind] * 256) < 1e-9);
		CHECK(fabs(layers - t[AB_TERM_ARITH]) < 1e-9);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* A CumSum's arithmetic by how far apart its scanned elements lie (inner: the product of the dimensions after
 * the axis) and how many steps it walks (runtime_torch_cpu.c): x is [batch, scan, inner], batch 2, so the
 * term is ns × 2 × scan × inner. Inner 64: 3.5 ns; inner 4096 along 128 steps: 8; along 512 (a page apart,
 * one 256 beyond 256): 8 + 7.5 = 15.5; along 1024: 8 + 7.5 × 2 (the cap) = 23, not 8 + 7.5 × 3; inner 256
 * along 1024 (under a page): 8; axis -2 is axis 1; an axis that is a graph input (no known value): 8. */
void test_cumsum_scan_classes(void);
void test_cumsum_scan_classes(void)
{
	static const struct { int64_t scan, inner, axis; int axis_input; double ns; } cs[] = {
		{ 128, 64, 1, 0, 3.5 }, { 128, 4096, 1, 0, 8 }, { 512, 4096, 1, 0, 15.5 }, { 1024, 1024, 1, 0, 23 },
		{ 1024, 256, 1, 0, 8 }, { 512, 4096, -2, 0, 15.5 }, { 64, 16, 1, 1, 8 },
	};
	for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, cs[k].scan, cs[k].inner));
		if (cs[k].axis_input)
			tb_input(m, "ax", D(1));
		else
			tb_ints(m, "ax", 1, &cs[k].axis);
		tb_node(m, "CumSum", L("x", "ax"), L("c"));
		tb_output(m, "c");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(m, 2, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		double t[AB_TIME_TERMS];
		ab_time_terms(t, a, 1);
		double want = cs[k].ns * 2 * (double)cs[k].scan * (double)cs[k].inner;
		if (fabs(t[AB_TERM_ARITH] - want) > 1e-6 * want)
			printf("  case %zu: term %.6g ns, want %.6g\n", k, t[AB_TERM_ARITH], want);
		CHECK(fabs(t[AB_TERM_ARITH] - want) <= 1e-6 * want);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* Windowed pooling's arithmetic per output element (runtime_torch_cpu.c): 10 ns, plus 1.6 per window element
 * of a max pooling, 0.64 of an average one; a global pooling nothing. At batch 2 on a 4×8×8 map: MaxPool
 * 3×3 stride 2 pad 1 → 2×4×4×4 = 128 outputs × (10 + 9 × 1.6) = 3,123.2 ns; AveragePool 2×2 stride 2 → 128 ×
 * (10 + 4 × 0.64) = 1,607.68; GlobalAveragePool 0. TensorFlow's runtime prices none of them (its pooling is
 * oneDNN's). */
static tb_model *pools(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 4, 8, 8));
	tb_node(m, "MaxPool", L("x"), L("p"));
	tb_attr_ints(m, "kernel_shape", D(3, 3));
	tb_attr_ints(m, "strides", D(2, 2));
	tb_attr_ints(m, "pads", D(1, 1, 1, 1));
	tb_node(m, "AveragePool", L("x"), L("r"));
	tb_attr_ints(m, "kernel_shape", D(2, 2));
	tb_attr_ints(m, "strides", D(2, 2));
	tb_node(m, "GlobalAveragePool", L("x"), L("s"));
	tb_output(m, "p");
	tb_output(m, "r");
	tb_output(m, "s");
	return m;
}

void test_pool_arith(void);
void test_pool_arith(void)
{
	static const double want[2][3] = { { 3123.2, 1607.68, 0 }, { 0, 0, 0 } };
	static const char *const runtimes[2] = { NULL, "tf-2.21.0" };
	for (int r = 0; r < 2; r++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze_runtime(pools(), 2, runtimes[r], &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		CHECK_EQ_I64(a->n_layers, 3);
		for (size_t i = 0; i < a->n_layers && i < 3; i++)
			CHECK(fabs(ab_layer_arith(a, i) - want[r][i]) < 1e-9);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* x → MatMul(W1) → h (batch×64) → Dropout(ratio, training_mode) → d → Mul(d, constant) → e → MatMul(W2).
 * On the CPU PyTorch's dropout keeps a float32 mask (noise = bernoulli_, x * noise), not the graph's
 * bool output; with p = 0 or without training it returns its input, a view that keeps nothing; a product
 * with a constant keeps only the constant. Saved: the mask (when dropping) and e, batch × 64 × 4 bytes each.
 * Autograd records (tests.h REC): a Node for each of the two products, the Mul by the constant and a Dropout
 * that drops (its multiply by the noise), and one handle, e's in the second product (the mask is an extra
 * buffer, not a saved activation; the constant and x are no activations). A Dropout that returns its input
 * (p = 0, or not training) is no operation to autograd: a view layer without a Node. */
static tb_model *dropout_between(double ratio, int training_input)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16));
	tb_weight(m, "W1", D(16, 64));
	tb_weight(m, "W2", D(64, 8));
	tb_scalar(m, "ratio", 1, ratio);
	tb_scalar(m, "training", 9, 1);
	tb_ints(m, "two", 1, (const int64_t[]){ 2 });
	tb_node(m, "Cast", L("two"), L("scale")); /* a folded constant, as exporters make them (not a parameter) */
	tb_attr_int(m, "to", 1);
	tb_node(m, "MatMul", L("x", "W1"), L("h"));
	if (training_input)
		tb_node(m, "Dropout", L("h", "ratio", "training"), L("d", "mask"));
	else
		tb_node(m, "Dropout", L("h", "ratio"), L("d", "mask"));
	tb_node(m, "Mul", L("d", "scale"), L("e"));
	tb_node(m, "MatMul", L("e", "W2"), L("out"));
	tb_output(m, "out");
	return m;
}

void test_dropout_memory(void);
void test_dropout_memory(void)
{
	static const struct {
		double ratio;
		int training_input;
		int64_t saved;  /* in units of batch × 64 × 4 bytes */
		int view;       /* the Dropout layer is a view */
	} cases[] = { { 0.1, 1, 2, 0 }, { 0.0, 1, 1, 1 }, { 0.1, 0, 1, 1 } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(dropout_between(cases[i].ratio, cases[i].training_input), 4, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		const abacus_memory *M = abacus_analysis_memory(a);
		if (getenv("ABACUS_TEST_VERBOSE"))
			printf("  case %zu: saved %lld\n", i, (long long)M->saved);
		/* The products' and the Mul's Nodes and e's handle; the Dropout's Node where it drops. */
		CHECK_EQ_I64(M->saved, cases[i].saved * 4 * 64 * 4 + REC(3, 1) + (cases[i].view ? 0 : REC(1, 0)));
		size_t n;
		const abacus_layer *l = abacus_analysis_layers(a, &n);
		CHECK(n == 4);
		if (n == 4) {
			CHECK(!strcmp(l[1].op, "Dropout"));
			CHECK(!strcmp(l[2].op, "Mul"));
		}
		if (n == 4) {
			CHECK_EQ_I64(l[1].forward_flops, cases[i].view ? 0 : 3 * 4 * 64);
			CHECK_EQ_I64(l[1].saved_bytes, cases[i].view ? 0 : 4 * 64 * 4);
			CHECK_EQ_I64(l[2].saved_bytes, 0); /* the Mul by a constant */
		}
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* Add(b, MatMul(x, W)) with b a 1-D weight is a Linear on a 3-D input, which PyTorch runs as the product
 * and an in-place `add_(bias)`: a view of the product (fusion.c). x B×4×16, W 16×32, then y·W2 (32×8):
 * the Add is a view layer, y shares the product's storage, and the second product keeps y alone
 * (batch 2: 2 × 4 × 32 × 4 = 1024 bytes saved). Autograd records (tests.h REC): the Nodes of both products
 * and of the in-place add_ (a view layer, one AddBackward), and the second product's handle on y. */
void test_bias_epilogue(void);
void test_bias_epilogue(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 4, 16));
	tb_weight(m, "W", D(16, 32));
	tb_weight(m, "b", D(32));
	tb_weight(m, "W2", D(32, 8));
	tb_node(m, "MatMul", L("x", "W"), L("p"));
	tb_node(m, "Add", L("b", "p"), L("y"));
	tb_node(m, "MatMul", L("y", "W2"), L("out"));
	tb_output(m, "out");
	abacus_graph *g;
	abacus_error err;
	abacus_analysis *a = t_analyze(m, 2, &g, &err);
	CHECK(a != NULL);
	if (!a)
		return;
	CHECK(a->n_layers == 3);
	if (a->n_layers == 3) {
		CHECK(a->layer_view[1] == AB_LAYER_VIEW);
		CHECK(a->view_layers == 1);
	}
	CHECK_EQ_I64(abacus_analysis_memory(a)->saved, 1024 + REC(3, 1));
	CHECK_EQ_I64(abacus_analysis_totals(a)->params, 16 * 32 + 32 + 32 * 8);
	abacus_analysis_free(a);
	abacus_graph_free(g);
}

/* A [batch, 8, 6, 6] input "x", a LayerNorm's constants and affine weights over 8 channels (layer_norm_named's
 * "two", "eps", "gamma", "beta"), and a 1×1 convolution's weight "w": the LayerNorm2d tests' model. */
static tb_model *ln2d_model(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 6, 6));
	tb_weight(m, "two", D(1));
	tb_weight(m, "eps", D(1));
	tb_weight(m, "gamma", D(8));
	tb_weight(m, "beta", D(8));
	tb_weight(m, "w", D(8, 8, 1, 1));
	return m;
}

/* LayerNorm2d as torch.onnx writes it: permute x to channels-last (`p`_in), LayerNorm over the channels
 * (layer_norm_named with prefix `p`, into `p`_out), permute back into y. */
static void layer_norm_2d(tb_model *m, const char *p, const char *x, const char *y)
{
	char t[16], n[16];
	snprintf(t, sizeof t, "%s_in", p);
	snprintf(n, sizeof n, "%s_out", p);
	tb_node(m, "Transpose", L(x), L(t));
	tb_attr_ints(m, "perm", D(0, 2, 3, 1));
	layer_norm_named(m, p, t, n);
	tb_node(m, "Transpose", L(n), L(y));
	tb_attr_ints(m, "perm", D(0, 3, 1, 2));
}

/* Two LayerNorm2d (permute to NHWC, LayerNorm over the 8 channels, permute back) on a [2, 8, 6, 6] map, a
 * 1×1 convolution between. The first reads a permuted NCHW map: its kernel works on a row-major copy of it
 * (2 × 8 × 36 floats = 2304 bytes), forward and backward; the second's input is the convolution's output,
 * channels-last after the first's permute back, so its permute is row-major and nothing is copied. Each
 * kernel keeps its 72 rows' mean and reciprocal deviation, 576 bytes (runtime_torch_fusion.c layer_norm). */
void test_layernorm2d_copies(void);
void test_layernorm2d_copies(void)
{
	tb_model *m = ln2d_model();
	layer_norm_2d(m, "a", "x", "z1");
	tb_node(m, "Conv", L("z1", "w"), L("c"));
	layer_norm_2d(m, "b", "c", "out");
	tb_output(m, "out");
	abacus_graph *g;
	abacus_error err;
	abacus_analysis *a = t_analyze(m, 2, &g, &err);
	CHECK(a != NULL);
	if (!a)
		return;
	int copies = 0, kernels = 0;
	int64_t copied = 0;
	for (size_t l = 0; l < a->n_layers; l++) {
		if (a->layer_view[l] != AB_LAYER_KERNEL || strcmp(a->g->nodes[a->layer_node[l]].op, "Add") ||
		    a->costs[l].extra_bytes != 2 * 4 * 72)
			continue;
		kernels++;
		copies += a->costs[l].row_major_copy > 0;
		copied += a->costs[l].row_major_copy;
	}
	CHECK_EQ_I64(kernels, 2);
	CHECK_EQ_I64(copies, 1);
	CHECK_EQ_I64(copied, 2 * 8 * 36 * 4);
	abacus_analysis_free(a);
	abacus_graph_free(g);
}

/* ReLU, then Pad (zeros, 1 each side of the 6×6 map) → AveragePool 3×3: the exporter's spelling of an
 * AvgPool2d with padding, one avg_pool2d in PyTorch that never makes the padded tensor (runtime_torch_fusion.c
 * pool_padding): the Pad is a view, and the simulated peak is the padded tensor lower. A Pad with another
 * value, or one that something else reads too, is a tensor of its own. */
static tb_model *pad_pool(int value, int shared)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 6, 6));
	tb_weight(m, "w", D(8, 8, 1, 1));
	tb_ints(m, "pads", 8, (const int64_t[]){ 0, 0, 1, 1, 0, 0, 1, 1 });
	tb_scalar(m, "cv", 1, value);
	tb_node(m, "Conv", L("x", "w"), L("c"));
	tb_node(m, "Relu", L("c"), L("r"));
	tb_node(m, "Pad", L("r", "pads", "cv"), L("p"));
	tb_node(m, "AveragePool", L("p"), L("y"));
	tb_attr_ints(m, "kernel_shape", D(3, 3));
	tb_output(m, "y");
	if (shared) {
		tb_node(m, "Relu", L("p"), L("z"));
		tb_output(m, "z");
	}
	return m;
}

void test_pad_pool_view(void);
void test_pad_pool_view(void)
{
	int64_t peak[3] = { 0, 0, 0 }, saved[3] = { 0, 0, 0 };
	for (int k = 0; k < 3; k++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(pad_pool(k == 1, k == 2), 2, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		int pad_view = -1;
		for (size_t l = 0; l < a->n_layers; l++)
			if (!strcmp(a->g->nodes[a->layer_node[l]].op, "Pad"))
				pad_view = a->layer_view[l] == AB_LAYER_VIEW;
		CHECK_EQ_I64(pad_view, k == 0);
		const abacus_memory *M = abacus_analysis_memory(a);
		peak[k] = M->peak;
		saved[k] = M->saved;
		if (getenv("ABACUS_TEST_VERBOSE"))
			printf("  case %d: peak %lld saved %lld activations %lld workspace %lld\n", k, (long long)M->peak,
			       (long long)M->saved, (long long)M->activations, (long long)M->workspace);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
	/* The padded map, 2 × 8 × 8 × 8 floats, is no longer kept beside the ReLU's output (saved), and the pool's
	 * backward makes the gradient of the 6×6 map, not of the padded 8×8 one (the peak, in the backward). */
	CHECK_EQ_I64(saved[1] - saved[0], 2 * 8 * 8 * 8 * 4);
	CHECK_EQ_I64(peak[1] - peak[0], 2 * 8 * 8 * 8 * 4 + 2 * 8 * (8 * 8 - 6 * 6) * 4);
	CHECK(peak[2] > peak[0]);
}

/* Conv, LayerNorm2d (permute, LayerNorm, permute back), ReLU, Conv on a [2, 8, 6, 6] map, the ReLU named as
 * torch.onnx names a module's node. With the exporter's abacus.inplace_views naming it, the ReLU ran in place
 * on the permute's view: its backward goes through PyTorch's CopySlices and holds two more maps (2 × 8 × 36
 * floats each) than an out-of-place ReLU's (measured 2026-12-07 with the allocator tracker, ReLU, ReLU6,
 * SiLU, Mish, Hardswish: 3 maps against 1; docs/COSTS.md). TensorFlow's graphs run nothing in place
 * (its runtime: none). A name that is no node of the graph is ignored. Returns the largest peak of the ReLU's
 * backward step. */
static int64_t relu_backward_peak(const char *inplace_views, const char *runtime)
{
	tb_model *m = ln2d_model();
	tb_weight(m, "w2", D(8, 8, 1, 1));
	tb_node(m, "Conv", L("x", "w"), L("c"));
	layer_norm_2d(m, "a", "c", "z1");
	tb_node(m, "Relu", L("z1"), L("r"));
	tb_name(m, "/stages/stages.0/body.2/Relu");
	tb_node(m, "Conv", L("r", "w2"), L("out"));
	tb_output(m, "out");
	if (inplace_views)
		tb_meta(m, "abacus.inplace_views", inplace_views);
	abacus_graph *g;
	abacus_error err;
	abacus_analysis *a = t_analyze_runtime(m, 2, runtime, &g, &err);
	CHECK(a != NULL);
	if (!a)
		return -1;
	int64_t peak = -1;
	for (size_t i = 0; i < abacus_analysis_n_memory_steps(a); i++) {
		const abacus_memory_step *s = abacus_analysis_memory_step(a, i);
		if (s->phase == ABACUS_PHASE_BACKWARD && s->layer >= 0 &&
		    !strcmp(a->g->nodes[a->layer_node[s->layer]].op, "Relu") && s->peak > peak)
			peak = s->peak;
	}
	abacus_analysis_free(a);
	abacus_graph_free(g);
	return peak;
}

void test_inplace_view_backward(void);
void test_inplace_view_backward(void)
{
	int64_t plain = relu_backward_peak(NULL, NULL);
	CHECK(plain > 0);
	CHECK_EQ_I64(relu_backward_peak("/stages/stages.0/body.2/Relu", NULL) - plain, 2 * (2 * 8 * 36 * 4));
	CHECK_EQ_I64(relu_backward_peak("/other/Relu,/stages/stages.0/body.2/Relu,", NULL) - plain, 2 * (2 * 8 * 36 * 4));
	CHECK_EQ_I64(relu_backward_peak("/stages/stages.0/body.2", NULL), plain);
	CHECK_EQ_I64(relu_backward_peak("", NULL), plain);
	CHECK_EQ_I64(relu_backward_peak("/stages/stages.0/body.2/Relu", "tf-2.21.0"), relu_backward_peak(NULL, "tf-2.21.0"));
}

/* A LayerNorm's rows (runtime.h AB_TORCH_LN_ARITH, ab_ln_arith_ns): x [2, 3, n] normalised over its last axis,
 * 6 rows of n. The arithmetic term is 6 × 30 ns for n a multiple of 8, 6 × 150 otherwise in 1.13 (a row of 6,
 * 12 or 100), and in 2.15 6 × 90 for 6 only (its slow path takes rows under 8); the decomposed LayerNorm and
 * the ONNX LayerNormalization op price alike, and TensorFlow not at all. */
void test_layernorm_rows(void);
void test_layernorm_rows(void)
{
	static const struct { int64_t n; const char *rt; double ns; } cs[] = {
		{ 8, NULL, 30 },   { 16, NULL, 30 },  { 6, NULL, 150 }, { 12, NULL, 150 }, { 100, NULL, 150 },
		{ 6, "torch-2.15.0", 90 }, { 12, "torch-2.15.0", 30 }, { 100, "torch-2.15.0", 30 }, { 6, "tf-2.21.0", 0 },
	};
	for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++)
		for (int onnx_op = 0; onnx_op < 2; onnx_op++) {
			tb_model *m = tb_new(onnx_op ? 17 : 14);
			tb_input(m, "x", D(-1, 3, cs[k].n));
			tb_weight(m, "two", D(1));
			tb_weight(m, "eps", D(1));
			tb_weight(m, "gamma", D(cs[k].n));
			tb_weight(m, "beta", D(cs[k].n));
			if (onnx_op) {
				tb_node(m, "LayerNormalization", L("x", "gamma", "beta"), L("y"));
				tb_attr_int(m, "axis", -1);
			} else {
				layer_norm(m, "x", "y");
			}
			tb_output(m, "y");
			abacus_graph *g;
			abacus_error err;
			abacus_analysis *a = t_analyze_runtime(m, 2, cs[k].rt, &g, &err);
			CHECK(a != NULL);
			if (!a) {
				fprintf(stderr, "  %s\n", err.msg);
				continue;
			}
			double t[AB_TIME_TERMS];
			ab_time_terms(t, a, 1);
			if (fabs(t[AB_TERM_ARITH] - 6 * cs[k].ns) > 1e-6)
				fprintf(stderr, "  n %lld %s %s: %.3f ns, want %.3f\n", (long long)cs[k].n,
				        cs[k].rt ? cs[k].rt : "torch-1.13.1", onnx_op ? "LayerNormalization" : "decomposed",
				        t[AB_TERM_ARITH], 6 * cs[k].ns);
			CHECK(fabs(t[AB_TERM_ARITH] - 6 * cs[k].ns) < 1e-6);
			abacus_analysis_free(a);
			abacus_graph_free(g);
		}
}
