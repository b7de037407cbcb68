/*
 * test_ops.c — hand-derived shapes, FLOPs and parameter counts on small graphs built in memory.
 * Every expected number is worked out in the comment beside it; 1 multiply-add = 2 FLOPs.
 */
#include <math.h>
#include <stdlib.h>

#include "analysis.h"
#include "model.h"
#include "runtime.h"
#include "tests.h"

abacus_analysis *t_analyze(tb_model *m, int64_t batch, abacus_graph **g, abacus_error *err)
{
	return t_analyze_runtime(m, batch, NULL, g, err);
}

abacus_analysis *t_analyze_runtime(tb_model *m, int64_t batch, const char *runtime, abacus_graph **g, abacus_error *err)
{
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = batch;
	cfg.runtime = runtime;
	return t_analyze_cfg(m, &cfg, g, err);
}

abacus_analysis *t_analyze_cfg(tb_model *m, const abacus_config *cfg, abacus_graph **g, abacus_error *err)
{
	uint8_t *buf;
	size_t len;
	tb_pack(m, &buf, &len);
	tb_free(m);
	*g = NULL;
	int rc = abacus_graph_load(g, buf, len, err);
	free(buf);
	if (rc)
		return NULL;
	abacus_analysis *a = NULL;
	if (abacus_analyze(&a, *g, cfg, err)) {
		abacus_graph_free(*g);
		*g = NULL;
		return NULL;
	}
	return a;
}

const abacus_layer *t_layer(const abacus_analysis *a, const char *op)
{
	size_t n;
	const abacus_layer *L = abacus_analysis_layers(a, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(L[i].op, op))
			return &L[i];
	return NULL;
}

#define ANALYZE(m, batch)                                                                   \
	abacus_graph *g;                                                                        \
	abacus_error err;                                                                       \
	abacus_analysis *a = t_analyze((m), (batch), &g, &err);                                 \
	if (!a) {                                                                               \
		fprintf(stderr, "  analysis failed: %s\n", err.msg);                                \
		t_failed_checks++;                                                                  \
		return;                                                                             \
	}
#define DONE()                                                                              \
	abacus_analysis_free(a);                                                                \
	abacus_graph_free(g)

/* Conv 8→16 channels, group 2, 3×3, stride 2, pad 1, dilation 2 on 2×8×32×32 (batch 2).
 * Output: (32 + 1 + 1 − 2·(3−1) − 1)/2 + 1 = 29/2 + 1 = 15 → 2×16×15×15.
 * MACs = 2·16·15·15 outputs × (8/2)·3·3 = 7200 × 36 = 259200 → 518400 FLOPs, plus bias 7200 = 525600.
 * Backward: the graph input needs no gradient, so only dW (518400) and db (7200).
 * Params: 16·4·3·3 + 16 = 592. */
void test_conv_grouped_strided_dilated(void);
void test_conv_grouped_strided_dilated(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 32, 32));
	tb_weight(m, "w", D(16, 4, 3, 3));
	tb_weight(m, "b", D(16));
	tb_node(m, "Conv", L("x", "w", "b"), L("y"));
	tb_attr_int(m, "group", 2);
	tb_attr_ints(m, "strides", D(2, 2));
	tb_attr_ints(m, "pads", D(1, 1, 1, 1));
	tb_attr_ints(m, "dilations", D(2, 2));
	tb_output(m, "y");
	ANALYZE(m, 2);
	const abacus_layer *c = t_layer(a, "Conv");
	CHECK(c != NULL);
	if (c) {
		CHECK_EQ_I64(c->rank, 4);
		CHECK_EQ_I64(c->dims[0], 2);
		CHECK_EQ_I64(c->dims[1], 16);
		CHECK_EQ_I64(c->dims[2], 15);
		CHECK_EQ_I64(c->dims[3], 15);
		CHECK_EQ_I64(c->forward_flops, 525600);
		CHECK_EQ_I64(c->backward_flops, 525600);
		CHECK_EQ_I64(c->params, 592);
		CHECK_EQ_I64(c->category, ABACUS_CAT_GROUPCONV);
	}
	DONE();
}

/* Two convolutions: the second one's input requires grad, so its backward has dX and dW.
 * conv1: 1×3×8×8 → 1×4×8×8 (3×3, pad 1), MACs = 256 × 27 = 6912.
 * conv2: 1×4×8×8 → 1×4×8×8 (1×1, no bias), MACs = 256 × 4 = 1024 → fwd 2048, bwd 2048 + 2048. */
void test_conv_chain_backward(void);
void test_conv_chain_backward(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(1, 3, 8, 8));
	tb_weight(m, "w1", D(4, 3, 3, 3));
	tb_weight(m, "w2", D(4, 4, 1, 1));
	tb_node(m, "Conv", L("x", "w1"), L("h"));
	tb_attr_ints(m, "pads", D(1, 1, 1, 1));
	tb_node(m, "Conv", L("h", "w2"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 1);
	size_t n;
	const abacus_layer *Ls = abacus_analysis_layers(a, &n);
	CHECK_EQ_I64(n, 2);
	if (n == 2) {
		CHECK_EQ_I64(Ls[0].forward_flops, 13824);
		CHECK_EQ_I64(Ls[0].backward_flops, 13824);
		CHECK_EQ_I64(Ls[1].forward_flops, 2048);
		CHECK_EQ_I64(Ls[1].backward_flops, 4096);
	}
	CHECK_EQ_I64(abacus_analysis_totals(a)->params, 108 + 16);
	DONE();
}

/* Gemm with transB: A 4×32, B 10×32, C 10 → Y 4×10: 2·4·10·32 + 40 = 2600. Params 330. */
void test_gemm(void);
void test_gemm(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "a", D(-1, 32));
	tb_weight(m, "w", D(10, 32));
	tb_weight(m, "c", D(10));
	tb_node(m, "Gemm", L("a", "w", "c"), L("y"));
	tb_attr_int(m, "transB", 1);
	tb_output(m, "y");
	ANALYZE(m, 4);
	const abacus_layer *l = t_layer(a, "Gemm");
	CHECK(l != NULL);
	if (l) {
		CHECK(l->dims[0] == 4);
		CHECK(l->dims[1] == 10);
		CHECK(l->forward_flops == 2600);
	}
	/* Backward: dW = 2·4·10·32 = 2560, dc = 40, no dA (graph input). */
	CHECK(l != NULL);
	if (l)
		CHECK(l->backward_flops == 2600);
	CHECK_EQ_I64(abacus_analysis_totals(a)->params, 330);
	DONE();
}

/* Batched MatMul with broadcasting: [2,3,4,5] × [3,5,6] → [2,3,4,6]: 2·(2·3·4·6)·5 = 1440. */
void test_matmul_batched(void);
void test_matmul_batched(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "a", D(2, 3, 4, 5));
	tb_input(m, "b", D(3, 5, 6));
	tb_node(m, "MatMul", L("a", "b"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 1);
	const abacus_layer *l = t_layer(a, "MatMul");
	CHECK(l != NULL);
	if (l) {
		CHECK(l->rank == 4);
		CHECK(l->dims[0] == 2);
		CHECK(l->dims[1] == 3);
		CHECK(l->dims[2] == 4);
		CHECK(l->dims[3] == 6);
		CHECK(l->forward_flops == 1440);
	}
	DONE();
}

/* Pooling. MaxPool 3×3 stride 2 pad 1 on 1×4×8×8 → 1×4×4×4: 64 outputs × 9 = 576 comparisons.
 * MaxPool 3×3 stride 2 ceil_mode on 1×4×6×6: (6−3)/2 rounded up = 2, + 1 = 3 → 3×3.
 * AveragePool 2×2 stride 2 on 1×4×8×8 → 4×4: 64 × 4 = 256. GlobalAveragePool on 1×4×8×8: 256. */
void test_pooling(void);
void test_pooling(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(1, 4, 8, 8));
	tb_input(m, "z", D(1, 4, 6, 6));
	tb_node(m, "MaxPool", L("x"), L("p"));
	tb_attr_ints(m, "kernel_shape", D(3, 3));
	tb_attr_ints(m, "strides", D(2, 2));
	tb_attr_ints(m, "pads", D(1, 1, 1, 1));
	tb_node(m, "MaxPool", L("z"), L("q"));
	tb_attr_ints(m, "kernel_shape", D(3, 3));
	tb_attr_ints(m, "strides", D(2, 2));
	tb_attr_int(m, "ceil_mode", 1);
	tb_node(m, "AveragePool", L("x"), L("r"));
	tb_attr_ints(m, "kernel_shape", D(2, 2));
	tb_attr_ints(m, "strides", D(2, 2));
	tb_node(m, "GlobalAveragePool", L("x"), L("s"));
	tb_output(m, "p");
	tb_output(m, "q");
	tb_output(m, "r");
	tb_output(m, "s");
	ANALYZE(m, 1);
	size_t n;
	const abacus_layer *Ls = abacus_analysis_layers(a, &n);
	CHECK_EQ_I64(n, 4);
	if (n == 4) {
		CHECK(Ls[0].dims[2] == 4);
		CHECK(Ls[0].dims[3] == 4);
		CHECK_EQ_I64(Ls[0].forward_flops, 576);
		CHECK(Ls[1].dims[2] == 3);
		CHECK(Ls[1].dims[3] == 3);
		CHECK(Ls[2].dims[2] == 4);
		CHECK(Ls[2].dims[3] == 4);
		CHECK_EQ_I64(Ls[2].forward_flops, 256);
		CHECK(Ls[3].dims[2] == 1);
		CHECK(Ls[3].dims[3] == 1);
		CHECK_EQ_I64(Ls[3].forward_flops, 256);
	}
	DONE();
}

