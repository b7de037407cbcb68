/*
 * ops_elem.c — element-wise ops: numpy-style broadcasting shape rule, constant folding of unary, binary,
 * variadic and Where ops through the op table's scalar functions (integer arithmetic on shape values is the
 * common case).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

int ab_broadcast_dims(ab_ctx *c, const ab_shape *a, const ab_shape *b, int *rank, int64_t *dims)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
		if (da == db || db == 1)
			dims[i] = da;
		else if (da == 1)
			dims[i] = db;
		else
			return ab_node_err(c, ABACUS_ESHAPE, "cannot broadcast dim %lld against %lld at axis %d",
			                   (long long)da, (long long)db, i);
	}
	*rank = r;
	return 0;
}

/* The op table's output dtype rule. */
static int out_dtype(ab_ctx *c, int in_dtype)
{
	const ab_opdef *d = ab_node_def(c->n);
	switch (d ? d->out_dtype : AB_OUT_SAME) {
	case AB_OUT_BOOL:
		return AB_DT_BOOL;
	case AB_OUT_CAST_TO:
		return (int)ab_attr_int(c->n, "to", in_dtype);
	case AB_OUT_LIKE_IN1: {
		const ab_shape *s = ab_in(c, 1);
		return s && s->known ? s->dtype : in_dtype;
	}
	default:
		return in_dtype;
	}
}

int ab_shape_unary(ab_ctx *c)
{
	int rc = ab_need(c, 0);
	if (rc)
		return rc;
	const ab_shape *s = ab_in(c, 0);
	return ab_set_out(c, 0, out_dtype(c, s->dtype), s->rank, s->dims);
}

/* Binary, variadic (Sum, Max, Min, Mean) and ternary (Where) broadcasting. */
int ab_shape_broadcast(ab_ctx *c)
{
	int rank = 0, rc;
	int64_t dims[ABACUS_MAX_RANK];
	int dtype = -1;
	int first = (ab_node_flags(c->n) & AB_OP_SELECT) ? 1 : 0;
	ab_shape acc = { 1, 0, 0, { 0 }, 1 };
	for (int k = 0; k < c->n->n_in; k++) {
		if ((rc = ab_need(c, k)))
			return rc;
		const ab_shape *s = ab_in(c, k);
		if ((rc = ab_broadcast_dims(c, &acc, s, &rank, dims)))
			return rc;
		acc.rank = rank;
		memcpy(acc.dims, dims, sizeof dims);
		if (k == first)
			dtype = s->dtype;
	}
	if (c->n->n_in == 0)
		return ab_node_err(c, ABACUS_EGRAPH, "an element-wise op needs at least one input");
	if (dtype < 0)
		dtype = ab_in(c, 0)->dtype;
	return ab_set_out(c, 0, out_dtype(c, dtype), acc.rank, acc.dims);
}

/* ---- folding ---- */

/* One function per op and element (kann's one-function-per-op table): the op table's `scalar` row says
 * what one element of constant inputs becomes. Integer versions are exact and return -1 on overflow or
 * division by zero; float versions follow C doubles. `fmod` is Mod's attribute (ignored by the others). */
#define F2(nm, expr) static double f_##nm(double a, double b, int fmod) { (void)b; (void)fmod; return (expr); }
#define I2(nm, body) static int i_##nm(int64_t a, int64_t b, int fmod, int64_t *r) { (void)b; (void)fmod; body }

static double floor_mod(double a, double b)
{
	double r = fmod(a, b);
	if (r != 0 && ((r < 0) != (b < 0)))
		r += b;
	return r;
}

F2(add, a + b)
F2(sub, a - b)
F2(mul, a * b)
F2(div, a / b)
F2(pow, pow(a, b))
F2(max, a > b ? a : b)
F2(min, a < b ? a : b)
F2(eq, a == b)
F2(lt, a < b)
F2(gt, a > b)
F2(le, a <= b)
F2(ge, a >= b)
F2(and, a != 0 && b != 0)
F2(or, a != 0 || b != 0)
F2(xor, (a != 0) != (b != 0))
static double f_mod(double a, double b, int fmod_attr)
{
	return fmod_attr ? fmod(a, b) : floor_mod(a, b);
}
F2(neg, -a)
F2(abs, fabs(a))
F2(floor, floor(a))
F2(ceil, ceil(a))
F2(round, nearbyint(a))
F2(sqrt, sqrt(a))
F2(recip, 1.0 / a)
F2(exp, exp(a))
F2(log, log(a))
F2(relu, a > 0 ? a : 0)
F2(sign, (a > 0) - (a < 0))
F2(not, a == 0)
F2(same, a)
F2(sigmoid, 1.0 / (1.0 + exp(-a)))
F2(tanh, tanh(a))
F2(erf, erf(a))

