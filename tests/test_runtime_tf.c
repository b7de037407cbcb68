/*
 * test_runtime_tf.c — the TensorFlow 2.21 runtime's memory rules (src/runtime_tf_cpu.c) against PyTorch's on
 * small graphs, each difference worked out by hand beside it, and PyTorch 2.15's one difference from 1.13
 * (runtime_torch2_cpu.c). float32: 4 bytes an element.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "runtime.h"
#include "tests.h"

/* Packs, loads and analyses m under `runtime` (NULL: the default); *a and *g for the caller to free (NULL
 * after an error, which is printed). */
static int analysis_rt(tb_model *m, int64_t batch, int adam, const char *runtime, abacus_analysis **a,
                       abacus_graph **g)
{
	uint8_t *buf;
	size_t len;
	tb_pack(m, &buf, &len);
	abacus_error err;
	*a = NULL;
	*g = NULL;
	int rc = abacus_graph_load(g, buf, len, &err);
	free(buf);
	if (rc) {
		fprintf(stderr, "  load failed: %s\n", err.msg);
		return rc;
	}
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = batch;
	cfg.optimizer = adam ? ABACUS_OPT_ADAM : ABACUS_OPT_SGD;
	cfg.runtime = runtime;
	if ((rc = abacus_analyze(a, *g, &cfg, &err)))
		fprintf(stderr, "  analysis failed: %s\n", err.msg);
	return rc;
}

static int analyze_rt(tb_model *m, int64_t batch, int adam, const char *runtime, abacus_memory *out)
{
	abacus_analysis *a;
	abacus_graph *g;
	int rc = analysis_rt(m, batch, adam, runtime, &a, &g);
	if (!rc)
		*out = *abacus_analysis_memory(a);
	abacus_analysis_free(a);
	abacus_graph_free(g);
	return rc;
}

/* Both runtimes on one graph: torch (the default) and tf-2.21.0. */
#define BOTH(build, batch, adam, pt, tf)                                                    \
	do {                                                                                    \
		tb_model *m1 = build(), *m2 = build();                                              \
		int r1 = analyze_rt(m1, (batch), (adam), NULL, &(pt));                              \
		int r2 = analyze_rt(m2, (batch), (adam), "tf-2.21.0", &(tf));                       \
		tb_free(m1);                                                                        \
		tb_free(m2);                                                                        \
		CHECK_EQ_I64(r1, 0);                                                                \
		CHECK_EQ_I64(r2, 0);                                                                \
		if (r1 || r2)                                                                       \
			return;                                                                         \
	} while (0)

/* x [1, 1024] @ w [1024, 1024]: 4 MiB of weights, activations of 4 KiB: the step is the peak. */
static tb_model *big_linear(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 1024));
	tb_weight(m, "w", D(1024, 1024));
	tb_node(m, "MatMul", L("x", "w"), L("y"));
	tb_output(m, "y");
	return m;
}

/* The optimizer step: Keras 3's SGD with momentum makes one temporary the size of each variable
 * (PyTorch's updates in place: none), its Adam one (PyTorch's two). w is 1024·1024·4 = 4,194,304 bytes.
 * TensorFlow's SGD makes w's temporary, m·momentum, when the step starts (test_tf_sgd_momentum_early) and
 * updates w in the MatMul's backward, where y's gradient (1,024 · 4 = 4,096 bytes) is still live: above the
 * persistent state the temporary, w's gradient and y's, 8,392,704; its Adam updates w there too
 * (test_tf_adam_update_in_backward), with one temporary beside the gradient: 8,392,704. PyTorch's Adam step holds w's gradient and two,
 * 12,582,912, the MatMul's autograd Node (tests.h REC), which lives until the step returns (it saves no
 * activation: x is a graph input), and w's gradient's host memory (tests.h TENS); TensorFlow keeps neither.
 * (PyTorch's SGD peak is in backward, where the weight's gradient meets the loss's buffers.) Persistent
 * state alike but for the traced step's. */
void test_tf_step_temporaries(void);
void test_tf_step_temporaries(void)
{
	abacus_memory pt, tf;
	BOTH(big_linear, 1, 0, pt, tf);
	/* Beyond the traced step's state (test_tf_traced_step_state: 1,130,000 + 259,000 for w + 0 for the
	 * MatMul under SGD, 509,000 for w under Adam), the persistent state is PyTorch's, less PyTorch's host
	 * memory per tensor (tests.h TENS): w's and its optimizer state's. */
	CHECK_EQ_I64(tf.persistent - pt.persistent, 1389000 - TENS(1, 0, 0, TENS_SGD));
	CHECK_EQ_I64(tf.peak - tf.persistent, 8392704);
	CHECK(pt.peak - pt.persistent < 8388608);
	BOTH(big_linear, 1, 1, pt, tf);
	CHECK_EQ_I64(tf.persistent - pt.persistent, 1639000 - TENS(1, 0, 0, TENS_ADAM));
	CHECK_EQ_I64(tf.peak - tf.persistent, 8392704);
	CHECK_EQ_I64(pt.peak - pt.persistent, 12582912 + REC(1, 0) + TENS(0, 0, 1, 0));
}