/* BatchNormalization in training mode on 2×8×4×4 (256 elements): 7 FLOPs/element = 1792.
 * Parameters are scale and bias (16); running mean and variance are buffers (16 floats = 64 bytes). */
void test_batchnorm(void);
void test_batchnorm(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 4, 4));
	tb_weight(m, "s", D(8));
	tb_weight(m, "b", D(8));
	tb_weight(m, "mean", D(8));
	tb_weight(m, "var", D(8));
	tb_node(m, "BatchNormalization", L("x", "s", "b", "mean", "var"), L("y", "rm", "rv"));
	tb_attr_int(m, "training_mode", 1);
	tb_output(m, "y");
	ANALYZE(m, 2);
	const abacus_layer *l = t_layer(a, "BatchNormalization");
	CHECK(l != NULL);
	if (l)
		CHECK(l->forward_flops == 1792);
	CHECK_EQ_I64(abacus_analysis_totals(a)->params, 16);
	/* The running mean and variance (64 B), and every tensor's host memory beyond its data (tests.h
	 * TENS): two parameters (s, b) with SGD's momentum, three buffers (mean, var, num_batches_tracked). */
	CHECK_EQ_I64(abacus_analysis_memory(a)->buffers, 64 + TENS(2, 3, 0, TENS_SGD));
	CHECK_EQ_I64(abacus_analysis_memory(a)->weights, 64);
	DONE();
}

/* Batch-norm rows on maps too small to vectorise (term 14): a map of 2 to 15 elements counts batch ×
 * channels rows, a 1×1 map (PyTorch's fast path) and a 4×4 map (16 elements) none. At batch 8:
 * 8 × 960 on 2×2 plus 8 × 64 on 3×3 = 7680 + 512 = 8192. */
static tb_model *bn_on(const char *x, int64_t c, int64_t h, int64_t w, tb_model *m)
{
	char name[4][32];
	const char *suffix[] = { "s", "b", "m", "v" };
	for (int k = 0; k < 4; k++) {
		snprintf(name[k], sizeof name[k], "%s_%s", x, suffix[k]);
		tb_weight(m, name[k], D(c));
	}
	char in[32], out[32], rm[32], rv[32];
	snprintf(in, sizeof in, "%s", x);
	snprintf(out, sizeof out, "%s_y", x);
	snprintf(rm, sizeof rm, "%s_rm", x);
	snprintf(rv, sizeof rv, "%s_rv", x);
	tb_input(m, in, D(-1, c, h, w));
	tb_node(m, "BatchNormalization", L(in, name[0], name[1], name[2], name[3]), L(out, rm, rv));
	tb_attr_int(m, "training_mode", 1);
	tb_output(m, out);
	return m;
}

void test_batchnorm_small_maps(void);
void test_batchnorm_small_maps(void)
{
	tb_model *m = tb_new(14);
	bn_on("a", 960, 2, 2, m);
	bn_on("b", 64, 3, 3, m);
	bn_on("c", 960, 1, 1, m);
	bn_on("d", 120, 4, 4, m);
	ANALYZE(m, 8);
	double t[AB_TIME_TERMS];
	ab_time_terms(t, a, 1);
	CHECK(t[AB_TERM_NORM_ROWS] == 8192);
	int64_t sum = 0, most = 0;
	for (size_t i = 0; i < a->n_layers; i++) {
		sum += a->costs[i].norm_rows;
		most = a->costs[i].norm_rows > most ? a->costs[i].norm_rows : most;
	}
	CHECK(a->n_layers == 4);
	CHECK_EQ_I64(sum, 8192);
	CHECK_EQ_I64(most, 7680);
	DONE();
}

/* Term 15 (model.c): the step's parameter traffic that stays in the last-level cache (32 MiB): the cache over
 * the step's footprint plus the activation bytes an iteration moves (three times the forward's). y = x·W,
 * x of B rows: the forward moves x and y, 2·B·side floats, so 3 × 8·B·side bytes. W of 256×256 floats at
 * batch 2 (256 KiB; × 3 with gradient and momentum, beside 12 KiB moved): terms 5 and 9 move whole to 15.
 * W of 4096×4096 (64 MiB; × 3 = 192 MiB, beside 192 KiB): 32 MiB over their sum, about a sixth, with Adam
 * (× 4 = 256 MiB) about an eighth, of a step term three times SGD's. W of 256×256 at batch 16384 (x and y
 * 16 MiB each: 96 MiB moved) keeps a share of 32 / 96.75 though its state would fit. x needs no gradient,
 * so the backward never reads W: term 5 counts two of a weight's three passes (2W/3). */
void test_step_cache_share(void);
void test_step_cache_share(void)
{
	const int64_t sides[4] = { 256, 4096, 4096, 256 }, batch[4] = { 2, 2, 2, 16384 };
	for (int k = 0; k < 4; k++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, sides[k]));
		tb_weight(m, "w", D(sides[k], sides[k]));
		tb_node(m, "MatMul", L("x", "w"), L("y"));
		tb_output(m, "y");
		abacus_graph *g = NULL;
		abacus_error err;
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = batch[k];
		if (k == 2)
			cfg.optimizer = ABACUS_OPT_ADAM;
		abacus_analysis *a = t_analyze_cfg(m, &cfg, &g, &err);
		CHECK(a != NULL);
		if (a) {
			double t[AB_TIME_TERMS], W = (double)(sides[k] * sides[k] * 4), act = 8.0 * (double)(batch[k] * sides[k]);
			ab_time_terms(t, a, 1);
			CHECK(fabs(t[AB_TERM_ACT_BYTES] - act) < 1e-6);
			double llc = 32.0 * 1024 * 1024, foot = W * (k == 2 ? 4 : 3);
			double fit = k == 0 ? 1 : llc / (foot + 3 * act), step = k == 2 ? AB_TORCH_ADAM_STEP_BYTES : 1;
			if (getenv("ABACUS_TEST_VERBOSE"))
				printf("  case %d: share in cache %.4f\n", k, fit);
			CHECK(k != 1 || fabs(fit - 1.0 / 6) < 0.001);
			CHECK(k != 2 || fabs(fit - 1.0 / 8) < 0.001);
			CHECK(k != 3 || fabs(fit - 32 / 96.75) < 1e-9);
			CHECK(fabs(t[AB_TERM_STEP_CACHE] - (W * 2 / 3 + W * step) * fit) < 1e-6 * W);
			CHECK(fabs(t[AB_TERM_STEP_WEIGHTS] - W * 2 / 3 * (1 - fit)) < 1e-6 * W);
			CHECK(fabs(t[AB_TERM_OPT_BYTES] - W * step * (1 - fit)) < 1e-6 * W);
		}
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* Term 5 (model.c) counts three passes over each weight: read forward, gradient written, read again for
 * the input's gradient, the last only where an activation input needs a gradient. x (no gradient) →
 * MatMul w1 (64×32 floats, 8192 bytes) → Relu → MatMul w2 (32×16, 2048 bytes): w1's backward never
 * reads it, so term 5 is 2048 + 8192 × 2/3. An embedding (Gather of a 100×8 table by indices) is the
 * same: its table's 3200 bytes count 2/3. Weights this small fit in cache: terms 5 and 9 (the SGD
 * step, all weights) move whole to term 15. */
void test_weight_passes(void);
void test_weight_passes(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 64));
	tb_weight(m, "w1", D(64, 32));
	tb_weight(m, "w2", D(32, 16));
	tb_node(m, "MatMul", L("x", "w1"), L("h"));
	tb_node(m, "Relu", L("h"), L("r"));
	tb_node(m, "MatMul", L("r", "w2"), L("y"));
	tb_output(m, "y");
	double t[AB_TIME_TERMS];
	{
		ANALYZE(m, 4);
		ab_time_terms(t, a, 1);
		CHECK(fabs(a->nodx_weight_bytes - 8192) < 1e-9);
		CHECK(fabs(t[AB_TERM_STEP_CACHE] - (2048 + 8192 * 2.0 / 3) - (2048 + 8192)) < 1e-6); /* all in cache: t[AB_TERM_STEP_WEIGHTS] moved */
		DONE();
	}
	/* A convolution whose kernel is computed from a parameter (S4D's): k = Exp(logk), logk 8×1×5 floats (160
	 * bytes), a depthwise Conv of x (no gradient) by k. Only the parameter counts, once (its Exp): 160, and
	 * term 5 stays 160 × 2/3 (counting k too made it 160 − 320/3, and a network of such kernels negative). */
	tb_model *s4 = tb_new(14);
	tb_input(s4, "x", D(-1, 8, 32));
	tb_weight(s4, "logk", D(8, 1, 5));
	tb_node(s4, "Exp", L("logk"), L("k"));
	tb_node(s4, "Conv", L("x", "k"), L("y"));
	tb_attr_int(s4, "group", 8);
	tb_output(s4, "y");
	{
		ANALYZE(s4, 2);
		ab_time_terms(t, a, 1);
		CHECK(fabs(a->nodx_weight_bytes - 160) < 1e-9);
		CHECK(fabs(t[AB_TERM_STEP_CACHE] - 160 * 2.0 / 3 - 160) < 1e-6);
		DONE();
	}
	tb_model *e = tb_new(14);
	tb_input_typed(e, "ids", 7 /* ONNX int64 */, D(-1, 5));
	tb_weight(e, "table", D(100, 8));
	tb_node(e, "Gather", L("table", "ids"), L("v"));
	tb_output(e, "v");
	ANALYZE(e, 2);
	ab_time_terms(t, a, 1);
	CHECK(fabs(a->nodx_weight_bytes - 3200) < 1e-9);
	CHECK(fabs(t[AB_TERM_STEP_CACHE] - 3200 * 2.0 / 3 - 3200) < 1e-6);
	DONE();
}

