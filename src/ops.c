/*
 * ops.c — the op table. One row per supported ONNX op (default domain): NSM category, shape rule,
 * constant-folding rule, cost rule and flags. Element-wise rows carry their costs as data: FLOPs per
 * output element forward and backward, and which inputs/outputs PyTorch saves for backward.
 *
 * An op not in this table is never a silent zero: the analysis reports it by name, gives it category
 * `other`, takes its output shape from the file's value_info when present, and fails under --strict.
 */
#include <string.h>

#include "ops.h"

#define C(x) ABACUS_CAT_##x
/* Rows are designated initializers: a field a row does not name is 0 or NULL. The row macros take further
 * designators after their fixed arguments (`.act = AB_ACT_TANH`). */
/* Unary element-wise: same shape; UNF also folds on constants through its scalar function (ops_elem.c). */
#define UN(nm, ct, f, b, sin, sout, ...) \
	{ .name = nm, .cat = C(ct), .shape = ab_shape_unary, .fwd_per_elem = f, .bwd_per_elem = b, .save_in = sin, \
	  .save_out = sout, __VA_ARGS__ }
#define UNF(nm, ct, f, b, sin, sout, sc, ...) UN(nm, ct, f, b, sin, sout, .fold = ab_fold_elementwise, .scalar = &ab_sc_##sc, __VA_ARGS__)
/* Broadcasting binary/variadic element-wise; BIF folds. */
#define BI(nm, ct, f, b, sin, sout, ...) \
	{ .name = nm, .cat = C(ct), .shape = ab_shape_broadcast, .fwd_per_elem = f, .bwd_per_elem = b, .save_in = sin, \
	  .save_out = sout, __VA_ARGS__ }