/* x [B, 16, 8, 8] → Conv 3×3 (32, pad 1, no bias) → pool → GlobalAveragePool: the conv's output is
 * 32·8·8·4 = 8,192 bytes a sample. */
static tb_model *conv_pool(const char *pool)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16, 8, 8));
	tb_weight(m, "w", D(32, 16, 3, 3));
	tb_node(m, "Conv", L("x", "w"), L("y"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	if (pool) {
		tb_node(m, pool, L("y"), L("p"));
		tb_attr_ints(m, "kernel_shape", 2, (const int64_t[]){ 2, 2 });
		tb_attr_ints(m, "strides", 2, (const int64_t[]){ 2, 2 });
	}
	tb_node(m, "GlobalAveragePool", L(pool ? "p" : "y"), L("g"));
	tb_output(m, "g");
	return m;
}
static tb_model *conv_gap(void) { return conv_pool(NULL); }
static tb_model *conv_maxpool(void) { return conv_pool("MaxPool"); }
static tb_model *conv_avgpool(void) { return conv_pool("AveragePool"); }

/* What pooling keeps for backward. Saved at the end of the forward pass, batch 4:
 * - Conv → GlobalAveragePool: PyTorch keeps the pool's input (4 · 8,192 = 32,768 bytes), TensorFlow's
 *   Mean gradient only its shape: 0.
 * - Conv → MaxPool 2×2 → GAP: PyTorch keeps the conv output (32,768), int64 indices of the [4, 32, 4, 4]
 *   output (2,048 elements · 8 = 16,384) and the GAP's input (2,048 · 4 = 8,192): 57,344. TensorFlow's
 *   MaxPoolGrad reads the input and the output: 32,768 + 8,192 = 40,960.
 * - Conv → AveragePool 2×2 → GAP: PyTorch 32,768 + 8,192 = 40,960; TensorFlow nothing.
 * PyTorch adds its autograd records (tests.h REC): a Node per layer (two or three) and a handle per saved
 * activation, each pool's on its input (one or two; the conv saves x, a graph input, and its weight, and
 * MaxPool's indices are an extra buffer); TensorFlow none. */
void test_tf_pool_saved(void);
void test_tf_pool_saved(void)
{
	abacus_memory pt, tf;
	BOTH(conv_gap, 4, 0, pt, tf);
	CHECK_EQ_I64(pt.saved, 32768 + REC(2, 1));
	CHECK_EQ_I64(tf.saved, 0);
	BOTH(conv_maxpool, 4, 0, pt, tf);
	CHECK_EQ_I64(pt.saved, 57344 + REC(3, 2));
	CHECK_EQ_I64(tf.saved, 40960);
	BOTH(conv_avgpool, 4, 0, pt, tf);
	CHECK_EQ_I64(pt.saved, 40960 + REC(3, 2));
	CHECK_EQ_I64(tf.saved, 0);
}

/* x [8, 16, 8, 8] → Conv → Relu → GAP, the output [8, 32, 1, 1] (1,024 bytes) under MSE, whose error (1,024)
 * lives until the step. A [8, 32, 8, 8] map is 65,536 bytes, the conv's weight 32·16·9·4 = 18,432. Above the
 * persistent state, with TensorFlow's SGD momentum product of the weight (18,432, live from the step's start
 * to the weight's update: test_tf_sgd_momentum_early):
 * - without the Relu (TensorFlow): the conv's backward holds the pool's gradient (one map), its weight's
 *   gradient, the error and the product: 65,536 + 18,432 + 1,024 + 18,432 = 103,424;
 * - with it, at the pool's backward, the ReLU's saved output, the pool's input gradient, the pool's output
 *   gradient, the error and the product: 65,536 + 65,536 + 1,024 + 1,024 + 18,432 = 151,552 on TensorFlow,
 *   whose ReluGrad then writes the conv's output gradient into the ReLU's (in place);
 * - PyTorch's ReLU backward makes a fresh one beside them (the pool's output gradient already freed):
 *   3 · 65,536 + 1,024 = 197,632, with its autograd records (tests.h REC): the Nodes of the conv, the ReLU and
 *   the pool, and the ReLU's handle on its output (released after its backward; the pool's went with its
 *   backward, and the conv saves no activation). */
static tb_model *conv_relu_gap(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16, 8, 8));
	tb_weight(m, "w", D(32, 16, 3, 3));
	tb_node(m, "Conv", L("x", "w"), L("y"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	tb_node(m, "Relu", L("y"), L("r"));
	tb_node(m, "GlobalAveragePool", L("r"), L("g"));
	tb_output(m, "g");
	return m;
}

void test_tf_activation_grad_in_place(void);
void test_tf_activation_grad_in_place(void)
{
	abacus_memory pt0, tf0, pt1, tf1;
	BOTH(conv_gap, 8, 0, pt0, tf0);
	BOTH(conv_relu_gap, 8, 0, pt1, tf1);
	CHECK_EQ_I64(tf0.peak - tf0.persistent, 103424);
	CHECK_EQ_I64(tf1.peak - tf1.persistent, 151552);
	CHECK_EQ_I64(pt1.peak - pt1.persistent, 197632 + REC(3, 1));
}

/* x [B, 16, 8, 8] → Conv 3×3 (32, bias) → BatchNormalization (training) → Relu → GlobalAveragePool. */
static tb_model *conv_bn_relu_gap(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16, 8, 8));
	tb_weight(m, "w", D(32, 16, 3, 3));
	tb_weight(m, "b", D(32));
	tb_weight(m, "s", D(32));
	tb_weight(m, "beta", D(32));
	tb_weight(m, "mean", D(32));
	tb_weight(m, "var", D(32));
	tb_node(m, "Conv", L("x", "w", "b"), L("y"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	tb_node(m, "BatchNormalization", L("y", "s", "beta", "mean", "var"), L("n", "rm", "rv"));
	tb_attr_int(m, "training_mode", 1);
	tb_node(m, "Relu", L("n"), L("r"));
	tb_node(m, "GlobalAveragePool", L("r"), L("g"));
	tb_output(m, "g");
	return m;
}

/* The traced step's state between steps (runtime_tf_cpu.c tf_state_bytes), counted with the buffers. Four
 * trainable variables (w, b, the batch norm's scale and shift; its moving statistics are buffers) and four
 * layers: under SGD 1,130,000 (fixed) + 4 · 259,000 + 14,000 (Conv) + 570,000 (BatchNormalization) +
 * 21,000 (Relu) + 35,000 (the pool) = 2,806,000 bytes, and the first convolution and batch norm of their
 * shapes (test_tf_distinct_shapes) 43,000 + 83,000, and MSE's two tensors the size of the [1, 32, 1, 1]
 * output (tf_mse_bytes: 2 · 128): 2,932,256; under Adam 4 · 509,000 for the variables instead, 3,932,256. The
 * batch changes only MSE's tensors (batch 4: 2 · 3 · 128 = 768 more); PyTorch counts the running statistics (2 · 32 · 4 = 256 bytes) and
 * its host memory per tensor (tests.h TENS): four parameters (w, b, scale, shift) with their optimizer's
 * state and three buffers (the two statistics, num_batches_tracked). */
void test_tf_traced_step_state(void);
void test_tf_traced_step_state(void)
{
	abacus_memory pt, tf, tf4;
	BOTH(conv_bn_relu_gap, 1, 0, pt, tf);
	CHECK_EQ_I64(pt.buffers, 256 + TENS(4, 3, 0, TENS_SGD));
	CHECK_EQ_I64(tf.buffers - pt.buffers, 2932256 - TENS(4, 3, 0, TENS_SGD));
	CHECK_EQ_I64(tf.persistent - pt.persistent, 2932256 - TENS(4, 3, 0, TENS_SGD));
	CHECK_EQ_I64(tf.persistent, tf.weights + tf.buffers + tf.optimizer + tf.inputs);
	BOTH(conv_bn_relu_gap, 4, 0, pt, tf4);
	CHECK_EQ_I64(tf4.buffers - tf.buffers, 768);
	BOTH(conv_bn_relu_gap, 1, 1, pt, tf);
	CHECK_EQ_I64(pt.buffers, 256 + TENS(4, 3, 0, TENS_ADAM));
	CHECK_EQ_I64(tf.buffers - pt.buffers, 3932256 - TENS(4, 3, 0, TENS_ADAM));
}

/* x [1, 1024] @ w1 [1024, 1024] → h [1, 1024] @ w2 [1024, 256] → y: 4 MiB, then 1 MiB of weights; backward
 * makes w2's gradient first. */
static tb_model *two_linears(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 1024));
	tb_weight(m, "w1", D(1024, 1024));
	tb_weight(m, "w2", D(1024, 256));
	tb_node(m, "MatMul", L("x", "w1"), L("h"));
	tb_node(m, "MatMul", L("h", "w2"), L("y"));
	tb_output(m, "y");
	return m;
}

