/* tests.h — the registry of test cases (defined in tests.c) and helpers shared by test files. */
#ifndef ABACUS_TESTS_H
#define ABACUS_TESTS_H

#include "abacus.h"
#include "builder.h"
#include "harness.h"

extern const t_case t_cases[];
extern const size_t t_n_cases;

/* Packs `m`, frees it, loads and analyses at `batch`; returns NULL (with err filled) on failure. */
abacus_analysis *t_analyze(tb_model *m, int64_t batch, abacus_graph **g, abacus_error *err);
abacus_analysis *t_analyze_cfg(tb_model *m, const abacus_config *cfg, abacus_graph **g, abacus_error *err);
/* t_analyze on the runtime called `runtime` (NULL: the default). */
abacus_analysis *t_analyze_runtime(tb_model *m, int64_t batch, const char *runtime, abacus_graph **g, abacus_error *err);
/* x [8, B, 16] → LSTM, hidden 8 (W [1, 32, 16], R [1, 32, 8], B [1, 64]): test_runtime_tf.c. */
tb_model *lstm8(void);
/* The first layer with this op type. */
const abacus_layer *t_layer(const abacus_analysis *a, const char *op);

/* PyTorch's autograd records (memory.c records, runtime.h AB_TORCH_STEP_MEMORY): each layer a gradient reaches
 * that runs as an operation of its own (a kernel or a view of an activation; not a fused member of a
 * decomposed operator, not a weight's view, not a layer that returns its input itself such as a p = 0
 * Dropout, not a layer with graph_bytes of its own such as an LSTM) keeps a 700-byte Node from its forward
 * until the step ends, and each activation a layer saves a 400-byte handle until that layer's backward.
 * Tests add REC(nodes, handles) to their hand-derived bytes and name the layers counted; TensorFlow's runtime
 * counts none. */
#define REC(nodes, handles) ((int64_t)(nodes) * 700 + (int64_t)(handles) * 400)

/* PyTorch's host memory per tensor beyond its data (memory.c persistent_state and param_grads, runtime.h
 * AB_TORCH_STEP_MEMORY), counted with the persistent buffers: 580 bytes per parameter tensor and its
 * optimizer's state per parameter, `state` (TENS_SGD 380 for SGD's momentum, TENS_ADAM 1,250 for Adam's two
 * moments and step), and 360 per buffer tensor (a batch norm's running mean and variance, and its
 * num_batches_tracked, which the graph lacks); besides, 775 bytes per parameter gradient, with the
 * gradient, from its first accumulation through the step (in the gradients and at every moment it is
 * live). Tests add TENS(params, buffers, grads, state) to their hand-derived bytes and name the tensors
 * counted; TensorFlow's runtime counts none. */
#define TENS_SGD 380
#define TENS_ADAM 1250
#define TENS(params, buffers, grads, state)                                                               \
	((int64_t)(params) * (580 + (state)) + (int64_t)(buffers) * 360 + (int64_t)(grads) * 775)

#endif