/* LSTM, seq 5, batch 2, input 10, hidden 20, one direction.
 * Gate MACs per step and sample: 4·20 × (10 + 20) = 2400; 10 steps·samples → 2·24000 = 48000 FLOPs,
 * plus 5 element-wise FLOPs per gate element: 10 × 80 × 5 = 4000 → 52000.
 * Params: W 80·10 + R 80·20 + B 160 = 2560. Output Y: 5×1×2×20. */
static tb_model *lstm_model(int64_t dirs)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(5, -1, 10));
	tb_weight(m, "W", D(dirs, 80, 10));
	tb_weight(m, "R", D(dirs, 80, 20));
	tb_weight(m, "B", D(dirs, 160));
	tb_node(m, "LSTM", L("x", "W", "R", "B"), L("y", "yh", "yc"));
	tb_attr_int(m, "hidden_size", 20);
	if (dirs == 2)
		tb_attr_str(m, "direction", "bidirectional");
	tb_output(m, "y");
	return m;
}

void test_lstm(void);
void test_lstm(void)
{
	ANALYZE(lstm_model(1), 2);
	const abacus_layer *l = t_layer(a, "LSTM");
	CHECK(l != NULL);
	if (l) {
		CHECK(l->rank == 4);
		CHECK(l->dims[0] == 5);
		CHECK(l->dims[1] == 1);
		CHECK(l->dims[2] == 2);
		CHECK(l->dims[3] == 20);
		CHECK(l->forward_flops == 52000);
		CHECK(l->category == ABACUS_CAT_RECURRENT);
	}
	CHECK_EQ_I64(abacus_analysis_totals(a)->params, 2560);
	DONE();
}

/* The same LSTM bidirectional: PyTorch runs 5 steps in each direction one after another. A step
 * streams its direction's recurrent matrix R (80 × 20 floats = 6400 bytes; its three products with
 * batch 2 are 2 × 80 × 20 = 3200 row-MACs, worth 0.3 × 3200 = 960 bytes, under R), costs its dispatch
 * (361000 bytes' worth), its 2 × 80 gate elements (48 bytes' worth each, 7680) and its sequence's 5 steps
 * (282 bytes' worth each, 1410): the time terms see 10 serial steps and 10 × 376490 = 3764900 bytes.
 * The FLOPs those bytes price leave the FLOP terms: the recurrent product forward and twice backward
 * (3200 × 6 × 10 = 192000) and the gates' element-wise FLOPs (5 per gate element, forward once and
 * backward twice: 3 × 20 × 80 × 5 = 24000). Of the layer's 264000 FLOPs (forward 96000 + 8000, backward 3 × 48000 + 16000) 48000 stay. */
void test_lstm_serial_terms(void);
void test_lstm_serial_terms(void)
{
	ANALYZE(lstm_model(2), 2);
	double t[AB_TIME_TERMS];
	ab_time_terms(t, a, 1);
	CHECK(t[AB_TERM_RNN_STEPS] == 10);
	CHECK(t[AB_TERM_RNN_BYTES] == 3764900);
	CHECK(a->serial_steps == 10);
	CHECK(a->serial_bytes == 3764900);
	CHECK(a->n_layers == 1);
	if (a->n_layers == 1)
		CHECK(a->costs[0].serial_flops == 216000);
	CHECK(a->layers[0].forward_flops + a->layers[0].backward_flops == 264000);
	CHECK(t[AB_TERM_MATMUL] + t[AB_TERM_MATMUL_THIN] == 48000);
	/* The forward holds the input projection (5 steps × batch 2 × 80 gates) and, bidirectional, the two
	 * directions' stacked outputs (2 × 5 × 2 × 20) beside what it leaves: 4800 floats. It keeps 7.5 × 20
	 * floats per step, sample and direction (5 × 2 × 2 × 150 = 3000) and 4400 bytes per step and
	 * direction until its backward, and 9600 more until the graph dies. */
	CHECK(a->n_layers == 1);
	if (a->n_layers == 1) {
		CHECK(a->costs[0].fwd_workspace == (5 * 2 * 80 + 2 * 5 * 2 * 20) * 4);
		CHECK(a->costs[0].extra_bytes == 3000 * 4 + 10 * 4400);
		CHECK(a->costs[0].graph_bytes == 10 * 9600);
	}
	/* Backward: the gradients the simulator adds (per direction R 6400 + W and B 4 × 80 × 12 = 3840
	 * bytes; x needs none) are 20480 bytes, over both peaks: three R (19200) and, the second direction
	 * with half the saved buffers gone, 4 × 6400 − 56000 / 2 < 0. No workspace. */
	CHECK(a->n_layers == 1);
	if (a->n_layers == 1)
		CHECK(a->costs[0].bwd_workspace == 0);
	DONE();
}

/* One direction: R's gradient accumulation peaks at 3 × 6400 = 19200 bytes, over the 10240 of
 * gradients the simulator adds at the layer's backward (R 6400, W and B 3840): 8960 bytes of
 * workspace. 5 × 9600 bytes of records outlive the backward. */
void test_lstm_backward_memory(void);
void test_lstm_backward_memory(void)
{
	ANALYZE(lstm_model(1), 2);
	CHECK(a->n_layers == 1);
	if (a->n_layers == 1) {
		CHECK(a->costs[0].bwd_workspace == 8960);
		CHECK(a->costs[0].graph_bytes == 5 * 9600);
	}
	DONE();
}

/* x.view(x.size(0), -1) as PyTorch traces it: Shape → Gather(0) → Unsqueeze → Concat(-1) → Reshape.
 * At batch 7 the reshape must resolve to 7×48, and the four shape nodes must fold away. */