/* TensorFlow's Adam updates each variable as soon as its gradient exists and frees it (adam_update_in_backward);
 * so does its SGD (sgd_momentum_early); PyTorch's step waits for all of them. At batch 1, above the persistent
 * state:
 * - SGD: both momentum products from the step's start (4,194,304 + 1,048,576 = 5,242,880); y's backward makes
 *   w2's gradient (1,048,576) and h's (4,096) beside y's (1,024) and h (4,096): 6,300,672; w2's update frees
 *   its gradient and product; then w1's gradient (4,194,304) with w1's product and h's gradient: 8,392,704.
 *   Holding both gradients to the step with one temporary of the largest would have been 9,437,184.
 * - Adam: w2 is updated in y's backward (1,048,576 and a temporary as large, with y's gradient of 1,024 bytes
 *   and h saved, 4,096: 2,102,272) and gone; then w1's gradient and its temporary, 8,388,608, with h's
 *   gradient (4,096) not yet consumed: 8,392,704. All at once it would have been 9,437,184 as SGD's. */
void test_tf_adam_update_in_backward(void);
void test_tf_adam_update_in_backward(void)
{
	abacus_memory pt, tf;
	BOTH(two_linears, 1, 0, pt, tf);
	CHECK_EQ_I64(tf.peak - tf.persistent, 8392704);
	BOTH(two_linears, 1, 1, pt, tf);
	CHECK_EQ_I64(tf.peak - tf.persistent, 8392704);
	CHECK_EQ_I64(tf.gradients, 4194304);
	/* PyTorch's Adam: both gradients and two temporaries of w1's size at the step, the two MatMuls'
	 * autograd Nodes (tests.h REC), alive until the step returns (the second's handle on h went with its
	 * backward), and both gradients' host memory (tests.h TENS). */
	CHECK_EQ_I64(pt.peak - pt.persistent, 5242880 + 2 * 4194304 + REC(2, 0) + TENS(0, 0, 2, 0));
}