I2(add, return __builtin_add_overflow(a, b, r) ? -1 : 0;)
I2(sub, return __builtin_sub_overflow(a, b, r) ? -1 : 0;)
I2(mul, return __builtin_mul_overflow(a, b, r) ? -1 : 0;)
I2(div, if (b == 0 || (a == INT64_MIN && b == -1)) return -1; *r = a / b; return 0;)
static int i_mod(int64_t a, int64_t b, int fmod_attr, int64_t *r)
{
	if (b == 0 || (a == INT64_MIN && b == -1))
		return -1;
	int64_t m = a % b;
	if (!fmod_attr && m != 0 && ((m < 0) != (b < 0)))
		m += b;
	*r = m;
	return 0;
}
I2(pow, return ab_d2i(pow((double)a, (double)b), r);)
I2(max, *r = a > b ? a : b; return 0;)
I2(min, *r = a < b ? a : b; return 0;)
I2(eq, *r = a == b; return 0;)
I2(lt, *r = a < b; return 0;)
I2(gt, *r = a > b; return 0;)
I2(le, *r = a <= b; return 0;)
I2(ge, *r = a >= b; return 0;)
I2(and, *r = a && b; return 0;)
I2(or, *r = a || b; return 0;)
I2(xor, *r = (!a) != (!b); return 0;)
I2(neg, if (a == INT64_MIN) return -1; *r = -a; return 0;)
I2(abs, if (a == INT64_MIN) return -1; *r = a < 0 ? -a : a; return 0;)
I2(same, *r = a; return 0;)

#define BIN(nm) { f_##nm, i_##nm, 2, 0 }
#define UNF(nm) { f_##nm, NULL, 1, 0 }
#define UNI(nm) { f_##nm, i_##nm, 1, 0 }
const ab_scalar ab_sc_add = BIN(add), ab_sc_sub = BIN(sub), ab_sc_mul = BIN(mul), ab_sc_div = BIN(div),
                ab_sc_mod = BIN(mod), ab_sc_pow = BIN(pow), ab_sc_max = BIN(max), ab_sc_min = BIN(min),
                ab_sc_eq = BIN(eq), ab_sc_lt = BIN(lt), ab_sc_gt = BIN(gt), ab_sc_le = BIN(le), ab_sc_ge = BIN(ge),
                ab_sc_and = BIN(and), ab_sc_or = BIN(or), ab_sc_xor = BIN(xor),
                /* ONNX's Mean is for floats only: a sum, divided by the count at the end */
                ab_sc_mean = { f_add, NULL, 2, 1 },
                ab_sc_neg = UNI(neg), ab_sc_abs = UNI(abs), ab_sc_same = UNI(same),
                ab_sc_floor = UNF(floor), ab_sc_ceil = UNF(ceil), ab_sc_round = UNF(round), ab_sc_sqrt = UNF(sqrt),
                ab_sc_recip = UNF(recip), ab_sc_exp = UNF(exp), ab_sc_log = UNF(log), ab_sc_relu = UNF(relu),
                ab_sc_sign = UNF(sign), ab_sc_not = UNF(not), ab_sc_sigmoid = UNF(sigmoid), ab_sc_tanh = UNF(tanh),
                ab_sc_erf = UNF(erf);

/* Index of the element of `s` (broadcast into out dims `od` of rank `r`) for output flat index o. */
static int64_t bcast_index(const ab_value *s, const int64_t *od, int r, int64_t o)
{
	int64_t idx = 0, stride = 1;
	for (int i = r - 1; i >= 0; i--) {
		int64_t coord = o % od[i];
		o /= od[i];
		int si = i - (r - s->rank);
		if (si >= 0) {
			if (s->dims[si] != 1)
				idx += coord * stride;
			stride *= s->dims[si];
		}
	}
	return idx;
}

/* Stores one folded element; -1 when a float result does not fit the integer output (it used to saturate
 * silently at INT64_MAX, and a shape computed from it was then absurd instead of an error). */
static int store(ab_value *v, int64_t k, double d, int64_t i, int use_int)
{
	if (v->i)
		return use_int ? (v->i[k] = i, 0) : ab_d2i(d, &v->i[k]);
	v->f[k] = use_int ? (double)i : d;
	return 0;
}

/* Checks shared by the folding rules: 1 when node `c` can be folded (one output of known, small size and
 * a value in every input slot), 0 when it stays a compute node. */
static int foldable(ab_ctx *c)
{
	if (c->n->n_out < 1 || c->n->out[0] < 0)
		return 0;
	if (c->shapes[c->n->out[0]].numel > AB_MAX_CONST_ELEMS)
		return 0; /* too large to fold: stays a (constant) compute node */
	/* Every input slot must hold a value: an omitted optional input (an empty name, e.g. CumSum's axis)
	 * is not a constant to fold with (found by fuzz_onnx). */
	for (int k = 0; k < c->n->n_in; k++)
		if (!ab_inval(c, k))
			return 0;
	return 1;
}

static int fold_overflow(ab_ctx *c, ab_value *v)
{
	ab_value_free(v);
	return ab_node_err(c, ABACUS_ESHAPE, "integer arithmetic on constant shape values overflows or divides by zero");
}