void test_fold_view_batch(void);
void test_fold_view_batch(void)
{
	tb_model *m = tb_new(13);
	tb_input(m, "x", D(-1, 3, 4, 4));
	tb_ints(m, "zero", 1, (const int64_t[]){ 0 });
	tb_ints(m, "minus1", 1, (const int64_t[]){ -1 });
	tb_ints(m, "axes", 1, (const int64_t[]){ 0 });
	tb_node(m, "Shape", L("x"), L("s"));
	tb_node(m, "Gather", L("s", "zero"), L("n"));
	tb_node(m, "Squeeze", L("n", "axes"), L("n0"));
	tb_node(m, "Unsqueeze", L("n0", "axes"), L("n1"));
	tb_node(m, "Concat", L("n1", "minus1"), L("shape"));
	tb_attr_int(m, "axis", 0);
	tb_node(m, "Relu", L("x"), L("r"));
	tb_node(m, "Reshape", L("r", "shape"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 7);
	const abacus_layer *l = t_layer(a, "Reshape");
	CHECK(l != NULL);
	if (l) {
		CHECK(l->rank == 2);
		CHECK(l->dims[0] == 7);
		CHECK(l->dims[1] == 48);
	}
	CHECK_EQ_I64(abacus_analysis_totals(a)->layers, 2);
	CHECK_EQ_I64(abacus_analysis_totals(a)->folded, 5);
	DONE();
}

/* Range/ConstantOfShape/Expand/Equal/Where/Cast/Slice folding, as in traced attention masks:
 * n = Shape(x)[1] (= 6); r = Range(0, n, 1); c = Cast(r) ; e = Equal(r, 2) ; w = Where(e, 100, r);
 * s = Slice(w, [0], [5]) → [0, 1, 100, 3, 4]; x[:, 0:5] + Cast(Unsqueeze(s)) must see a 1×5 constant. */
void test_fold_range_where(void);
void test_fold_range_where(void)
{
	tb_model *m = tb_new(13);
	tb_input(m, "x", D(-1, 6));
	tb_ints(m, "one", 1, (const int64_t[]){ 1 });
	tb_ints(m, "zero", 1, (const int64_t[]){ 0 });
	tb_ints(m, "two", 1, (const int64_t[]){ 2 });
	tb_ints(m, "hundred", 1, (const int64_t[]){ 100 });
	tb_ints(m, "five", 1, (const int64_t[]){ 5 });
	tb_ints(m, "ax0", 1, (const int64_t[]){ 0 });
	tb_node(m, "Shape", L("x"), L("s"));
	tb_node(m, "Gather", L("s", "one"), L("n1"));
	tb_node(m, "Squeeze", L("n1", "ax0"), L("n"));
	tb_node(m, "Squeeze", L("zero", "ax0"), L("z"));
	tb_node(m, "Squeeze", L("one", "ax0"), L("o"));
	tb_node(m, "Range", L("z", "n", "o"), L("r"));
	tb_node(m, "Equal", L("r", "two"), L("e"));
	tb_node(m, "Where", L("e", "hundred", "r"), L("w"));
	tb_node(m, "Slice", L("w", "zero", "five"), L("sl"));
	tb_node(m, "Unsqueeze", L("sl", "ax0"), L("u"));
	tb_node(m, "Cast", L("u"), L("uf"));
	tb_attr_int(m, "to", 1);
	tb_node(m, "Slice", L("x", "zero", "five", "one"), L("xs"));
	tb_node(m, "Add", L("xs", "uf"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 3);
	const abacus_layer *l = t_layer(a, "Add");
	CHECK(l != NULL);
	if (l) {
		CHECK(l->rank == 2);
		CHECK(l->dims[0] == 3);
		CHECK(l->dims[1] == 5);
	}
	CHECK_EQ_I64(abacus_analysis_totals(a)->layers, 2); /* the Slice of x and the Add */
	DONE();
}

/* Einsum "bij,bjk->bik" on 2×3×4 and 2×4×5: 2·(2·3·4·5) = 240 FLOPs. */
void test_einsum(void);
void test_einsum(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "a", D(2, 3, 4));
	tb_input(m, "b", D(2, 4, 5));
	tb_node(m, "Einsum", L("a", "b"), L("y"));
	tb_attr_str(m, "equation", "bij,bjk->bik");
	tb_output(m, "y");
	ANALYZE(m, 1);
	const abacus_layer *l = t_layer(a, "Einsum");
	CHECK(l != NULL);
	if (l) {
		CHECK(l->rank == 3);
		CHECK(l->dims[2] == 5);
		CHECK(l->forward_flops == 240);
	}
	DONE();
}

/* Embedding (Gather on a parameter table) with int64 token input: 4×7 tokens, table 100×16. */
void test_embedding_tokens(void);
void test_embedding_tokens(void)
{
	tb_model *m = tb_new(14);
	tb_input_typed(m, "tok", 7, D(-1, 7));
	tb_weight(m, "table", D(100, 16));
	tb_node(m, "Gather", L("table", "tok"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 4);
	const abacus_layer *l = t_layer(a, "Gather");
	CHECK(l != NULL);
	if (l) {
		CHECK(l->rank == 3);
		CHECK(l->dims[0] == 4);
		CHECK(l->dims[1] == 7);
		CHECK(l->dims[2] == 16);
		CHECK(l->category == ABACUS_CAT_EMBEDDING);
		CHECK(l->backward_flops == 4 * 7 * 16);
	}
	CHECK_EQ_I64(abacus_analysis_totals(a)->params, 1600);
	DONE();
}

/* An unknown op counts as 'other' and is listed by name; --strict makes it an error. */
void test_unknown_op(void);
void test_unknown_op(void)
{
	for (int strict = 0; strict < 2; strict++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 4));
		tb_node(m, "FancyOp", L("x"), L("y"));
		tb_node(m, "Relu", L("x"), L("z"));
		tb_output(m, "z");
		uint8_t *buf;
		size_t len;
		tb_pack(m, &buf, &len);
		tb_free(m);
		abacus_graph *g = NULL;
		abacus_error err;
		CHECK(abacus_graph_load(&g, buf, len, &err) == 0);
		free(buf);
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.strict = strict;
		abacus_analysis *a = NULL;
		int rc = abacus_analyze(&a, g, &cfg, &err);
		if (strict) {
			CHECK(rc == ABACUS_EUNSUPPORTED);
			CHECK_STR_CONTAINS(err.msg, "FancyOp");
		} else {
			/* No declared shape for y: an error that names the op, never a silent zero. */
			CHECK(rc == ABACUS_EUNSUPPORTED);
			CHECK_STR_CONTAINS(err.msg, "FancyOp");
		}
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* Memory of a tiny MLP, hand-simulated. x: 4×8 (batch 4), W1 16×8, W2 2×16 (Gemm transB, no bias).
 * weights = (128 + 32)·4 = 640 B; sgd momentum 640; inputs = x 128 B + labels 4·8 = 32 B → persistent 1440,
 * and the host memory of two parameter tensors (w1, w2) and their momentum (tests.h TENS).
 * Forward: h = Gemm1 (256 B, saved by Gemm2 ... and relu), r = Relu(h) (256 B, saved by relu and Gemm2),
 * y = Gemm2 (32 B, graph output), then the loss keeps log-softmax (32 B).
 * The peak is during the optimizer step or backward; check the breakdown adds up to the peak.
 * Autograd records (tests.h REC): Gemm1, Relu and Gemm2 keep a Node each; Relu's saved r and Gemm2's
 * saved r hold a handle each (x, a graph input, and the weights are no activations). */
void test_memory_breakdown_adds_up(void);
void test_memory_breakdown_adds_up(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8));
	tb_weight(m, "w1", D(16, 8));
	tb_weight(m, "w2", D(2, 16));
	tb_node(m, "Gemm", L("x", "w1"), L("h"));
	tb_attr_int(m, "transB", 1);
	tb_node(m, "Relu", L("h"), L("r"));
	tb_node(m, "Gemm", L("r", "w2"), L("y"));
	tb_attr_int(m, "transB", 1);
	tb_output(m, "y");
	ANALYZE(m, 4);
	const abacus_memory *mem = abacus_analysis_memory(a);
	CHECK_EQ_I64(mem->weights, 640);
	CHECK_EQ_I64(mem->optimizer, 640);
	CHECK_EQ_I64(mem->inputs, 160);
	CHECK_EQ_I64(mem->persistent, 1440 + TENS(2, 0, 0, TENS_SGD));
	CHECK_EQ_I64(mem->weights + mem->buffers + mem->optimizer + mem->inputs + mem->gradients + mem->activations +
	                 mem->workspace,
	             mem->peak);
	/* Saved at the end of forward: h is not saved (Relu saves its output), r is (Relu and Gemm2). */
	CHECK_EQ_I64(mem->saved, 256 + REC(3, 2));
	CHECK(mem->peak >= mem->persistent + 640); /* at least all gradients during the step */
	DONE();
}

/* The loss's memory, as the allocator tracker measured PyTorch 1.13 (memory.c). y = x·W, W 16×256.
 * Cross-entropy (x 64×16, y 64×256: O = 65536 B, W = 16384 B): the forward ends with y (O); the loss adds
 * its log-softmax (2O) and y dies (O); backward adds the log-softmax's gradient and y's (3O: the peak),
 * frees both log-softmax buffers (O), then dW (O + W). Persistent: W, momentum W, x 4096, labels 512.
 * MSE (x 2×4×16, y 2×4×256: O = 8192 B): the loss keeps one unreduced buffer and passes a second (3O);
 * backward adds y's gradient (3O), y dies after the loss's backward (2O), dW makes the peak 2O + W, and
 * the kept buffer is still live during the step (W + O). Persistent: W, W, x 512, the zero target O.
 * Both peaks add the MatMul's autograd Node (tests.h REC), made in the forward and kept to the step; it
 * saves no activation (x is a graph input, W a weight): no handle. Host memory per tensor (tests.h TENS):
 * persistent, W's and its momentum's; MSE's peak holds dW's too (cross-entropy's comes before dW). */
void test_loss_memory(void);
void test_loss_memory(void)
{
	for (int mse = 0; mse < 2; mse++) {
		tb_model *m = tb_new(14);
		if (mse)
			tb_input(m, "x", D(-1, 4, 16));
		else
			tb_input(m, "x", D(-1, 16));
		tb_weight(m, "w", D(16, 256));
		tb_node(m, "MatMul", L("x", "w"), L("y"));
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(m, mse ? 2 : 64, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		const abacus_memory *mem = abacus_analysis_memory(a);
		int64_t O = mse ? 8192 : 65536, W = 16384;
		CHECK_EQ_I64(mem->persistent, (mse ? 2 * W + 512 + O : 2 * W + 4096 + 512) + TENS(1, 0, 0, TENS_SGD));
		CHECK_EQ_I64(mem->peak - mem->persistent, (mse ? 2 * O + W + TENS(0, 0, 1, 0) : 3 * O) + REC(1, 0));
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* A residual Add hands its output's gradient to both branches unchanged (memory.c): no copies. x 2×4×16,
 * W 16×256, h = x·W, r = Relu(h), y = h + r, MSE (O = 8192 B, W = 16384 B). Forward ends with r (saved by
 * Relu) and y; the loss keeps one buffer and passes a second (4O: a peak); backward adds dy (4O again) and
 * frees y; Add's backward allocates nothing (with a copy per branch it was 5O); Relu's frees r, then dW
 * (2O + W, which is 4O too). Persistent: W, momentum W, x 512, the zero target O, and W's and its
 * momentum's host memory (tests.h TENS). Autograd records (tests.h REC): the Nodes of MatMul, Relu and Add
 * at every moment; the handle of Relu's saved r at both 4O moments (its backward has not run yet), not at
 * dW's, which holds dW's host memory (TENS) instead: 775 > 400 bytes make dW's moment the peak.
 * BatchNorm's backward holds one input-sized buffer beside the input's gradient, when the input needs one. */
void test_residual_add_grad(void);
void test_residual_add_grad(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 4, 16));
	tb_weight(m, "w", D(16, 256));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "Relu", L("h"), L("r"));
	tb_node(m, "Add", L("h", "r"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 2);
	const abacus_memory *mem = abacus_analysis_memory(a);
	int64_t O = 8192, W = 16384;
	CHECK_EQ_I64(mem->persistent, 2 * W + 512 + O + TENS(1, 0, 0, TENS_SGD));
	CHECK(4 * O + REC(3, 1) < 2 * O + W + REC(3, 0) + TENS(0, 0, 1, 0)); /* the loss's moments lower */
	CHECK_EQ_I64(mem->peak - mem->persistent, 2 * O + W + REC(3, 0) + TENS(0, 0, 1, 0));
	DONE();

	tb_model *b = tb_new(14);
	tb_input(b, "x", D(-1, 8, 4, 4));
	tb_weight(b, "w", D(8, 8, 1, 1));
	const char *p[4] = { "s", "b", "m", "v" };
	for (int k = 0; k < 4; k++)
		tb_weight(b, p[k], D(8));
	tb_node(b, "BatchNormalization", L("x", "s", "b", "m", "v"), L("n0", "rm0", "rv0"));
	tb_attr_int(b, "training_mode", 1);
	tb_node(b, "Conv", L("n0", "w"), L("c"));
	tb_node(b, "BatchNormalization", L("c", "s", "b", "m", "v"), L("n1", "rm1", "rv1"));
	tb_attr_int(b, "training_mode", 1);
	tb_output(b, "n1");
	abacus_graph *g2;
	abacus_analysis *a2 = t_analyze(b, 2, &g2, &err);
	CHECK(a2 != NULL);
	if (a2)
		CHECK(a2->n_layers == 3);
	if (a2) {
		CHECK_EQ_I64(a2->costs[0].bwd_workspace, 0);       /* x needs no gradient */
		CHECK_EQ_I64(a2->costs[2].bwd_workspace, 2 * 8 * 16 * 4); /* c does: one buffer of its size */
	}
	abacus_analysis_free(a2);
	abacus_graph_free(g2);
}

/* A weight the exporter transposes in a node of its own, hoisted to the graph's start, gets its gradient
 * in its consumer's backward (memory.c param_grads), as PyTorch's Linear does. x 4×8, W0 8×64, W1 16×64:
 * T = Transpose(W1) first, h = x·W0, r = Relu(h), y = r·T. Backward (bytes): the loss leaves r (1024,
 * saved); y's MatMul adds dr (1024) and dW1 (4096): 6144; Relu adds dh (7168: the peak), frees dr and r
 * (5120); x·W0 adds dW0 (7168 again), frees dh. With dW1 made at the Transpose, last, the peak was 6400.
 * Autograd records (tests.h REC): the Nodes of x·W0, Relu and y's MatMul (the Transpose of a weight makes
 * none) at both moments, and Relu's handle on r at Relu's, released after its backward (y's MatMul
 * released its own on r before; at x·W0 no handle is left). Host memory per tensor (tests.h TENS): one
 * gradient (dW1) at Relu's moment, two (dW1, dW0) at x·W0's, which 2 × 775 > 775 + 400 bytes make the
 * peak. Persistent: weights 6144, momentum 6144, x 128, labels 32, and the host memory of W0, W1 and
 * their momentum. */
void test_transposed_weight_grad(void);
void test_transposed_weight_grad(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8));
	tb_weight(m, "w0", D(8, 64));
	tb_weight(m, "w1", D(16, 64));
	tb_node(m, "Transpose", L("w1"), L("t"));
	tb_node(m, "MatMul", L("x", "w0"), L("h"));
	tb_node(m, "Relu", L("h"), L("r"));
	tb_node(m, "MatMul", L("r", "t"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 4);
	const abacus_memory *mem = abacus_analysis_memory(a);
	int64_t persistent = 12448 + TENS(2, 0, 0, TENS_SGD);
	CHECK_EQ_I64(mem->persistent, persistent);
	CHECK(7168 + REC(3, 1) + TENS(0, 0, 1, 0) < 7168 + REC(3, 0) + TENS(0, 0, 2, 0)); /* Relu's moment lower */
	CHECK_EQ_I64(mem->peak, persistent + 7168 + REC(3, 0) + TENS(0, 0, 2, 0));
	DONE();
}