/* x [B, 64, 2, 2] → Conv 7×7 (pad 3, 64 groups, no bias) → GlobalAveragePool → [B, 64, 1, 1] under MSE. The
 * kernel is a variable in Keras's layout, transposed to ONNX's [64, 1, 7, 7]: [7, 7, 1, 64] is a Conv2D with
 * groups = 64 (Keras 3 runs it through XLA), [7, 7, 64, 1] a DepthwiseConv2D (TensorFlow's own kernel). */
static tb_model *grouped_conv(int xla)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 64, 2, 2));
	if (xla)
		tb_weight(m, "k", D(7, 7, 1, 64));
	else
		tb_weight(m, "k", D(7, 7, 64, 1));
	tb_node(m, "Transpose", L("k"), L("w"));
	tb_attr_ints(m, "perm", 4, xla ? (const int64_t[]){ 3, 2, 0, 1 } : (const int64_t[]){ 2, 3, 0, 1 });
	tb_node(m, "Conv", L("x", "w"), L("y"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ 3, 3, 3, 3 });
	tb_attr_int(m, "group", 64);
	tb_node(m, "GlobalAveragePool", L("y"), L("g"));
	tb_output(m, "g");
	return m;
}
static tb_model *grouped_conv_xla(void) { return grouped_conv(1); }
static tb_model *grouped_conv_depthwise(void) { return grouped_conv(0); }

/* XLA's grouped convolution (runtime_tf_cpu.c tf_xla_dense_filter): two dense 7 · 7 · 64 · 64 filters,
 * 2 · 802,816 = 1,605,632 bytes, at the end of the forward, with what is live then. At batch 1 under SGD that
 * is the kernel's momentum product (7 · 7 · 64 · 4 = 12,544; test_tf_sgd_momentum_early) and the output
 * (64 · 4 = 256): 1,618,432 above the persistent state. The depthwise layout's peak is its backward
 * (test_tf_depthwise_filter_copies): the output's gradient (64 · 2 · 2 · 4 = 1,024), the kernel's gradient and
 * product, MSE's error (256) and 256 copies of the kernel (3,211,264): 3,237,632. Under Adam, which makes no
 * product: 1,605,888. The
 * compiled function adds 790,000 bytes to the persistent state (17,000 for either kind of grouped
 * convolution). PyTorch's numbers do not depend on the layout. */