/* Unary, binary and variadic element-wise ops, one element at a time through the op's scalar functions,
 * variadic inputs folded left to right; exact integer arithmetic where every input is an integer. */
int ab_fold_elementwise(ab_ctx *c)
{
	const ab_opdef *def = ab_node_def(c->n);
	const ab_scalar *sc = def ? def->scalar : NULL;
	if (!sc || !foldable(c))
		return 0;
	const ab_shape *os = &c->shapes[c->n->out[0]];
	ab_value *v = ab_value_new(c->arena, os->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	int fmod_attr = (int)ab_attr_int(c->n, "fmod", 0);
	int n_in = sc->arity == 1 ? 1 : c->n->n_in;
	int all_int = sc->i != NULL;
	for (int k = 0; k < n_in; k++)
		if (!ab_inval(c, k)->i)
			all_int = 0;
	for (int64_t o = 0; o < v->n; o++) {
		const ab_value *a = ab_inval(c, 0);
		int64_t ja = bcast_index(a, os->dims, os->rank, o);
		if (sc->arity == 1) {
			int64_t r;
			if (all_int ? sc->i(a->i[ja], 0, fmod_attr, &r) || store(v, o, 0, r, 1)
			            : store(v, o, sc->f(ab_value_get(a, ja), 0, fmod_attr), 0, 0))
				return fold_overflow(c, v);
			continue;
		}
		if (all_int) {
			int64_t acc = a->i[ja];
			for (int k = 1; k < n_in; k++) {
				const ab_value *b = ab_inval(c, k);
				if (sc->i(acc, b->i[bcast_index(b, os->dims, os->rank, o)], fmod_attr, &acc))
					return fold_overflow(c, v);
			}
			store(v, o, 0, acc, 1);
		} else {
			double acc = ab_value_get(a, ja);
			for (int k = 1; k < n_in; k++) {
				const ab_value *b = ab_inval(c, k);
				acc = sc->f(acc, ab_value_get(b, bcast_index(b, os->dims, os->rank, o)), fmod_attr);
			}
			if (sc->mean)
				acc /= n_in;
			if (store(v, o, acc, 0, 0))
				return fold_overflow(c, v);
		}
	}
	return ab_set_outval(c, 0, v);
}

/* Where(cond, a, b): each element from a where cond is non-zero, else from b. */
int ab_fold_where(ab_ctx *c)
{
	if (c->n->n_in != 3 || !foldable(c))
		return 0;
	const ab_shape *os = &c->shapes[c->n->out[0]];
	ab_value *v = ab_value_new(c->arena, os->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	const ab_value *cv = ab_inval(c, 0), *a = ab_inval(c, 1), *b = ab_inval(c, 2);
	for (int64_t o = 0; o < v->n; o++) {
		const ab_value *pick = ab_value_get(cv, bcast_index(cv, os->dims, os->rank, o)) != 0 ? a : b;
		int64_t j = bcast_index(pick, os->dims, os->rank, o);
		if (store(v, o, pick->f ? pick->f[j] : 0, pick->i ? pick->i[j] : 0, pick->i != NULL))
			return fold_overflow(c, v);
	}
	return ab_set_outval(c, 0, v);
}

/* A product's backward (Mul, Div, an Einsum without contraction) makes every operand's gradient at the
 * output's size, grad * other, and autograd's engine sums those of operands smaller than the output (a
 * broadcast scale, an SE gate, a layer-scale weight, an outer product's factors) down to their shape only
 * after the backward returned: one output-sized buffer per such operand beside the output's gradient and
 * the full-size operands' gradients. Measured 2026-12-05 with the allocator tracker: [B, 64, 64, 64] times
 * a [64, 1, 1] weight or a [B, 64, 1, 1] gate, B 1-8, backward peak 0.95-1.0 output above the rule without
 * it; einsum("blhd,blhe->blhde") of [B, 256, 4, 32] each, B 1 and 4, between two Linears: 1.95x (both
 * factors are summed down). A quotient's divisor gradient, -grad * (a / b) / b, holds three such buffers
 * (the same measurement, h / (gate + 1): 3.0x the output). */
int64_t ab_broadcast_product_workspace(const ab_ctx *c, int quotient)
{
	const ab_shape *y = c->n->n_out > 0 && c->n->out[0] >= 0 ? &c->shapes[c->n->out[0]] : NULL;
	if (!y || !y->known)
		return 0;
	int reduced = 0;
	for (int i = 0; i < c->n->n_in && i < 2; i++) {
		const ab_shape *s = ab_in(c, i);
		if (ab_in_rg(c, i) && s && s->known && s->numel < y->numel)
			reduced += quotient && i == 1 ? 3 : 1;
	}
	int sz = ab_dtype_size(y->dtype);
	int64_t one, out;
	if (!reduced || ab_mul(y->numel, sz ? sz : 4, &one) || ab_mul(one, reduced, &out))
		return 0;
	return out;
}