/* oneDNN's convolution backward holds copies of the output's and input's gradients in its blocked layout
 * (ops_nn.c). A 16×16 patchify conv p (stride 16) is the first layer; then a 3×3 conv c3 (its input
 * needs a gradient) and a 1×1 conv c1, which PyTorch runs on its own path at batch 4 on one thread.
 * At batch 4: x 4×3×32×32, p: 4×8×2×2 out (512 B),
 * weight 8×3×16×16 = 24576 B: its weights pass runs as sgemm (16 taps: test_gemm_weights_pass),
 * 4 × 24576 + one sample's columns 4·768·4 + 10300 (fewer than 16 output channels) = 120892 B; c3 8→8 on 2×2: out 512 + in 512,
 * each with its 8 channels padded to oneDNN's block of 16: 1024 + 1024, less than the weight-sized buffer
 * its weight gradient is reordered through, 8·8·9·4 = 2304 B (runtime_torch_cpu.c backward_workspace);
 * c1 slow path: none of these, but its input's gradient made one sample at a time through a buffer
 * (runtime_torch_cpu.c slow_columns): 8·2·2·4 = 128 B. */
void test_conv_backward_workspace(void);
void test_conv_backward_workspace(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 3, 32, 32));
	tb_weight(m, "wp", D(8, 3, 16, 16));
	tb_weight(m, "w3", D(8, 8, 3, 3));
	tb_weight(m, "w1", D(8, 8, 1, 1));
	tb_node(m, "Conv", L("x", "wp"), L("p"));
	tb_attr_ints(m, "strides", 2, (const int64_t[]){ 16, 16 });
	tb_node(m, "Conv", L("p", "w3"), L("h"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	tb_node(m, "Conv", L("h", "w1"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 4);
	CHECK(a->n_layers == 3);
	if (a->n_layers == 3) {
		CHECK_EQ_I64(a->costs[0].bwd_workspace, 4 * 24576 + 4 * 768 * 4 + 10300);
		CHECK_EQ_I64(a->costs[1].bwd_workspace, 2304);
		CHECK_EQ_I64(a->costs[2].bwd_workspace, 128);
	}
	DONE();
}

/* A patch embedding (kernel = stride, 15 taps or more) runs its weights pass as im2col then sgemm, holding four
 * times its weight, one sample's columns and sgemm's packing buffers, which depend on the output channels and K
 * (input channels × kernel elements) only (runtime_torch_cpu.c gemm_weights_pass, measured): on
 * 4×3×64×64, 3 → 16 with 16×16 (K 768, 4×4 outputs): 4·49152 + 4·768·16 + 53000 + 505·768; with 20×20 on
 * 80×80 (K 1200, 4×4 outputs): 4·76800 + 4·1200·16 + 84300; 14×14 is oneDNN's own kernel (the 4.3 × weight
 * of other kernels of 256 elements and more does not apply either: 196 elements): the weight, the larger;
 * two threads at batch 4 hold two reduction buffers and two samples' columns, the packing once; at batch 1
 * one of each. */
void test_gemm_weights_pass(void);
void test_gemm_weights_pass(void)
{
	const int64_t side[5] = { 16, 20, 14, 16, 16 }, batch[5] = { 4, 4, 4, 4, 1 }, threads[5] = { 1, 1, 1, 2, 2 };
	const int64_t want[5] = { 4 * 49152 + 4 * 768 * 16 + 53000 + 505 * 768, 4 * 76800 + 4 * 1200 * 16 + 84300,
	                          16 * 3 * 14 * 14 * 4, 2 * (4 * 49152 + 4 * 768 * 16) + 53000 + 505 * 768,
	                          4 * 49152 + 4 * 768 * 16 + 53000 + 505 * 768 };
	for (int c = 0; c < 5; c++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 3, 4 * side[c], 4 * side[c]));
		tb_weight(m, "w", D(16, 3, side[c], side[c]));
		tb_node(m, "Conv", L("x", "w"), L("y"));
		tb_attr_ints(m, "strides", 2, (const int64_t[]){ side[c], side[c] });
		tb_output(m, "y");
		abacus_graph *g = NULL;
		abacus_error err;
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = batch[c];
		cfg.threads = (int)threads[c];
		abacus_analysis *a = t_analyze_cfg(m, &cfg, &g, &err);
		CHECK(a != NULL);
		if (a) {
			CHECK_EQ_I64(a->costs[0].bwd_workspace, want[c]);
			abacus_analysis_free(a);
		}
		abacus_graph_free(g);
	}
}

/* A grouped convolution whose groups hold 12 channels (24 → 24 in 2 groups, 3×3, padding 1, on 4×24×8×8; the first
 * layer) runs its weights pass the same way: 4 × its 10,368-byte weight + one group's columns, 4·(12·9)·64, +
 * 10,300 (12 output channels a group), more than the blocked copies of its output and input (32 channels
 * each: 2 × 4·32·64·4 = 65,536). With 16 a group (32 → 32 in 2 groups) oneDNN's own kernel runs: the blocked
 * copies, the larger. */
void test_gemm_grouped_weights_pass(void);
void test_gemm_grouped_weights_pass(void)
{
	for (int even = 0; even < 2; even++) {
		int64_t c = even ? 32 : 24;
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, c, 8, 8));
		tb_weight(m, "w", D(c, c / 2, 3, 3));
		tb_node(m, "Conv", L("x", "w"), L("y"));
		tb_attr_int(m, "group", 2);
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_output(m, "y");
		ANALYZE(m, 4);
		CHECK_EQ_I64(a->costs[0].bwd_workspace, even ? 2 * 4 * 32 * 64 * 4 : 4 * 10368 + 4 * 108 * 64 + 10300);
		DONE();
	}
}

/* A dense 3×3 convolution dilated 2 (padding 2) on 4×C×8×8, the first layer: with 8 input channels (fewer than
 * 16) oneDNN runs its weights pass as sgemm: 4 × its 4,608-byte weight + the columns 4·72·64 + the packing for
 * 16 output channels and K = 72, 53,000 + 505·72; with 16 its own kernel, whose blocked copies of the output's
 * gradient and of the input (16 channels each: 2 × 16,384) are larger than the weight (9,216). */
void test_gemm_dilated_weights_pass(void);
void test_gemm_dilated_weights_pass(void)
{
	for (int wide = 0; wide < 2; wide++) {
		int64_t c = wide ? 16 : 8;
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, c, 8, 8));
		tb_weight(m, "w", D(16, c, 3, 3));
		tb_node(m, "Conv", L("x", "w"), L("y"));
		tb_attr_ints(m, "dilations", 2, (const int64_t[]){ 2, 2 });
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 2, 2, 2, 2 });
		tb_output(m, "y");
		ANALYZE(m, 4);
		CHECK_EQ_I64(a->costs[0].bwd_workspace, wide ? 2 * 16384 : 4 * 4608 + 4 * 72 * 64 + 53000 + 505 * 72);
		DONE();
	}
}