void test_tf_xla_grouped_conv(void);
void test_tf_xla_grouped_conv(void)
{
	abacus_memory pt0, tf0, pt1, tf1;
	BOTH(grouped_conv_depthwise, 1, 0, pt0, tf0);
	BOTH(grouped_conv_xla, 1, 0, pt1, tf1);
	CHECK_EQ_I64(tf0.peak - tf0.persistent, 3237632);
	CHECK_EQ_I64(tf1.peak - tf1.persistent, 1618432);
	CHECK_EQ_I64(tf1.persistent - tf0.persistent, 790000);
	CHECK_EQ_I64(pt1.peak, pt0.peak);
	CHECK_EQ_I64(pt1.persistent, pt0.persistent);
	BOTH(grouped_conv_xla, 1, 1, pt1, tf1);
	CHECK_EQ_I64(tf1.peak - tf1.persistent, 1605888);
}

/* x [B, 8, 4, 4] → Conv 1×1 (w1 [8, 8, 1, 1]) → Conv 1×1 (w2 [c, 8, 1, 1]) → GlobalAveragePool. */
static tb_model *two_convs(int64_t c)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 4, 4));
	tb_weight(m, "w1", D(8, 8, 1, 1));
	if (c == 8)
		tb_weight(m, "w2", D(8, 8, 1, 1));
	else
		tb_weight(m, "w2", D(16, 8, 1, 1));
	tb_node(m, "Conv", L("x", "w1"), L("h"));
	tb_node(m, "Conv", L("h", "w2"), L("y"));
	tb_node(m, "GlobalAveragePool", L("y"), L("g"));
	tb_output(m, "g");
	return m;
}
static tb_model *two_convs_same(void) { return two_convs(8); }
static tb_model *two_convs_distinct(void) { return two_convs(16); }

/* The first layer of each shape (runtime_tf_cpu.c tf_distinct_bytes): a convolution 43,000 bytes of the
 * traced step's state (a batch norm 83,000, a grouped convolution 40,000). The traced step's state under SGD,
 * batch 1: 1,130,000 (fixed) + 2 · 259,000 (w1, w2) + 2 · 14,000 (the convolutions) + 35,000 (the pool) =
 * 1,711,000, and the distinct shapes: with w2 like w1 the second convolution reads and makes what the first
 * does ([1, 8, 4, 4], [8, 8, 1, 1] → [1, 8, 4, 4]): one shape, 43,000; with 16 output channels two, 86,000.
 * With MSE's two output-sized tensors (tf_mse_bytes; the output [1, 8, 1, 1] or [1, 16, 1, 1], 32 or 64
 * bytes): 1,754,064 and 1,797,128. PyTorch keeps no such state (its buffers are its host memory per tensor
 * alone). */
void test_tf_distinct_shapes(void);
void test_tf_distinct_shapes(void)
{
	abacus_memory pt0, tf0, pt1, tf1;
	BOTH(two_convs_same, 1, 0, pt0, tf0);
	BOTH(two_convs_distinct, 1, 0, pt1, tf1);
	CHECK_EQ_I64(tf0.buffers, 1754064);
	CHECK_EQ_I64(tf1.buffers, 1797128);
	CHECK_EQ_I64(pt1.buffers, pt0.buffers);
}

/* x [40, B, 16] → GRU (hidden 8: W [1, 24, 16], R [1, 24, 8]) → y, or over 8 steps. TensorFlow's backward loop
 * keeps up to 32 iterations in flight (Keras 3's parallel_iterations), each with its partial gradients of W and
 * R: 24 · (16 + 8) floats = 2,304 bytes; over 40 steps 32 of them, 73,728 bytes of workspace in the layer's
 * backward, over 8 steps 8, 18,432. PyTorch's rule, 3 R (3 · 24 · 8 · 4 = 2,304) less the layer's gradients
 * made at once (R 768, W 1,536, the biases 2 · 24 · 4 = 192: 2,496), holds none. */
static tb_model *gru_steps(int64_t seq)
{
	tb_model *m = tb_new(14);
	if (seq == 40)
		tb_input(m, "x", D(40, -1, 16));
	else
		tb_input(m, "x", D(8, -1, 16));
	tb_weight(m, "W", D(1, 24, 16));
	tb_weight(m, "R", D(1, 24, 8));
	tb_weight(m, "B", D(1, 48));
	tb_node(m, "GRU", L("x", "W", "R", "B"), L("y", "yh"));
	tb_attr_int(m, "hidden_size", 8);
	tb_output(m, "y");
	return m;
}