#define BIF(nm, ct, f, b, sin, sout, sc, ...) BI(nm, ct, f, b, sin, sout, .fold = ab_fold_elementwise, .scalar = &ab_sc_##sc, __VA_ARGS__)
/* Comparisons and logic: no gradient, a bool output. */
#define CMP(nm, sc) \
	{ .name = nm, .cat = C(ELTWISE), .shape = ab_shape_broadcast, .fold = ab_fold_elementwise, .flags = AB_OP_NOGRAD, \
	  .fwd_per_elem = 1, .scalar = &ab_sc_##sc, .out_dtype = AB_OUT_BOOL }
/* Layout ops that are views in PyTorch. */
#define VIEW(nm, sh, fd, st) { .name = nm, .cat = C(LAYOUT), .shape = sh, .fold = fd, .cost = ab_cost_move, .flags = AB_OP_VIEW, .strides = st }

const ab_opdef ab_ops[] = {
	/* activations */
	UNF("Relu", RELU, 1, 1, 0, 1, relu),
	UN("LeakyRelu", RELU, 2, 2, 1, 0),
	BI("PRelu", RELU, 2, 3, 3, 0, .act = AB_ACT_PRELU),
	/* PyTorch's ELU, SELU and CELU keep their input for the backward (elu_backward with is_result false; only the
	 * in-place elu_ keeps the result): measured 2026-12-06 with the allocator tracker, h = x·W kept by h·h,
	 * then act(h) + h·h: after the forward 2.01 tensors of h's size live for all three (h and the sum) against
	 * 3.02 for sigmoid, tanh and ReLU (which keep their output), in 1.13.1 and 2.15.0 alike. TensorFlow's
	 * EluGrad and SeluGrad read the output (runtime_tf_cpu.c tf_saved). */
	UN("Elu", RELU, 4, 4, 1, 0, .act = AB_ACT_ELU),
	UN("Selu", RELU, 5, 4, 1, 0, .act = AB_ACT_ELU),
	UN("Celu", RELU, 5, 4, 1, 0),
	UN("ThresholdedRelu", RELU, 1, 1, 1, 0),
	UN("Clip", RELU, 2, 2, 1, 0, .state_in = ~1u),
	UNF("Sigmoid", ACT, 4, 3, 0, 1, sigmoid, .act = AB_ACT_SIGMOID),
	UN("HardSigmoid", ACT, 3, 2, 1, 0),
	UN("HardSwish", ACT, 5, 4, 1, 0),
	UNF("Tanh", ACT, 4, 2, 0, 1, tanh, .act = AB_ACT_TANH),
	UNF("Erf", ACT, 8, 6, 1, 0, erf),
	UN("Gelu", ACT, 12, 14, 1, 0, .act = AB_ACT_GELU),
	UN("Softplus", ACT, 4, 4, 1, 0, .act = AB_ACT_SOFTPLUS),
	UN("Softsign", ACT, 3, 3, 1, 0),
	UN("Mish", ACT, 10, 12, 1, 0, .act = AB_ACT_MISH),
	/* element-wise math */
	UNF("Exp", ELTWISE, 4, 1, 0, 1, exp),
	UNF("Log", ELTWISE, 4, 1, 1, 0, log),
	UNF("Sqrt", ELTWISE, 4, 2, 0, 1, sqrt),
	UNF("Reciprocal", ELTWISE, 1, 2, 0, 1, recip),
	UNF("Neg", ELTWISE, 1, 1, 0, 0, neg),
	UNF("Abs", ELTWISE, 1, 1, 1, 0, abs),
	UN("Sin", ELTWISE, 4, 4, 1, 0),
	UN("Cos", ELTWISE, 4, 4, 1, 0),
	UNF("Floor", ELTWISE, 1, 0, 0, 0, floor),
	UNF("Ceil", ELTWISE, 1, 0, 0, 0, ceil),
	UNF("Round", ELTWISE, 1, 0, 0, 0, round),
	UNF("Sign", ELTWISE, 1, 0, 0, 0, sign),
	UNF("Cast", ELTWISE, 1, 1, 0, 0, same, .out_dtype = AB_OUT_CAST_TO),
	UNF("CastLike", ELTWISE, 1, 1, 0, 0, same, .out_dtype = AB_OUT_LIKE_IN1),
	/* CumSum's backward is a reversed cumsum of the gradient, grad.flip().cumsum().flip(): two
	 * output-sized buffers live at once beside it (measured 2026-12-05 with the allocator tracker,
	 * [B, 256, 4096] between two Linears, B 1 and 4: 2.00x the output above the rule without them) */
	UN("CumSum", ELTWISE, 1, 1, 0, 0, .bwd_out_copies = 2, .act = AB_ACT_CUMSUM),
	UN("Trilu", ELTWISE, 1, 1, 0, 0),
	UN("Tan", ELTWISE, 4, 4, 1, 0),
	UN("Sinh", ELTWISE, 4, 4, 1, 0),
	UN("Cosh", ELTWISE, 4, 4, 1, 0),
	UN("Asin", ELTWISE, 4, 4, 1, 0),
	UN("Acos", ELTWISE, 4, 4, 1, 0),
	UN("Atan", ELTWISE, 4, 4, 1, 0),
	UN("Asinh", ELTWISE, 4, 4, 1, 0),
	UN("Acosh", ELTWISE, 4, 4, 1, 0),
	UN("Atanh", ELTWISE, 4, 4, 1, 0),
	UN("Shrink", RELU, 2, 1, 1, 0),
	UN("Hardmax", SOFTMAX, 2, 0, 0, 0),
	UN("EyeLike", ELTWISE, 1, 0, 0, 0),
	UN("MeanVarianceNormalization", LAYERNORM, 7, 9, 1, 0),
	{ .name = "Not", .cat = C(ELTWISE), .shape = ab_shape_unary, .fold = ab_fold_elementwise, .flags = AB_OP_NOGRAD, .fwd_per_elem = 1, .scalar = &ab_sc_not, .out_dtype = AB_OUT_BOOL },
	{ .name = "IsNaN", .cat = C(ELTWISE), .shape = ab_shape_unary, .flags = AB_OP_NOGRAD, .fwd_per_elem = 1, .out_dtype = AB_OUT_BOOL },
	{ .name = "IsInf", .cat = C(ELTWISE), .shape = ab_shape_unary, .flags = AB_OP_NOGRAD, .fwd_per_elem = 1, .out_dtype = AB_OUT_BOOL },
	{ .name = "Identity", .cat = C(LAYOUT), .shape = ab_shape_unary, .fold = ab_fold_same_data, .cost = ab_cost_move, .flags = AB_OP_VIEW, .strides = AB_STRIDES_SAME },
	/* binary and variadic */
	BIF("Add", ADD, 1, 1, 0, 0, add, .grad_pass = ~0u),
	BIF("Sub", ADD, 1, 1, 0, 0, sub, .grad_pass = 1u),
	BIF("Sum", ADD, 1, 1, 0, 0, add),
	BIF("Mul", MUL, 1, 1, AB_SAVE_PRODUCT, 0, mul),
	BIF("Div", MUL, 1, 3, AB_SAVE_QUOTIENT, 0, div),
	BIF("Pow", ELTWISE, 4, 6, 3, 0, pow),
	BIF("Max", ELTWISE, 1, 1, 3, 0, max),
	BIF("Min", ELTWISE, 1, 1, 3, 0, min),
	BIF("Mean", ELTWISE, 1, 1, 0, 0, mean),
	{ .name = "Mod", .cat = C(ELTWISE), .shape = ab_shape_broadcast, .fold = ab_fold_elementwise, .flags = AB_OP_NOGRAD, .fwd_per_elem = 1, .scalar = &ab_sc_mod },
	{ .name = "Where", .cat = C(ELTWISE), .shape = ab_shape_broadcast, .fold = ab_fold_where, .flags = AB_OP_SELECT, .fwd_per_elem = 1, .bwd_per_elem = 1, .save_in = 1 },
	CMP("Equal", eq), CMP("Less", lt), CMP("Greater", gt), CMP("LessOrEqual", le), CMP("GreaterOrEqual", ge),
	CMP("And", and), CMP("Or", or), CMP("Xor", xor),
	/* random numbers (stochastic depth masks): no gradient, a few FLOPs per element */
	{ .name = "RandomUniformLike", .cat = C(ELTWISE), .shape = ab_shape_random_like, .flags = AB_OP_NOGRAD, .fwd_per_elem = 4 },
	{ .name = "RandomNormalLike", .cat = C(ELTWISE), .shape = ab_shape_random_like, .flags = AB_OP_NOGRAD, .fwd_per_elem = 8 },
	{ .name = "RandomUniform", .cat = C(ELTWISE), .shape = ab_shape_random, .flags = AB_OP_NOGRAD, .fwd_per_elem = 4 },
	{ .name = "RandomNormal", .cat = C(ELTWISE), .shape = ab_shape_random, .flags = AB_OP_NOGRAD, .fwd_per_elem = 8 },
	{ .name = "Bernoulli", .cat = C(ELTWISE), .shape = ab_shape_random_like, .flags = AB_OP_NOGRAD, .fwd_per_elem = 5 },
	/* softmax */
	UN("Softmax", SOFTMAX, 5, 4, 0, 1),
	UN("LogSoftmax", SOFTMAX, 5, 4, 0, 1),
	/* layout (views in PyTorch) */
	VIEW("Reshape", ab_shape_reshape, ab_fold_same_data, AB_STRIDES_RESHAPE),
	VIEW("Flatten", ab_shape_flatten, ab_fold_same_data, AB_STRIDES_RESHAPE),
	VIEW("Squeeze", ab_shape_squeeze, ab_fold_same_data, AB_STRIDES_RESHAPE),
	VIEW("Unsqueeze", ab_shape_unsqueeze, ab_fold_same_data, AB_STRIDES_RESHAPE),
	{ .name = "Transpose", .cat = C(LAYOUT), .shape = ab_shape_transpose, .fold = ab_fold_transpose, .cost = ab_cost_move, .flags = AB_OP_VIEW | AB_OP_PERMUTE, .strides = AB_STRIDES_PERMUTE },
	VIEW("Expand", ab_shape_expand, ab_fold_expand, AB_STRIDES_EXPAND),
	{ .name = "Tile", .cat = C(LAYOUT), .shape = ab_shape_tile, .fold = ab_fold_tile, .cost = ab_cost_move },
	{ .name = "DepthToSpace", .cat = C(LAYOUT), .shape = ab_shape_depth_to_space, .cost = ab_cost_move },
	{ .name = "SpaceToDepth", .cat = C(LAYOUT), .shape = ab_shape_space_to_depth, .cost = ab_cost_move },
	/* joins and slices */
	{ .name = "Concat", .cat = C(CONCAT), .shape = ab_shape_concat, .fold = ab_fold_concat, .cost = ab_cost_move, .flags = AB_OP_NARROW_GRAD, .grad_pass = ~0u },
	{ .name = "Split", .cat = C(SPLIT), .shape = ab_shape_split, .cost = ab_cost_move, .flags = AB_OP_VIEW | AB_OP_PARTS, .strides = AB_STRIDES_SLICE },
	{ .name = "Slice", .cat = C(SPLIT), .shape = ab_shape_slice, .fold = ab_fold_slice, .cost = ab_cost_move, .flags = AB_OP_VIEW, .strides = AB_STRIDES_SLICE },
	{ .name = "Gather", .cat = C(SPLIT), .shape = ab_shape_gather, .fold = ab_fold_gather, .cost = ab_cost_gather, .flags = AB_OP_LOOKUP },
	{ .name = "GatherND", .cat = C(SPLIT), .shape = ab_shape_gather_nd, .cost = ab_cost_gather },
	{ .name = "OneHot", .cat = C(EMBEDDING), .shape = ab_shape_onehot, .cost = ab_cost_move, .flags = AB_OP_NOGRAD },
	{ .name = "GatherElements", .cat = C(SPLIT), .shape = ab_shape_like_input1, .cost = ab_cost_gather },
	{ .name = "ScatterND", .cat = C(ELTWISE), .shape = ab_shape_unary, .cost = ab_cost_move },
	{ .name = "ScatterElements", .cat = C(ELTWISE), .shape = ab_shape_unary, .cost = ab_cost_move },
	{ .name = "Pad", .cat = C(PAD), .shape = ab_shape_pad, .cost = ab_cost_move, .state_in = ~1u },
	{ .name = "Resize", .cat = C(RESIZE), .shape = ab_shape_resize, .cost = ab_cost_resize, .state_in = ~1u },
	{ .name = "Upsample", .cat = C(RESIZE), .shape = ab_shape_upsample, .cost = ab_cost_resize, .state_in = ~1u },
	/* shape queries and constants: always folded when their inputs are known */
	{ .name = "Shape", .cat = C(OTHER), .shape = ab_shape_shape, .cost = ab_cost_move, .flags = AB_OP_NOGRAD },
	{ .name = "Size", .cat = C(OTHER), .shape = ab_shape_size, .cost = ab_cost_move, .flags = AB_OP_NOGRAD },
	{ .name = "Constant", .cat = C(OTHER), .shape = ab_shape_constant, .cost = ab_cost_move, .flags = AB_OP_NOGRAD | AB_OP_CONSTANT },
	{ .name = "ConstantOfShape", .cat = C(ELTWISE), .shape = ab_shape_constant_of_shape, .cost = ab_cost_move, .flags = AB_OP_NOGRAD },
	{ .name = "Range", .cat = C(OTHER), .shape = ab_shape_range, .cost = ab_cost_move, .flags = AB_OP_NOGRAD },
	/* convolution and pooling */
	{ .name = "Conv", .cat = C(CONV), .shape = ab_shape_conv, .cost = ab_cost_conv, .flags = AB_OP_GROUPS },
	{ .name = "ConvTranspose", .cat = C(CONV), .shape = ab_shape_conv_transpose, .cost = ab_cost_conv, .flags = AB_OP_TRANSPOSED },
	{ .name = "MaxPool", .cat = C(POOL), .shape = ab_shape_pool, .cost = ab_cost_pool, .flags = AB_OP_ARGMAX },
	{ .name = "AveragePool", .cat = C(POOL), .shape = ab_shape_pool, .cost = ab_cost_pool },
	{ .name = "LpPool", .cat = C(POOL), .shape = ab_shape_pool, .cost = ab_cost_pool },
	{ .name = "GlobalAveragePool", .cat = C(POOL), .shape = ab_shape_pool, .cost = ab_cost_pool, .flags = AB_OP_GLOBAL },
	{ .name = "GlobalMaxPool", .cat = C(POOL), .shape = ab_shape_pool, .cost = ab_cost_pool, .flags = AB_OP_GLOBAL | AB_OP_ARGMAX },
	{ .name = "GlobalLpPool", .cat = C(POOL), .shape = ab_shape_pool, .cost = ab_cost_pool, .flags = AB_OP_GLOBAL },
	/* matrix products */
	{ .name = "Gemm", .cat = C(MATMUL), .shape = ab_shape_gemm, .cost = ab_cost_gemm, .flags = AB_OP_COPIES_MEAN_GRAD },
	{ .name = "MatMul", .cat = C(MATMUL), .shape = ab_shape_matmul, .cost = ab_cost_matmul, .flags = AB_OP_COPIES_MEAN_GRAD | AB_OP_PRODUCT },
	{ .name = "Einsum", .cat = C(MATMUL), .shape = ab_shape_einsum, .cost = ab_cost_einsum, .flags = AB_OP_PRODUCT },
	/* normalisation */
	{ .name = "BatchNormalization", .cat = C(BATCHNORM), .shape = ab_shape_batchnorm, .cost = ab_cost_norm, .state_in = 1u << 3 | 1u << 4 },
	{ .name = "InstanceNormalization", .cat = C(LAYERNORM), .shape = ab_shape_unary, .cost = ab_cost_norm },
	{ .name = "LayerNormalization", .cat = C(LAYERNORM), .shape = ab_shape_layernorm, .cost = ab_cost_norm,
	  .act = AB_ACT_LN_ROW },
	{ .name = "GroupNormalization", .cat = C(LAYERNORM), .shape = ab_shape_unary, .cost = ab_cost_norm },
	{ .name = "LpNormalization", .cat = C(LAYERNORM), .shape = ab_shape_unary, .cost = ab_cost_norm },
	UN("LRN", LAYERNORM, 6, 6, 1, 1),
	{ .name = "Dropout", .cat = C(DROPOUT), .shape = ab_shape_dropout, .cost = ab_cost_dropout, .state_in = ~1u },
	/* reductions */
	{ .name = "ReduceMean", .cat = C(REDUCE), .shape = ab_shape_reduce, .fold = ab_fold_reduce, .cost = ab_cost_reduce, .flags = AB_OP_MEAN_GRAD, .scalar = &ab_sc_mean },
	{ .name = "ReduceSum", .cat = C(REDUCE), .shape = ab_shape_reduce, .fold = ab_fold_reduce, .cost = ab_cost_reduce, .scalar = &ab_sc_add, .flags = AB_OP_EXPAND_GRAD, .grad_pass = 1u },
	{ .name = "ReduceMax", .cat = C(REDUCE), .shape = ab_shape_reduce, .fold = ab_fold_reduce, .cost = ab_cost_reduce, .scalar = &ab_sc_max, .save_in = 1, .bwd_select = 1 },
	{ .name = "ReduceMin", .cat = C(REDUCE), .shape = ab_shape_reduce, .fold = ab_fold_reduce, .cost = ab_cost_reduce, .scalar = &ab_sc_min, .save_in = 1, .bwd_select = 1 },
	{ .name = "ReduceProd", .cat = C(REDUCE), .shape = ab_shape_reduce, .fold = ab_fold_reduce, .cost = ab_cost_reduce, .scalar = &ab_sc_mul, .save_in = 1 },
	{ .name = "ReduceL1", .cat = C(REDUCE), .shape = ab_shape_reduce, .cost = ab_cost_reduce },
	{ .name = "ReduceL2", .cat = C(REDUCE), .shape = ab_shape_reduce, .cost = ab_cost_reduce, .save_in = 1 },
	{ .name = "ReduceSumSquare", .cat = C(REDUCE), .shape = ab_shape_reduce, .cost = ab_cost_reduce },
	{ .name = "ReduceLogSumExp", .cat = C(REDUCE), .shape = ab_shape_reduce, .cost = ab_cost_reduce },
	{ .name = "ArgMax", .cat = C(REDUCE), .shape = ab_shape_reduce, .cost = ab_cost_reduce, .flags = AB_OP_NOGRAD, .save_in = 1, .out_dtype = AB_OUT_INDEX },
	{ .name = "ArgMin", .cat = C(REDUCE), .shape = ab_shape_reduce, .cost = ab_cost_reduce, .flags = AB_OP_NOGRAD, .save_in = 1, .out_dtype = AB_OUT_INDEX },
	{ .name = "TopK", .cat = C(REDUCE), .shape = ab_shape_topk, .cost = ab_cost_reduce },
	/* recurrent */
	{ .name = "LSTM", .cat = C(RECURRENT), .shape = ab_shape_rnn, .cost = ab_cost_rnn, .gates = 4 },
	{ .name = "GRU", .cat = C(RECURRENT), .shape = ab_shape_rnn, .cost = ab_cost_rnn, .gates = 3 },
	{ .name = "RNN", .cat = C(RECURRENT), .shape = ab_shape_rnn, .cost = ab_cost_rnn, .gates = 1 },
	/* Abacus's domain. StopGradient: PyTorch's Tensor.detach(), which torch's exporter drops (an ONNX graph
	 * is for inference) and the collector's writes (collector/graph_export.py): a view of its input whose
	 * output requires no gradient, so nothing downstream saves tensors for a backward that never runs
	 * (a capsule network's routing on detached predictions, a straight-through estimator's z.detach()). */
	{ .name = "StopGradient", .domain = AB_DOMAIN, .cat = C(LAYOUT), .shape = ab_shape_unary, .fold = ab_fold_same_data,
	  .cost = ab_cost_move, .flags = AB_OP_VIEW | AB_OP_NOGRAD, .strides = AB_STRIDES_SAME },
};
const int ab_n_ops = (int)(sizeof ab_ops / sizeof ab_ops[0]);

static const char *const cat_names[] = {
	"conv", "groupconv", "matmul", "batchnorm", "layernorm", "relu", "act", "pool", "add", "mul", "eltwise",
	"concat", "split", "layout", "softmax", "dropout", "embedding", "recurrent", "attention", "resize", "pad",
	"reduce", "other",
};
_Static_assert(sizeof cat_names / sizeof cat_names[0] == ABACUS_CAT_COUNT, "category names out of step");

const char *abacus_category_name(abacus_category c)
{
	return (unsigned)c < ABACUS_CAT_COUNT ? cat_names[c] : "?";
}

int ab_op_lookup(const char *op, const char *domain)
{
	if (domain && (!domain[0] || !strcmp(domain, "ai.onnx")))
		domain = NULL;
	/* Comparing the first character first skips most rows without a call. A row answers its own domain
	 * only: a custom domain's op of a standard op's name is not that op. */
	for (int i = 0; i < ab_n_ops; i++)
		if (ab_ops[i].name[0] == op[0] && !strcmp(ab_ops[i].name, op) &&
		    (domain ? ab_ops[i].domain && !strcmp(ab_ops[i].domain, domain) : !ab_ops[i].domain))
			return i;
	return -1;
}

int abacus_op_known(const char *op_type, abacus_category *category)
{
	int i = ab_op_lookup(op_type, "");
	if (i < 0)
		return 0;
	if (category)
		*category = ab_ops[i].cat;
	return 1;
}

static int64_t tensor_bytes(const ab_shape *s)
{
	int sz = ab_dtype_size(s->dtype);
	int64_t b;
	if (!s->known || ab_mul(s->numel, sz ? sz : 4, &b))
		return 0;
	return b;
}

int ab_cost_table(ab_ctx *c, const ab_opdef *d, ab_cost *k)
{
	const ab_shape *y = &c->shapes[c->n->out[0]];
	int rg_inputs = 0;
	for (int i = 0; i < c->n->n_in; i++)
		rg_inputs += ab_in_rg(c, i);
	if (ab_mul(y->numel, d->fwd_per_elem, &k->fwd) || ab_mul(y->numel, (int64_t)d->bwd_per_elem * rg_inputs, &k->bwd))
		return ab_node_err(c, ABACUS_ESHAPE, "FLOP count overflows 64 bits");
	/* Only tensors that carry data are saved; constants (e.g. a scalar divisor) are not activations. */
	k->in_mask = d->save_in;
	if (d->save_in == AB_SAVE_PRODUCT)
		k->in_mask = ab_product_in_mask(c);
	else if (d->save_in == AB_SAVE_QUOTIENT)
		k->in_mask = (ab_in_rg(c, 1) ? 1u : 0u) | (ab_in_rg(c, 0) || ab_in_rg(c, 1) ? 2u : 0u);
	k->out_mask = d->save_out;
	if (d->save_in == AB_SAVE_PRODUCT || d->save_in == AB_SAVE_QUOTIENT)
		k->bwd_workspace = ab_broadcast_product_workspace(c, d->save_in == AB_SAVE_QUOTIENT);
	if (d->bwd_out_copies && rg_inputs && ab_mul(tensor_bytes(y), d->bwd_out_copies, &k->bwd_workspace))
		return ab_node_err(c, ABACUS_ESHAPE, "workspace bytes overflow 64 bits");
	for (int i = 0; i < c->n->n_in; i++)
		ab_sat_add(&k->bytes_read, ab_has_in(c, i) ? tensor_bytes(ab_in(c, i)) : 0);
	for (int o = 0; o < c->n->n_out; o++)
		if (c->n->out[o] >= 0)
			ab_sat_add(&k->bytes_written, tensor_bytes(&c->shapes[c->n->out[o]]));
	return 0;
}