/* oneDNN computes output channels in blocks of 16 (ops_nn.c conv_path): a 32 → 3 convolution's FLOPs
 * count 16/3 times in the dense-convolution term; a 32 → 32 one's once. Batch 4, 3×3 with padding 1 on
 * 8×8: oneDNN's path on one thread. Its reported FLOPs stay the real ones: 2 × 4·3·64 × 32·9 = 442368
 * forward, and as much for the weights' gradient (the input needs none). */
void test_conv_channel_blocks(void);
void test_conv_channel_blocks(void)
{
	for (int narrow = 0; narrow < 2; narrow++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 32, 8, 8));
		tb_weight(m, "w", D(narrow ? 3 : 32, 32, 3, 3));
		tb_node(m, "Conv", L("x", "w"), L("y"));
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(m, 4, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		const abacus_layer *l = t_layer(a, "Conv");
		double f = (double)l->forward_flops + (double)l->backward_flops, t[AB_TIME_TERMS];
		ab_time_terms(t, a, 1);
		if (narrow) {
			CHECK_EQ_I64(l->forward_flops, 442368);
			CHECK_EQ_I64(l->backward_flops, 442368);
			CHECK(fabs(a->costs[0].pad_weight - 16.0 / 3.0) < 1e-12);
			CHECK(fabs(t[AB_TERM_CONV] - f * 16.0 / 3.0) < 1e-6 * f);
		} else {
			CHECK(a->costs[0].pad_weight == 0);
			CHECK(t[AB_TERM_CONV] == f);
		}
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* A depthwise convolution whose input PyTorch holds channels-last (a permute to NCHW, passed on by an
 * element-wise op) keeps 256× its weight in backward (ops_nn.c): x B×8×8×16 → Transpose [0,3,1,2] →
 * Relu → depthwise 7×7 (16 × 49 floats = 3136 B → 802816 B); the same convolution on the contiguous
 * Relu output of a plain input keeps only the gradients' copies (out + in: 2 × B·16·64·4). */
void test_channels_last_depthwise(void);
void test_channels_last_depthwise(void)
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
		tb_weight(m, "w1", D(16, 1, 1, 1));
		tb_weight(m, "w", D(16, 1, 7, 7));
		tb_node(m, "Conv", L("t", "w1"), L("s")); /* a scale per channel, so the next input needs a gradient */
		tb_attr_int(m, "group", 16);
		tb_node(m, "Relu", L("s"), L("r"));
		tb_node(m, "Conv", L("r", "w"), L("y"));
		tb_attr_int(m, "group", 16);
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 3, 3, 3, 3 });
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(m, 2, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		size_t last = a->n_layers - 1;
		CHECK(!strcmp(a->layers[last].op, "Conv"));
		CHECK_EQ_I64(a->costs[last].bwd_workspace, permuted ? 256 * 3136 : 2 * 2 * 16 * 64 * 4);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* Initializers with external-data references load without their data: 64×16 weight → 1024 params. */
void test_external_data(void);
void test_external_data(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16));
	tb_weight_external(m, "w", D(64, 16));
	tb_node(m, "Gemm", L("x", "w"), L("y"));
	tb_attr_int(m, "transB", 1);
	tb_output(m, "y");
	ANALYZE(m, 3);
	CHECK_EQ_I64(abacus_analysis_totals(a)->params, 1024);
	CHECK_EQ_I64(abacus_analysis_totals(a)->forward_flops, 2 * 3 * 64 * 16);
	DONE();
}

/* OneHot(indices 4×7, depth 10, axis -1) → 4×7×10. GatherND(data 2×3×5, indices 2×1: one coordinate
 * per row) → indices.shape[:-1] + data.shape[1:] = [2] + [3, 5]. */
void test_onehot_gathernd(void);
void test_onehot_gathernd(void)
{
	tb_model *m = tb_new(14);
	tb_input_typed(m, "ix", 7, D(-1, 7));
	tb_input(m, "data", D(2, 3, 5));
	tb_input_typed(m, "nd", 7, D(2, 1));
	tb_ints(m, "depth", 1, (const int64_t[]){ 10 });
	tb_weight(m, "vals", D(2));
	tb_node(m, "OneHot", L("ix", "depth", "vals"), L("oh"));
	tb_node(m, "GatherND", L("data", "nd"), L("g"));
	tb_output(m, "oh");
	tb_output(m, "g");
	ANALYZE(m, 4);
	const abacus_layer *o = t_layer(a, "OneHot"), *gn = t_layer(a, "GatherND");
	CHECK(o != NULL);
	if (o) {
		CHECK(o->rank == 3);
		CHECK(o->dims[0] == 4);
		CHECK(o->dims[1] == 7);
		CHECK(o->dims[2] == 10);
	}
	CHECK(gn != NULL);
	if (gn) {
		CHECK(gn->rank == 3);
		CHECK(gn->dims[0] == 2);
		CHECK(gn->dims[1] == 3);
		CHECK(gn->dims[2] == 5);
	}
	DONE();
}

/* Which convolutions PyTorch 1.13 runs through its own im2col + BLAS path rather than oneDNN (ops_nn.c
 * conv_path, checked against torch._C._select_conv_backend): x (B×16×8×8) → 1×1 conv → 3×3 conv (pad 1),
 * 16 → 16 channels, no bias. Forward FLOPs: B·16·64 outputs × 16·k² MACs × 2; backward the same again
 * for the weight gradient and, for the second conv only (x needs no gradient), for the input gradient.
 *   batch 1 (input 1,024 elements ≤ 20,480): both slow, on one thread and on two;
 *   batch 4: the 1×1 is slow on one thread only, the 3×3 runs on oneDNN;
 *   batch 16: both on oneDNN. */
void test_conv_slow_path(void);
void test_conv_slow_path(void)
{
	static const int64_t batches[] = { 1, 4, 16 };
	for (int i = 0; i < 3; i++) {
		int64_t B = batches[i];
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 16, 8, 8));
		tb_weight(m, "w1", D(16, 16, 1, 1));
		tb_weight(m, "w3", D(16, 16, 3, 3));
		tb_node(m, "Conv", L("x", "w1"), L("h"));
		tb_node(m, "Conv", L("h", "w3"), L("y"));
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_output(m, "y");
		ANALYZE(m, B);
		double f1 = 2.0 * (double)(B * 16 * 64 * 16) * 2;     /* 1×1: forward + weight gradient */
		double f3 = 2.0 * (double)(B * 16 * 64 * 16 * 9) * 3; /* 3×3: forward + input and weight gradients */
		double one = B == 1 ? f1 + f3 : B == 4 ? f1 : 0, many = B == 1 ? f1 + f3 : 0;
		CHECK(a->slow_conv_flops[0] == one);
		CHECK(a->slow_conv_flops[1] == many);
		double t1[AB_TIME_TERMS], t2[AB_TIME_TERMS];
		ab_time_terms(t1, a, 1);
		ab_time_terms(t2, a, 2);
		CHECK(t1[AB_TERM_IM2COL] == one);
		CHECK(t2[AB_TERM_IM2COL] == many);
		CHECK(t1[AB_TERM_CONV] + t1[AB_TERM_IM2COL] == f1 + f3);
		CHECK(t2[AB_TERM_CONV] + t2[AB_TERM_IM2COL] == f1 + f3);
		DONE();
	}
}

/* Depthwise convolutions: 3×3, 5×5 and 3×3 dilated 2, 8 channels, group 8, on B×8×8×8 (pads keep 8×8).
 * Term 1 counts the 3×3 as it is, the 5×5's forward (9/25)^0.65 times and its backward (input and weight
 * gradients: 2 × B·8·64 outputs × 25 MACs × 2) 6.5 times, the dilated 3×3's forward once and its
 * backward 11 times (ops_nn.c conv_path). On one thread the weighted FLOPs go to the dense term 0 at
 * AB_TORCH_DW_DENSE_RATIO each (model.c); on two they stay in term 1. */
void test_depthwise_backward_term(void);
void test_depthwise_backward_term(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 8, 8));
	tb_weight(m, "w3", D(8, 1, 3, 3));
	tb_weight(m, "w5", D(8, 1, 5, 5));
	tb_node(m, "Conv", L("x", "w3"), L("h"));
	tb_attr_int(m, "group", 8);
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	tb_node(m, "Conv", L("h", "w5"), L("y"));
	tb_attr_int(m, "group", 8);
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 2, 2, 2, 2 });
	tb_weight(m, "w3d", D(8, 1, 3, 3));
	tb_node(m, "Conv", L("y", "w3d"), L("z"));
	tb_attr_int(m, "group", 8);
	tb_attr_ints(m, "dilations", 2, (const int64_t[]){ 2, 2 });
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 2, 2, 2, 2 });
	tb_output(m, "z");
	ANALYZE(m, 2);
	double t[AB_TIME_TERMS], t2[AB_TIME_TERMS];
	ab_time_terms(t, a, 1);
	ab_time_terms(t2, a, 2);
	double out = 2.0 * 8 * 64;                  /* outputs of each conv */
	double f3 = out * 9 * 2 * 2;                /* forward + weight gradient (x needs none) */
	double f5_fwd = out * 25 * 2, f5_bwd = out * 25 * 2 * 2;
	double fd_fwd = out * 9 * 2, fd_bwd = out * 9 * 2 * 2;
	double want = f3 + pow(9.0 / 25, 0.65) * f5_fwd + 6.5 * f5_bwd + fd_fwd + 11 * fd_bwd;
	CHECK(fabs(t2[AB_TERM_GROUPCONV] - want) < 1e-9 * want);
	CHECK(t2[AB_TERM_CONV] == 0);
	CHECK(t2[AB_TERM_IM2COL] == 0);
	CHECK(fabs(t[AB_TERM_CONV] - AB_TORCH_DW_DENSE_RATIO * want) < 1e-9 * want);
	CHECK(fabs(t[AB_TERM_GROUPCONV]) < 1e-9 * want);
	CHECK(t[AB_TERM_IM2COL] == 0);
	DONE();
}