static int64_t rnn_workspace(int64_t seq, const char *runtime)
{
	tb_model *m = gru_steps(seq);
	abacus_analysis *a;
	abacus_graph *g;
	int64_t ws = -1;
	if (analysis_rt(m, 2, 0, runtime, &a, &g) == 0)
		for (size_t L = 0; L < a->n_layers; L++)
			if (!strcmp(a->g->nodes[a->layer_node[L]].op, "GRU"))
				ws = a->costs[L].bwd_workspace;
	tb_free(m);
	abacus_analysis_free(a);
	abacus_graph_free(g);
	return ws;
}

static tb_model *gru_steps_8(void)
{
	return gru_steps(8);
}

void test_tf_rnn_parallel_iterations(void);
void test_tf_rnn_parallel_iterations(void)
{
	CHECK_EQ_I64(rnn_workspace(40, "tf-2.21.0"), 73728);
	CHECK_EQ_I64(rnn_workspace(8, "tf-2.21.0"), 18432);
	CHECK_EQ_I64(rnn_workspace(40, NULL), 0);
}

/* x [1, 64, 2, 2] → DepthwiseConv2D K×K (Keras's kernel [K, K, 64, 1], transposed to [64, 1, K, K]; pad K / 2)
 * → GlobalAveragePool → [1, 64, 1, 1] under MSE. */
static tb_model *depthwise(int k)
{
	tb_model *m = tb_new(14);
	int64_t p = k / 2;
	tb_input(m, "x", D(-1, 64, 2, 2));
	if (k == 5)
		tb_weight(m, "k", D(5, 5, 64, 1));
	else
		tb_weight(m, "k", D(3, 3, 64, 1));
	tb_node(m, "Transpose", L("k"), L("w"));
	tb_attr_ints(m, "perm", 4, (const int64_t[]){ 2, 3, 0, 1 });
	tb_node(m, "Conv", L("x", "w"), L("y"));
	tb_attr_ints(m, "pads", 4, (const int64_t[]){ p, p, p, p });
	tb_attr_int(m, "group", 64);
	tb_node(m, "GlobalAveragePool", L("y"), L("g"));
	tb_output(m, "g");
	return m;
}
static tb_model *depthwise3(void) { return depthwise(3); }
static tb_model *depthwise5(void) { return depthwise(5); }

/* A DepthwiseConv2D whose kernel is not 3×3 holds 256 copies of its filter in its backward (runtime_tf_cpu.c
 * TF_DW_FILTER_COPIES). At batch 1 under SGD, above the persistent state:
 * - 5×5: the kernel is 64 · 25 · 4 = 6,400 bytes; in the convolution's backward MSE's error (64 · 4 = 256),
 *   the output's gradient (64 · 2 · 2 · 4 = 1,024), the kernel's gradient (6,400), its momentum product
 *   (6,400; test_tf_sgd_momentum_early) and 256 · 6,400 = 1,638,400: 1,652,480;
 * - 3×3 (2,304 bytes): no copies; the peak is the convolution's backward, the gradient, the product, the
 *   output's gradient and the error: 2 · 2,304 + 1,024 + 256 = 5,888.
 * PyTorch's numbers have no such copies (its 5×5 peak is far below the 256 copies). */
void test_tf_depthwise_filter_copies(void);
void test_tf_depthwise_filter_copies(void)
{
	abacus_memory pt, tf;
	BOTH(depthwise5, 1, 0, pt, tf);
	CHECK_EQ_I64(tf.peak - tf.persistent, 1652480);
	CHECK(pt.peak - pt.persistent < 1638400);
	BOTH(depthwise3, 1, 0, pt, tf);
	CHECK_EQ_I64(tf.peak - tf.persistent, 5888);
}

/* PyTorch 2.15 adds an embedding's later gradient into the earlier one in place (runtime.h
 * step.gather_grad_in_place; runtime_torch2_cpu.c has the measurement): tokens x [B, 8] (int64) look up
 * E [64, 16] (4,096 bytes) twice, the two lookups are added and averaged over the sequence, cross-entropy
 * over 16 classes. In backward the second lookup's gradient of E meets the first's: 1.13 holds two more
 * E-sized buffers for that moment (the new gradient and the out-of-place sum), 2.15 one (the new gradient,
 * added into the first). Everything else is the same in both runtimes, and that moment is the peak in
 * both (the first E gradient, 4,096, is live there beside the accumulation), so 1.13's peak is exactly one
 * E above 2.15's; the persistent state is equal. A weight read twice by matrix products (x·W, then r·W)
 * sums out of place in both: equal peaks. */
