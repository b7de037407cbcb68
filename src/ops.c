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
/* Unary element-wise: same shape; UNF also folds on constants through its scalar function (ops_elem.c). */
#define UN(name, cat, f, b, sin, sout) { name, C(cat), ab_shape_unary, NULL, NULL, 0, f, b, sin, sout, NULL }
#define UNF(name, cat, f, b, sin, sout, sc) \
	{ name, C(cat), ab_shape_unary, ab_fold_elementwise, NULL, 0, f, b, sin, sout, &ab_sc_##sc }
/* Broadcasting binary/variadic element-wise; BIF folds. */
#define BI(name, cat, f, b, sin, sout) { name, C(cat), ab_shape_broadcast, NULL, NULL, 0, f, b, sin, sout, NULL }
#define BIF(name, cat, f, b, sin, sout, sc) \
	{ name, C(cat), ab_shape_broadcast, ab_fold_elementwise, NULL, 0, f, b, sin, sout, &ab_sc_##sc }
/* Comparisons and logic: no gradient. */
#define CMP(name, sc) { name, C(ELTWISE), ab_shape_broadcast, ab_fold_elementwise, NULL, AB_OP_NOGRAD, 1, 0, 0, 0, &ab_sc_##sc }
/* Layout ops that are views in PyTorch. */
#define VIEW(name, shape, fold) { name, C(LAYOUT), shape, fold, ab_cost_move, AB_OP_VIEW, 0, 0, 0, 0, NULL }

const ab_opdef ab_ops[] = {
	/* activations */
	UNF("Relu", RELU, 1, 1, 0, 1, relu),
	UN("LeakyRelu", RELU, 2, 2, 1, 0),
	BI("PRelu", RELU, 2, 3, 3, 0),
	UN("Elu", RELU, 4, 4, 0, 1),
	UN("Selu", RELU, 5, 4, 0, 1),
	UN("Celu", RELU, 5, 4, 0, 1),
	UN("ThresholdedRelu", RELU, 1, 1, 1, 0),
	UN("Clip", RELU, 2, 2, 1, 0),
	UNF("Sigmoid", ACT, 4, 3, 0, 1, sigmoid),
	UN("HardSigmoid", ACT, 3, 2, 1, 0),
	UN("HardSwish", ACT, 5, 4, 1, 0),
	UNF("Tanh", ACT, 4, 2, 0, 1, tanh),
	UNF("Erf", ACT, 8, 6, 1, 0, erf),
	UN("Gelu", ACT, 12, 14, 1, 0),
	UN("Softplus", ACT, 4, 4, 1, 0),
	UN("Softsign", ACT, 3, 3, 1, 0),
	UN("Mish", ACT, 10, 12, 1, 0),
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
	UNF("Cast", ELTWISE, 1, 1, 0, 0, same),
	UNF("CastLike", ELTWISE, 1, 1, 0, 0, same),
	UN("CumSum", ELTWISE, 1, 1, 0, 0),
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
	{ "Not", C(ELTWISE), ab_shape_unary, ab_fold_elementwise, NULL, AB_OP_NOGRAD, 1, 0, 0, 0, &ab_sc_not },
	{ "IsNaN", C(ELTWISE), ab_shape_unary, NULL, NULL, AB_OP_NOGRAD, 1, 0, 0, 0, NULL },
	{ "IsInf", C(ELTWISE), ab_shape_unary, NULL, NULL, AB_OP_NOGRAD, 1, 0, 0, 0, NULL },
	{ "Identity", C(LAYOUT), ab_shape_unary, ab_fold_same_data, ab_cost_move, AB_OP_VIEW, 0, 0, 0, 0, NULL },
	/* binary and variadic */
	BIF("Add", ADD, 1, 1, 0, 0, add),
	BIF("Sub", ADD, 1, 1, 0, 0, sub),
	BIF("Sum", ADD, 1, 1, 0, 0, add),
	BIF("Mul", MUL, 1, 1, AB_SAVE_PRODUCT, 0, mul),
	BIF("Div", MUL, 1, 3, AB_SAVE_QUOTIENT, 0, div),
	BIF("Pow", ELTWISE, 4, 6, 3, 0, pow),
	BIF("Max", ELTWISE, 1, 1, 3, 0, max),
	BIF("Min", ELTWISE, 1, 1, 3, 0, min),
	BIF("Mean", ELTWISE, 1, 1, 0, 0, mean),
	{ "Mod", C(ELTWISE), ab_shape_broadcast, ab_fold_elementwise, NULL, AB_OP_NOGRAD, 1, 0, 0, 0, &ab_sc_mod },
	{ "Where", C(ELTWISE), ab_shape_broadcast, ab_fold_where, NULL, 0, 1, 1, 1, 0, NULL },
	CMP("Equal", eq), CMP("Less", lt), CMP("Greater", gt), CMP("LessOrEqual", le), CMP("GreaterOrEqual", ge),
	CMP("And", and), CMP("Or", or), CMP("Xor", xor),
	/* random numbers (stochastic depth masks): no gradient, a few FLOPs per element */
	{ "RandomUniformLike", C(ELTWISE), ab_shape_random, NULL, NULL, AB_OP_NOGRAD, 4, 0, 0, 0, NULL },
	{ "RandomNormalLike", C(ELTWISE), ab_shape_random, NULL, NULL, AB_OP_NOGRAD, 8, 0, 0, 0, NULL },
	{ "RandomUniform", C(ELTWISE), ab_shape_random, NULL, NULL, AB_OP_NOGRAD, 4, 0, 0, 0, NULL },
	{ "RandomNormal", C(ELTWISE), ab_shape_random, NULL, NULL, AB_OP_NOGRAD, 8, 0, 0, 0, NULL },
	{ "Bernoulli", C(ELTWISE), ab_shape_random, NULL, NULL, AB_OP_NOGRAD, 5, 0, 0, 0, NULL },
	/* softmax */
	UN("Softmax", SOFTMAX, 5, 4, 0, 1),
	UN("LogSoftmax", SOFTMAX, 5, 4, 0, 1),
	/* layout (views in PyTorch) */
	VIEW("Reshape", ab_shape_reshape, ab_fold_same_data),
	VIEW("Flatten", ab_shape_flatten, ab_fold_same_data),
	VIEW("Squeeze", ab_shape_squeeze, ab_fold_same_data),
	VIEW("Unsqueeze", ab_shape_unsqueeze, ab_fold_same_data),
	VIEW("Transpose", ab_shape_transpose, ab_fold_transpose),
	VIEW("Expand", ab_shape_expand, ab_fold_broadcast_copy),
	{ "Tile", C(LAYOUT), ab_shape_tile, ab_fold_broadcast_copy, ab_cost_move, 0, 0, 0, 0, 0, NULL },
	{ "DepthToSpace", C(LAYOUT), ab_shape_depth_space, NULL, ab_cost_move, 0, 0, 0, 0, 0, NULL },
	{ "SpaceToDepth", C(LAYOUT), ab_shape_depth_space, NULL, ab_cost_move, 0, 0, 0, 0, 0, NULL },
	/* joins and slices */
	{ "Concat", C(CONCAT), ab_shape_concat, ab_fold_concat, ab_cost_move, 0, 0, 0, 0, 0, NULL },
	{ "Split", C(SPLIT), ab_shape_split, NULL, ab_cost_move, AB_OP_VIEW, 0, 0, 0, 0, NULL },
	{ "Slice", C(SPLIT), ab_shape_slice, ab_fold_slice, ab_cost_move, AB_OP_VIEW, 0, 0, 0, 0, NULL },
	{ "Gather", C(SPLIT), ab_shape_gather, ab_fold_gather, ab_cost_gather, 0, 0, 0, 0, 0, NULL },
	{ "GatherND", C(SPLIT), ab_shape_gather_nd, NULL, ab_cost_gather, 0, 0, 0, 0, 0, NULL },
	{ "OneHot", C(EMBEDDING), ab_shape_onehot, NULL, ab_cost_move, AB_OP_NOGRAD, 0, 0, 0, 0, NULL },
	{ "GatherElements", C(SPLIT), ab_shape_like_input1, NULL, ab_cost_gather, 0, 0, 0, 0, 0, NULL },
	{ "ScatterND", C(ELTWISE), ab_shape_unary, NULL, ab_cost_move, 0, 0, 0, 0, 0, NULL },
	{ "ScatterElements", C(ELTWISE), ab_shape_unary, NULL, ab_cost_move, 0, 0, 0, 0, 0, NULL },
	{ "Pad", C(PAD), ab_shape_pad, NULL, ab_cost_move, 0, 0, 0, 0, 0, NULL },
	{ "Resize", C(RESIZE), ab_shape_resize, NULL, ab_cost_resize, 0, 0, 0, 0, 0, NULL },
	{ "Upsample", C(RESIZE), ab_shape_resize, NULL, ab_cost_resize, 0, 0, 0, 0, 0, NULL },
	/* shape queries and constants: always folded when their inputs are known */
	{ "Shape", C(OTHER), ab_shape_shape, NULL, ab_cost_move, AB_OP_NOGRAD, 0, 0, 0, 0, NULL },
	{ "Size", C(OTHER), ab_shape_shape, NULL, ab_cost_move, AB_OP_NOGRAD, 0, 0, 0, 0, NULL },
	{ "Constant", C(OTHER), ab_shape_constant, NULL, ab_cost_move, AB_OP_NOGRAD, 0, 0, 0, 0, NULL },
	{ "ConstantOfShape", C(ELTWISE), ab_shape_constant_of_shape, NULL, ab_cost_move, AB_OP_NOGRAD, 0, 0, 0, 0, NULL },
	{ "Range", C(OTHER), ab_shape_range, NULL, ab_cost_move, AB_OP_NOGRAD, 0, 0, 0, 0, NULL },
	/* convolution and pooling */
	{ "Conv", C(CONV), ab_shape_conv, NULL, ab_cost_conv, 0, 0, 0, 0, 0, NULL },
	{ "ConvTranspose", C(CONV), ab_shape_conv_transpose, NULL, ab_cost_conv, 0, 0, 0, 0, 0, NULL },
	{ "MaxPool", C(POOL), ab_shape_pool, NULL, ab_cost_pool, 0, 0, 0, 0, 0, NULL },
	{ "AveragePool", C(POOL), ab_shape_pool, NULL, ab_cost_pool, 0, 0, 0, 0, 0, NULL },
	{ "LpPool", C(POOL), ab_shape_pool, NULL, ab_cost_pool, 0, 0, 0, 0, 0, NULL },
	{ "GlobalAveragePool", C(POOL), ab_shape_pool, NULL, ab_cost_pool, 0, 0, 0, 0, 0, NULL },
	{ "GlobalMaxPool", C(POOL), ab_shape_pool, NULL, ab_cost_pool, 0, 0, 0, 0, 0, NULL },
	{ "GlobalLpPool", C(POOL), ab_shape_pool, NULL, ab_cost_pool, 0, 0, 0, 0, 0, NULL },
	/* matrix products */
	{ "Gemm", C(MATMUL), ab_shape_gemm, NULL, ab_cost_gemm, 0, 0, 0, 0, 0, NULL },
	{ "MatMul", C(MATMUL), ab_shape_matmul, NULL, ab_cost_matmul, 0, 0, 0, 0, 0, NULL },
	{ "Einsum", C(MATMUL), ab_shape_einsum, NULL, ab_cost_einsum, 0, 0, 0, 0, 0, NULL },
	/* normalisation */
	{ "BatchNormalization", C(BATCHNORM), ab_shape_batchnorm, NULL, ab_cost_norm, 0, 0, 0, 0, 0, NULL },
	{ "InstanceNormalization", C(LAYERNORM), ab_shape_unary, NULL, ab_cost_norm, 0, 0, 0, 0, 0, NULL },
	{ "LayerNormalization", C(LAYERNORM), ab_shape_layernorm, NULL, ab_cost_norm, 0, 0, 0, 0, 0, NULL },
	{ "GroupNormalization", C(LAYERNORM), ab_shape_unary, NULL, ab_cost_norm, 0, 0, 0, 0, 0, NULL },
	{ "LpNormalization", C(LAYERNORM), ab_shape_unary, NULL, ab_cost_norm, 0, 0, 0, 0, 0, NULL },
	UN("LRN", LAYERNORM, 6, 6, 1, 1),
	{ "Dropout", C(DROPOUT), ab_shape_dropout, NULL, ab_cost_dropout, 0, 0, 0, 0, 0, NULL },
	/* reductions */
	{ "ReduceMean", C(REDUCE), ab_shape_reduce, ab_fold_reduce, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ReduceSum", C(REDUCE), ab_shape_reduce, ab_fold_reduce, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ReduceMax", C(REDUCE), ab_shape_reduce, ab_fold_reduce, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ReduceMin", C(REDUCE), ab_shape_reduce, ab_fold_reduce, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ReduceProd", C(REDUCE), ab_shape_reduce, ab_fold_reduce, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ReduceL1", C(REDUCE), ab_shape_reduce, NULL, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ReduceL2", C(REDUCE), ab_shape_reduce, NULL, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ReduceSumSquare", C(REDUCE), ab_shape_reduce, NULL, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ReduceLogSumExp", C(REDUCE), ab_shape_reduce, NULL, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	{ "ArgMax", C(REDUCE), ab_shape_reduce, NULL, ab_cost_reduce, AB_OP_NOGRAD, 0, 0, 0, 0, NULL },
	{ "ArgMin", C(REDUCE), ab_shape_reduce, NULL, ab_cost_reduce, AB_OP_NOGRAD, 0, 0, 0, 0, NULL },
	{ "TopK", C(REDUCE), ab_shape_topk, NULL, ab_cost_reduce, 0, 0, 0, 0, 0, NULL },
	/* recurrent */
	{ "LSTM", C(RECURRENT), ab_shape_rnn, NULL, ab_cost_rnn, 0, 0, 0, 0, 0, NULL },
	{ "GRU", C(RECURRENT), ab_shape_rnn, NULL, ab_cost_rnn, 0, 0, 0, 0, 0, NULL },
	{ "RNN", C(RECURRENT), ab_shape_rnn, NULL, ab_cost_rnn, 0, 0, 0, 0, 0, NULL },
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
	if (domain && domain[0] && strcmp(domain, "ai.onnx"))
		return -1;
	/* Comparing the first character first skips most rows without a call. */
	for (int i = 0; i < ab_n_ops; i++)
		if (ab_ops[i].name[0] == op[0] && !strcmp(ab_ops[i].name, op))
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
		k->in_mask = (ab_in_rg(c, 1) ? 1u : 0u) | (ab_in_rg(c, 0) ? 2u : 0u);
	else if (d->save_in == AB_SAVE_QUOTIENT)
		k->in_mask = (ab_in_rg(c, 1) ? 1u : 0u) | (ab_in_rg(c, 0) || ab_in_rg(c, 1) ? 2u : 0u);
	k->out_mask = d->save_out;
	for (int i = 0; i < c->n->n_in; i++)
		ab_sat_add(&k->bytes_read, ab_has_in(c, i) ? tensor_bytes(ab_in(c, i)) : 0);
	for (int o = 0; o < c->n->n_out; o++)
		if (c->n->out[o] >= 0)
			ab_sat_add(&k->bytes_written, tensor_bytes(&c->shapes[c->n->out[o]]));
	return 0;
}