/* Grouped convolutions whose groups are each a oneDNN channel block (16) wide or more count in the dense term
 * (runtime_torch_cpu.c conv_kernel), narrower ones in the grouped term, each weighted by its measured rate: on
 * B×64×8×8 (batch 2, pads 1), a 3×3 of group 2 (32 channels a group in and out) in term 0 at 1 + 6.4/32 =
 * 1.2 dense FLOPs per FLOP, one of group 8 (8 a group) in term 1 at (16/8)^1.7, on one thread and on two;
 * TensorFlow (Keras 3 runs grouped convolutions through XLA) keeps both in term 1, unweighted. Outputs
 * 2·64·64 each: the first's forward 8192 × 32·9 MACs × 2 and, its input needing no gradient, the weight
 * gradient as much again; the second's forward 8192 × 8·9 × 2 and both gradients, twice that. */
void test_grouped_dense_term(void);
void test_grouped_dense_term(void)
{
	for (int rt = 0; rt < 2; rt++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 64, 8, 8));
		tb_weight(m, "w1", D(64, 32, 3, 3));
		tb_weight(m, "w2", D(64, 8, 3, 3));
		tb_node(m, "Conv", L("x", "w1"), L("h"));
		tb_attr_int(m, "group", 2);
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_node(m, "Conv", L("h", "w2"), L("y"));
		tb_attr_int(m, "group", 8);
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_output(m, "y");
		abacus_graph *g = NULL;
		abacus_error err;
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = 2;
		cfg.runtime = rt ? "tf-2.21.0" : NULL;
		abacus_analysis *a = t_analyze_cfg(m, &cfg, &g, &err);
		CHECK(a != NULL);
		if (a) {
			double f1 = 2 * (8192.0 * 288 * 2), f2 = 3 * (8192.0 * 72 * 2);
			for (int threads = 1; threads <= 2; threads++) {
				double t[AB_TIME_TERMS];
				ab_time_terms(t, a, threads);
				CHECK(fabs(t[AB_TERM_CONV] - (rt ? 0 : 1.2 * f1)) < 1e-6);
				CHECK(fabs(t[AB_TERM_GROUPCONV] - (rt ? f1 + f2 : pow(2, 1.7) * f2)) < 1e-6);
				CHECK(t[AB_TERM_IM2COL] == 0);
			}
			CHECK(a->costs[0].dense_groups == !rt && a->costs[1].dense_groups == 0);
		}
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* Groups 16 channels wide or more but not whole oneDNN blocks are padded to blocks, and a width that is not a
 * multiple of 8 leaves the blocked kernels (runtime_torch_cpu.c conv_kernel): 2 groups of 24 channels (48 in
 * and out) weigh (1 + 6.4/24) × 32/24, 2 groups of 26 (52) (1 + 6.4/26) × 32/26 × 3, 2 of 32 (64) 1 + 6.4/32.
 * On B×C×8×8, batch 2, a 3×3 with pads 1 whose input needs no gradient: forward and weight gradient,
 * 2 × (2·C·64 outputs × c·9 MACs × 2) FLOPs, all in the dense term. */
void test_grouped_odd_widths(void);
void test_grouped_odd_widths(void)
{
	static const int64_t cpg[3] = { 24, 26, 32 };
	for (int k = 0; k < 3; k++) {
		int64_t c = 2 * cpg[k];
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, c, 8, 8));
		tb_weight(m, "w", D(c, cpg[k], 3, 3));
		tb_node(m, "Conv", L("x", "w"), L("y"));
		tb_attr_int(m, "group", 2);
		tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
		tb_output(m, "y");
		abacus_graph *g = NULL;
		abacus_error err;
		abacus_analysis *a = t_analyze(m, 2, &g, &err);
		CHECK(a != NULL);
		if (a) {
			double c_g = (double)cpg[k], flops = 2 * (2.0 * (double)c * 64 * c_g * 9 * 2);
			double w = (1 + 6.4 / c_g) * 32 / c_g * (k == 1 ? 3 : 1);
			double t[AB_TIME_TERMS];
			ab_time_terms(t, a, 1);
			CHECK(fabs(t[AB_TERM_CONV] - w * flops) < 1e-6 * flops);
			CHECK(t[AB_TERM_GROUPCONV] == 0);
		}
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}

/* 1-D depthwise convolutions: 15 taps (pads 7) then 3 taps (pads 1), 8 channels, group 8, on B×8×32.
 * Their weights come from the measured time per output element (runtime_torch_cpu.c conv_kernel), in
 * units of a 3×3's FLOP at 30 GFLOP/s: forward 15·(0.53 + 0.022·K)/K, backward 7.5·(3.4 + 0.45·K)/K:
 * K 15: 0.86 and 5.075; K 3: 2.98 and 11.875. The first convolution reads the input (no gradient):
 * its backward is the weight gradient alone. */
void test_depthwise_1d_term(void);
void test_depthwise_1d_term(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 32));
	tb_weight(m, "w15", D(8, 1, 15));
	tb_weight(m, "w3", D(8, 1, 3));
	tb_node(m, "Conv", L("x", "w15"), L("h"));
	tb_attr_int(m, "group", 8);
	tb_attr_ints(m, "pads", 2, (const int64_t[]){ 7, 7 });
	tb_node(m, "Conv", L("h", "w3"), L("y"));
	tb_attr_int(m, "group", 8);
	tb_attr_ints(m, "pads", 2, (const int64_t[]){ 1, 1 });
	tb_output(m, "y");
	ANALYZE(m, 2);
	double t2[AB_TIME_TERMS];
	ab_time_terms(t2, a, 2);
	double out = 2.0 * 8 * 32;
	double want = 0.86 * out * 15 * 2 + 5.075 * out * 15 * 2 + 2.98 * out * 3 * 2 + 11.875 * out * 3 * 2 * 2;
	CHECK(fabs(t2[AB_TERM_GROUPCONV] - want) < 1e-9 * want);
	DONE();
}

/* A weight read by two layers gets its second gradient while the first waits in autograd's input buffer;
 * the two are summed out of place (memory.c param_grads): three weight-sized buffers for a moment.
 * x 4×16 (256 B), W 16×16 (1024 B), h = x·W, r = Relu(h), y = r·W, cross-entropy over 16 classes.
 * Backward (bytes): y's MatMul leaves r (256, saved), dr (256) and dW (1024): 1536; Relu adds dh and frees
 * dr and r: 1280; x·W reads W a second time: its gradient and the sum, 2048 more, 3328 (the peak), then
 * one dW (1024) stays. Without the accumulation the peak was y's MatMul's 1792. Reading W through a
 * Transpose node (a tied embedding's output projection) is the same. Autograd records (tests.h REC) at
 * the peak: the Nodes of x·W, Relu and y's MatMul (none for the weight's Transpose); Relu's and y's
 * MatMul's handles on r were released by their backwards, and x·W saves no activation. Host memory per
 * tensor (tests.h TENS): W's one gradient (the second, summed into it, is a plain transient), at the peak
 * and after. Persistent: W, momentum, x, labels, and W's and its momentum's host memory. */
void test_tied_weight_grad(void);
void test_tied_weight_grad(void)
{
	for (int transposed = 0; transposed < 2; transposed++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 16));
		tb_weight(m, "w", D(16, 16));
		tb_node(m, "MatMul", L("x", "w"), L("h"));
		tb_node(m, "Relu", L("h"), L("r"));
		if (transposed)
			tb_node(m, "Transpose", L("w"), L("t"));
		tb_node(m, "MatMul", L("r", transposed ? "t" : "w"), L("y"));
		tb_output(m, "y");
		ANALYZE(m, 4);
		const abacus_memory *mem = abacus_analysis_memory(a);
		CHECK_EQ_I64(mem->persistent, 1024 + 1024 + 256 + 32 + TENS(1, 0, 0, TENS_SGD));
		CHECK_EQ_I64(mem->peak - mem->persistent, 3328 + REC(3, 0) + TENS(0, 0, 1, 0));
		CHECK_EQ_I64(mem->gradients, 1024 + TENS(0, 0, 1, 0));
		DONE();
	}
}

/* A mean's backward leaves its gradient laid out like the expansion; the matrix product before it copies
 * that gradient before using it (memory.c). x [4, 8, 16] · w [16, 64] → h [4, 8, 64] (8,192 bytes),
 * mean over axis 1 → [4, 64]. Backward at the product: h's gradient (8,192) and w's (4,096) live, and
 * the copy counts beyond the gradients the layer made: 8,192 − 4,096. Autograd records (tests.h REC): the
 * Nodes of the MatMul and the ReduceMean; neither saves an activation. Host memory per tensor (tests.h
 * TENS): w's gradient's, among the bytes the layer made, so the copy counts beyond it as well and the
 * peak is unchanged; it stays in the gradients. Persistent: w, its momentum, x (2,048), the labels (32),
 * and w's and its momentum's host memory. That is PyTorch 2.15's peak. 1.13's mean over dims keeps h for
 * its backward (runtime_torch_cpu.c torch113_saved), which then makes h's gradient with h and y's gradient
 * (4 · 64 · 4 = 1,024) live, and the mean's handle: 8,192 + 8,192 + 1,024 + REC(2, 1), above the product's
 * backward, with no parameter gradient made yet. */