static tb_model *embedding_twice(void)
{
	tb_model *m = tb_new(14);
	tb_input_typed(m, "x", 7, 2, (const int64_t[]){ -1, 8 });
	tb_weight(m, "e", D(64, 16));
	tb_node(m, "Gather", L("e", "x"), L("a"));
	tb_node(m, "Gather", L("e", "x"), L("b"));
	tb_node(m, "Add", L("a", "b"), L("c"));
	tb_node(m, "ReduceMean", L("c"), L("y"));
	tb_attr_ints(m, "axes", 1, (const int64_t[]){ 1 });
	tb_attr_int(m, "keepdims", 0);
	tb_output(m, "y");
	return m;
}

static tb_model *matmul_twice(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16));
	tb_weight(m, "w", D(16, 16));
	tb_node(m, "MatMul", L("x", "w"), L("h"));
	tb_node(m, "Relu", L("h"), L("r"));
	tb_node(m, "MatMul", L("r", "w"), L("y"));
	tb_output(m, "y");
	return m;
}

/* Both PyTorch runtimes on one graph at batch 2 under SGD: 1.13 into *t1, 2.15 into *t2; 0 or an error. */
static int torch_both(tb_model *(*build)(void), abacus_memory *t1, abacus_memory *t2)
{
	tb_model *m1 = build(), *m2 = build();
	int r1 = analyze_rt(m1, 2, 0, "torch-1.13.1", t1), r2 = analyze_rt(m2, 2, 0, "torch-2.15.0", t2);
	tb_free(m1);
	tb_free(m2);
	CHECK_EQ_I64(r1, 0);
	CHECK_EQ_I64(r2, 0);
	return r1 ? r1 : r2;
}

void test_torch2_embedding_grad_in_place(void);
void test_torch2_embedding_grad_in_place(void)
{
	tb_model *(*builds[2])(void) = { embedding_twice, matmul_twice };
	for (int i = 0; i < 2; i++) {
		abacus_memory t1, t2;
		if (torch_both(builds[i], &t1, &t2))
			return;
		CHECK_EQ_I64(t1.persistent, t2.persistent);
		CHECK_EQ_I64(t1.peak - t2.peak, i == 0 ? 64 * 16 * 4 : 0);
	}
}

/* PyTorch 2.15 trains a CPU LSTM through oneDNN's fused RNN kernel, which keeps its own workspace instead of
 * 1.13's per-step tensors and records (runtime.h rnn.lstm_fused; test_torch2_fused_lstm has its bytes); a
 * GRU runs step by step in both and keeps the same. x [8, B, 16] → LSTM or GRU (hidden 8) at batch 2. */
tb_model *lstm8(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(8, -1, 16));
	tb_weight(m, "W", D(1, 32, 16));
	tb_weight(m, "R", D(1, 32, 8));
	tb_weight(m, "B", D(1, 64));
	tb_node(m, "LSTM", L("x", "W", "R", "B"), L("y", "yh", "yc"));
	tb_attr_int(m, "hidden_size", 8);
	tb_output(m, "y");
	return m;
}

void test_torch2_lstm_saved(void);
void test_torch2_lstm_saved(void)
{
	tb_model *(*builds[2])(void) = { lstm8, gru_steps_8 };
	for (int i = 0; i < 2; i++) {
		abacus_memory t1, t2;
		if (torch_both(builds[i], &t1, &t2))
			return;
		if (i == 0)
			CHECK(t2.saved != t1.saved);
		else
			CHECK_EQ_I64(t2.saved, t1.saved);
	}
}

/* x [1, 256] @ w1 [256, 4096] → h [1, 4096] → Relu → r @ w2 [4096, 4] → y [1, 4] under cross-entropy: 4 MiB and
 * 64 KiB of weights, activations of 16 KiB. */
static tb_model *wide_mlp(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 256));
	tb_weight(m, "w1", D(256, 4096));
	tb_weight(m, "w2", D(4096, 4));
	tb_node(m, "MatMul", L("x", "w1"), L("h"));
	tb_node(m, "Relu", L("h"), L("r"));
	tb_node(m, "MatMul", L("r", "w2"), L("y"));
	tb_output(m, "y");
	return m;
}

/* Keras 3's SGD with momentum computes m ← m·momentum − g·lr; m·momentum reads no gradient, so TensorFlow's
 * executor makes it for every variable when the step starts (the profiler's kernel order: every sgd/Mul of a
 * momentum slot ran before the forward's first convolution), a variable-sized tensor that lives until that
 * variable's update, which runs as soon as its gradient exists and frees the gradient and the old m
 * (runtime.h step.sgd_momentum_early). wide_mlp at batch 1 under SGD, above the persistent state: the products
 * of w1 (256 · 4096 · 4 = 4,194,304) and w2 (4096 · 4 · 4 = 65,536), 4,259,840, from the start. Forward: h
 * (16,384), r (16,384; h dies at the Relu, r is saved by it and by the second MatMul), y (16 bytes), then
 * cross-entropy's log-softmax (16): 4,292,640. Backward: y's gradient and the loss's buffer (16 each), dropped
 * at the loss's backward to y's gradient alone; the second MatMul makes r's gradient (16,384) and w2's
 * (65,536): 4,259,840 + 16,384 (r) + 16 + 16,384 + 65,536 = 4,358,160; w2's update frees its gradient and
 * product (131,072): 4,227,088; y's gradient is consumed (16): 4,227,072. The Relu writes h's gradient into r's
 * (in place) and releases r: 4,210,688. The first MatMul makes w1's gradient: 4,194,304 (product) + 16,384
 * (h's gradient) + 4,194,304 = 8,404,992, the peak; its update frees both. Holding every gradient to a step
 * after backward with one temporary of the largest, as before, peaked there at 8,454,144 (both gradients and
 * the temporary with nothing else: 4,194,304 · 2 + 65,536). Adam makes no product: its peak is w1's gradient
 * and its one temporary with h's gradient, 8,404,992 too. */
void test_tf_sgd_momentum_early(void);
void test_tf_sgd_momentum_early(void)
{
	abacus_memory pt, tf;
	BOTH(wide_mlp, 1, 0, pt, tf);
	CHECK_EQ_I64(tf.peak - tf.persistent, 8404992);
	CHECK_EQ_I64(tf.gradients, 4194304);
	BOTH(wide_mlp, 1, 1, pt, tf);
	CHECK_EQ_I64(tf.peak - tf.persistent, 8404992);
}

/* x [1, 8, 4, 4] → three 1×1 Conv without bias (8 → 8 channels: w 8 · 8 · 4 = 256 bytes each) → h1, h2, y →
 * GlobalAveragePool → g [1, 8, 1, 1] under MSE (its error, 32 bytes, lives until the step). A map is 8 · 4 · 4 ·
 * 4 = 512 bytes. */
static tb_model *three_convs(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 8, 4, 4));
	tb_weight(m, "w1", D(8, 8, 1, 1));
	tb_weight(m, "w2", D(8, 8, 1, 1));
	tb_weight(m, "w3", D(8, 8, 1, 1));
	tb_node(m, "Conv", L("x", "w1"), L("h1"));
	tb_node(m, "Conv", L("h1", "w2"), L("h2"));
	tb_node(m, "Conv", L("h2", "w3"), L("y"));
	tb_node(m, "GlobalAveragePool", L("y"), L("g"));
	tb_output(m, "g");
	return m;
}

/* TensorFlow leaves a bias-less convolution's filter gradient for after the whole backward when the
 * convolution also makes its input's gradient (runtime_tf_cpu.c tf_weight_grad_late): the second and third
 * here, not the first (x needs no gradient). Batch 1 under SGD, above the persistent state: the three momentum
 * products (768) from the start (test_tf_sgd_momentum_early) and the error (32). At the pool's backward
 * y's gradient (512) with h1 and h2 (saved by the convolutions that read them): 2,336. The third's backward makes
 * h2's gradient (512) and keeps y's gradient and h2: 2,848; the second's makes h1's gradient (512) and keeps
 * h2's gradient and h1: 3,360; the first's makes w1's gradient (256): 3,616, the peak, then its update frees
 * the gradient and the product (512) and h1's gradient is consumed (512): 2,592. Then, in the forward's order,
 * the second's filter gradient (256) and update (−512), h2's gradient and h1 released: 1,312; the third's:
 * 32. Each layer's weight gradient made in its own backward instead, the third's backward would hold y's
 * gradient, h2's, w3's (256), h1, h2, the products and the error, 3,104, the peak. Under Adam (no products,
 * one temporary beside each gradient) the late peak is at the first's backward: h1, h2, their gradients, y's,
 * the error, w1's gradient and its temporary, 3,104. */
void test_tf_weight_grads_late(void);
void test_tf_weight_grads_late(void)
{
	abacus_memory pt, tf;
	BOTH(three_convs, 1, 0, pt, tf);
	CHECK_EQ_I64(tf.peak - tf.persistent, 3616);
	BOTH(three_convs, 1, 1, pt, tf);
	CHECK_EQ_I64(tf.peak - tf.persistent, 3104);
}