void test_mean_grad_copy(void);
void test_mean_grad_copy(void)
{
	for (int torch2 = 0; torch2 < 2; torch2++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 8, 16));
		tb_weight(m, "w", D(16, 64));
		tb_node(m, "MatMul", L("x", "w"), L("h"));
		tb_node(m, "ReduceMean", L("h"), L("y"));
		tb_attr_ints(m, "axes", 1, (const int64_t[]){ 1 });
		tb_attr_int(m, "keepdims", 0);
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze_runtime(m, 4, torch2 ? "torch-2.15.0" : NULL, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		const abacus_memory *mem = abacus_analysis_memory(a);
		CHECK_EQ_I64(mem->persistent, 4096 + 4096 + 2048 + 32 + TENS(1, 0, 0, TENS_SGD));
		int64_t dw = 4096 + TENS(0, 0, 1, 0);
		if (torch2) {
			CHECK_EQ_I64(mem->peak - mem->persistent, 8192 + dw + (8192 - dw) + REC(2, 0));
			CHECK_EQ_I64(mem->gradients, dw);
		} else {
			CHECK_EQ_I64(mem->peak - mem->persistent, 8192 + 8192 + 1024 + REC(2, 1));
			CHECK_EQ_I64(mem->gradients, 0);
		}
		DONE();
	}
}

/* Term 4 weighs each kernel layer by its measured fixed cost (analysis.c ab_layer_dispatch): a 1×1
 * convolution 19.4 µs, a 3×3 one 32.2, a batch norm 28.8, a ReLU 4.8, a matrix product 18; the Flatten
 * is a view (term 7) and costs nothing here: 103.2 in all. */
void test_dispatch_weights(void);
void test_dispatch_weights(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 4, 4));
	tb_weight(m, "w1", D(8, 8, 1, 1));
	tb_weight(m, "w3", D(8, 8, 3, 3));
	const char *p[4] = { "s", "b", "m", "v" };
	for (int k = 0; k < 4; k++)
		tb_weight(m, p[k], D(8));
	tb_weight(m, "fc", D(128, 10));
	tb_node(m, "Conv", L("x", "w1"), L("c1"));
	tb_node(m, "Conv", L("c1", "w3"), L("c3"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	tb_node(m, "BatchNormalization", L("c3", "s", "b", "m", "v"), L("n", "rm", "rv"));
	tb_attr_int(m, "training_mode", 1);
	tb_node(m, "Relu", L("n"), L("r"));
	tb_node(m, "Flatten", L("r"), L("f"));
	tb_node(m, "MatMul", L("f", "fc"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 2);
	double t[AB_TIME_TERMS];
	ab_time_terms(t, a, 1);
	CHECK(fabs(a->dispatch - 103.2) < 1e-9);
	CHECK(fabs(t[AB_TERM_KERNELS] - 103.2) < 1e-9);
	CHECK(fabs(t[AB_TERM_VIEWS] - 1) < 1e-9);
	DONE();
}

/* A batched matrix product's fixed cost per matrix (ab_cost.bmm_items, the runtime's bmm_item_us, the time
 * term AB_TERM_BMM_ITEMS), here with the layer's dispatch (AB_TERM_KERNELS). At batch 2,
 * q = x·Wq and k = x·Wk are [2, 4, 8, 16] (a 2-D right operand: one matrix product, no items); q·kᵀ is a bmm of
 * 2·4 = 8 matrices of [8, 16]×[16, 8] (m·k·n 1,024), its forward and both operands' gradients: 24 items,
 * each 1.6 µs on PyTorch 1.13 (a matrix of m·k·n ≥ 400 is an addmm of its own), 0.5 on 2.15, beside the
 * 10 µs of a product of two activations (an attention-like layer): 48.4 and 22 µs. einsum("bhld,bhld->bhl",
 * q, k) contracts d over 2·4·8 = 64 matrices of [1, 16]×[16, 1] (16): 192 items at 0.35 µs (1.13's one naive
 * kernel) or 0.5: 77.2 and 106 µs. The projections keep a Linear's 18. */
void test_bmm_items(void);
void test_bmm_items(void)
{
	for (int torch2 = 0; torch2 < 2; torch2++) {
		tb_model *m = tb_new(14);
		tb_input(m, "x", D(-1, 4, 8, 16));
		tb_weight(m, "wq", D(16, 16));
		tb_weight(m, "wk", D(16, 16));
		tb_node(m, "MatMul", L("x", "wq"), L("q"));
		tb_node(m, "MatMul", L("x", "wk"), L("k"));
		tb_node(m, "Transpose", L("k"), L("kt"));
		tb_attr_ints(m, "perm", 4, (const int64_t[]){ 0, 1, 3, 2 });
		tb_node(m, "MatMul", L("q", "kt"), L("s"));
		tb_node(m, "Einsum", L("q", "k"), L("e"));
		tb_attr_str(m, "equation", "bhld,bhld->bhl");
		tb_node(m, "ReduceSum", L("s"), L("ss"));
		tb_attr_int(m, "keepdims", 0);
		tb_node(m, "ReduceSum", L("e"), L("es"));
		tb_attr_int(m, "keepdims", 0);
		tb_node(m, "Add", L("ss", "es"), L("y"));
		tb_output(m, "y");
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze_runtime(m, 2, torch2 ? "torch-2.15.0" : NULL, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		int found = 0;
		for (size_t L = 0; L < a->n_layers; L++) {
			const ab_node *n = &a->g->nodes[a->layer_node[L]];
			const ab_cost *k = &a->costs[L];
			double us = ab_layer_bmm_us(a, L) + a->rt->dispatch_us(a, L);
			if (!strcmp(n->op, "MatMul") && n->in[1] >= 0 && !strcmp(a->g->tensors[n->in[1]].name, "kt")) {
				found++;
				CHECK_EQ_I64(k->bmm_items, 24);
				CHECK_EQ_I64(k->bmm_mkn, 1024);
				CHECK(fabs(us - (torch2 ? 22 : 48.4)) < 1e-9);
			} else if (!strcmp(n->op, "MatMul")) {
				found++;
				CHECK_EQ_I64(k->bmm_items, 0);
				CHECK(fabs(us - 18) < 1e-9);
			} else if (!strcmp(n->op, "Einsum")) {
				found++;
				CHECK_EQ_I64(k->bmm_items, 192);
				CHECK_EQ_I64(k->bmm_mkn, 16);
				CHECK(fabs(us - (torch2 ? 106 : 77.2)) < 1e-9);
			}
		}
		CHECK(found == 4);
		double t[AB_TIME_TERMS];
		ab_time_terms(t, a, 1);
		CHECK(fabs(t[AB_TERM_BMM_ITEMS] - (torch2 ? 24 * 0.5 + 192 * 0.5 : 24 * 1.6 + 192 * 0.35)) < 1e-9);
		DONE();
	}
}

/* Folding through the op table's scalar functions (ops_elem.c): Mean of two float constants (4 and 8: 6)
 * and Mod with fmod=1 on floats (C's fmod: -6 mod 4 = -2, negated 2) decide a Reshape's target, so a
 * wrong fold is a wrong shape or an error. Before the op table carried these functions, Mean never folded
 * (the float path had no "Mean") and float Mod ignored fmod (floor mod: 2, negated -2, an invalid dim). */
void test_fold_mean_mod(void);
void test_fold_mean_mod(void)
{
	tb_model *m = tb_new(13);
	tb_input(m, "x", D(-1, 12));
	tb_scalar(m, "four", 1, 4.0);
	tb_scalar(m, "eight", 1, 8.0);
	tb_scalar(m, "minus6", 1, -6.0);
	tb_ints(m, "minus1", 1, (const int64_t[]){ -1 });
	tb_ints(m, "ax0", 1, (const int64_t[]){ 0 });
	tb_node(m, "Mean", L("four", "eight"), L("mean"));
	tb_node(m, "Mod", L("minus6", "four"), L("mod"));
	tb_attr_int(m, "fmod", 1);
	tb_node(m, "Neg", L("mod"), L("two"));
	tb_node(m, "Mul", L("mean", "two"), L("twelve"));
	tb_node(m, "Div", L("twelve", "two"), L("six"));
	tb_node(m, "Cast", L("six"), L("six_i"));
	tb_attr_int(m, "to", 7);
	tb_node(m, "Unsqueeze", L("six_i", "ax0"), L("six_1"));
	tb_node(m, "Concat", L("minus1", "six_1"), L("shape"));
	tb_attr_int(m, "axis", 0);
	tb_node(m, "Reshape", L("x", "shape"), L("r"));
	tb_node(m, "Relu", L("r"), L("y"));
	tb_output(m, "y");
	ANALYZE(m, 3);
	const abacus_layer *l = t_layer(a, "Relu");
	CHECK(l != NULL);
	if (l) {
		CHECK_EQ_I64(l->rank, 2);
		CHECK_EQ_I64(l->dims[0], 3 * 12 / 6);
		CHECK_EQ_I64(l->dims[1], 6);
	}
	/* Every node before the Reshape folded to a constant: only the Reshape (a view) and the Relu remain. */
	CHECK_EQ_I64(abacus_analysis_totals(a)->layers, 2);
	DONE();
}
