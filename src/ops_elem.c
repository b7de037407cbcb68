/*
 * ops_elem.c — element-wise ops: numpy-style broadcasting shape rule, constant folding of unary, binary,
 * variadic and Where ops (integer arithmetic on shape values is the common case), and shared helpers for
 * every rule (setting outputs, errors naming the node).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

int ab_node_err(ab_ctx *c, int code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ab_err(c->err, code, c->n->name, "node '%s' (%s): %s", c->n->name, c->n->op, msg);
}

int ab_axis(int64_t axis, int rank)
{
	if (axis < 0)
		axis += rank;
	return (axis < 0 || axis >= rank) ? -1 : (int)axis;
}

int ab_muladd(int64_t *acc, int64_t a, int64_t b)
{
	int64_t p;
	if (ab_mul(a, b, &p) || ab_add(*acc, p, acc))
		return -1;
	return 0;
}

int ab_set_out(ab_ctx *c, int k, int dtype, int rank, const int64_t *dims)
{
	if (k >= c->n->n_out || c->n->out[k] < 0)
		return 0;
	if (rank < 0 || rank > ABACUS_MAX_RANK)
		return ab_node_err(c, ABACUS_ELIMIT, "output %d would have rank %d; at most %d is supported", k, rank,
		                   ABACUS_MAX_RANK);
	ab_shape *s = &c->shapes[c->n->out[k]];
	s->known = 1;
	s->dtype = dtype;
	s->rank = rank;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0)
			return ab_node_err(c, ABACUS_ESHAPE, "output %d would have a negative dim (%lld at axis %d)", k,
			                   (long long)dims[i], i);
		s->dims[i] = dims[i];
	}
	if (ab_numel(s->dims, rank, &s->numel))
		return ab_node_err(c, ABACUS_ESHAPE, "output %d has dims whose product overflows 64 bits", k);
	return 0;
}

int ab_set_outval(ab_ctx *c, int k, ab_value *v)
{
	if (k >= c->n->n_out || c->n->out[k] < 0)
		return 0;
	c->vals[c->n->out[k]] = v;
	return ab_set_out(c, k, v->dtype, v->rank, v->dims);
}

int ab_need(ab_ctx *c, int k)
{
	if (!ab_has_in(c, k))
		return ab_node_err(c, ABACUS_EGRAPH, "input %d is required but missing", k);
	if (!ab_in(c, k)->known)
		return ab_node_err(c, ABACUS_ESHAPE, "the shape of input %d ('%s') is unknown", k,
		                   c->g->tensors[c->n->in[k]].name);
	return 0;
}

int ab_need_val(ab_ctx *c, int k, const char *what)
{
	int rc = ab_need(c, k);
	if (rc)
		return rc;
	if (!ab_inval(c, k))
		return ab_node_err(c, ABACUS_EUNSUPPORTED,
		                   "its %s (input %d, '%s') depends on data, not only on shapes, so it cannot be resolved "
		                   "ahead of time",
		                   what, k, c->g->tensors[c->n->in[k]].name);
	return 0;
}

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

static int out_dtype(ab_ctx *c, int in_dtype)
{
	const char *op = c->n->op;
	if (!strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") || !strcmp(op, "LessOrEqual") ||
	    !strcmp(op, "GreaterOrEqual") || !strcmp(op, "Not") || !strcmp(op, "And") || !strcmp(op, "Or") ||
	    !strcmp(op, "Xor") || !strcmp(op, "IsNaN") || !strcmp(op, "IsInf"))
		return AB_DT_BOOL;
	if (!strcmp(op, "Cast"))
		return (int)ab_attr_int(c->n, "to", in_dtype);
	if (!strcmp(op, "CastLike")) {
		const ab_shape *s = ab_in(c, 1);
		return s && s->known ? s->dtype : in_dtype;
	}
	return in_dtype;
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
	int first = !strcmp(c->n->op, "Where") ? 1 : 0;
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

static double floor_mod(double a, double b)
{
	double r = fmod(a, b);
	if (r != 0 && ((r < 0) != (b < 0)))
		r += b;
	return r;
}

static int apply_int(const char *op, int64_t a, int64_t b, int fmod_attr, int64_t *r)
{
	if (!strcmp(op, "Add"))
		return __builtin_add_overflow(a, b, r) ? -1 : 0;
	if (!strcmp(op, "Sub"))
		return __builtin_sub_overflow(a, b, r) ? -1 : 0;
	if (!strcmp(op, "Mul"))
		return __builtin_mul_overflow(a, b, r) ? -1 : 0;
	if (!strcmp(op, "Div")) {
		if (b == 0 || (a == INT64_MIN && b == -1))
			return -1;
		*r = a / b;
		return 0;
	}
	if (!strcmp(op, "Mod")) {
		if (b == 0 || (a == INT64_MIN && b == -1))
			return -1;
		int64_t m = a % b;
		if (!fmod_attr && m != 0 && ((m < 0) != (b < 0)))
			m += b;
		*r = m;
		return 0;
	}
	if (!strcmp(op, "Max") || !strcmp(op, "Sum") || !strcmp(op, "Min")) {
		if (!strcmp(op, "Sum"))
			return __builtin_add_overflow(a, b, r) ? -1 : 0;
		*r = !strcmp(op, "Max") ? (a > b ? a : b) : (a < b ? a : b);
		return 0;
	}
	if (!strcmp(op, "Pow")) {
		double p = pow((double)a, (double)b);
		if (!(p > -9.2e18 && p < 9.2e18))
			return -1;
		*r = (int64_t)p;
		return 0;
	}
	if (!strcmp(op, "Equal")) { *r = a == b; return 0; }
	if (!strcmp(op, "Less")) { *r = a < b; return 0; }
	if (!strcmp(op, "Greater")) { *r = a > b; return 0; }
	if (!strcmp(op, "LessOrEqual")) { *r = a <= b; return 0; }
	if (!strcmp(op, "GreaterOrEqual")) { *r = a >= b; return 0; }
	if (!strcmp(op, "And")) { *r = a && b; return 0; }
	if (!strcmp(op, "Or")) { *r = a || b; return 0; }
	if (!strcmp(op, "Xor")) { *r = (!a) != (!b); return 0; }
	return -2;
}

static int apply_float(const char *op, double a, double b, double *r)
{
	if (!strcmp(op, "Add") || !strcmp(op, "Sum")) *r = a + b;
	else if (!strcmp(op, "Sub")) *r = a - b;
	else if (!strcmp(op, "Mul")) *r = a * b;
	else if (!strcmp(op, "Div")) *r = a / b;
	else if (!strcmp(op, "Mod")) *r = floor_mod(a, b);
	else if (!strcmp(op, "Pow")) *r = pow(a, b);
	else if (!strcmp(op, "Max")) *r = a > b ? a : b;
	else if (!strcmp(op, "Min")) *r = a < b ? a : b;
	else if (!strcmp(op, "Equal")) *r = a == b;
	else if (!strcmp(op, "Less")) *r = a < b;
	else if (!strcmp(op, "Greater")) *r = a > b;
	else if (!strcmp(op, "LessOrEqual")) *r = a <= b;
	else if (!strcmp(op, "GreaterOrEqual")) *r = a >= b;
	else if (!strcmp(op, "And")) *r = a != 0 && b != 0;
	else if (!strcmp(op, "Or")) *r = a != 0 || b != 0;
	else if (!strcmp(op, "Xor")) *r = (a != 0) != (b != 0);
	else return -2;
	return 0;
}

static int apply_unary(const char *op, double a, double *r)
{
	if (!strcmp(op, "Neg")) *r = -a;
	else if (!strcmp(op, "Abs")) *r = fabs(a);
	else if (!strcmp(op, "Floor")) *r = floor(a);
	else if (!strcmp(op, "Ceil")) *r = ceil(a);
	else if (!strcmp(op, "Round")) *r = nearbyint(a);
	else if (!strcmp(op, "Sqrt")) *r = sqrt(a);
	else if (!strcmp(op, "Reciprocal")) *r = 1.0 / a;
	else if (!strcmp(op, "Exp")) *r = exp(a);
	else if (!strcmp(op, "Log")) *r = log(a);
	else if (!strcmp(op, "Relu")) *r = a > 0 ? a : 0;
	else if (!strcmp(op, "Sign")) *r = (a > 0) - (a < 0);
	else if (!strcmp(op, "Not")) *r = a == 0;
	else if (!strcmp(op, "Identity") || !strcmp(op, "Cast") || !strcmp(op, "CastLike")) *r = a;
	else if (!strcmp(op, "Sigmoid")) *r = 1.0 / (1.0 + exp(-a));
	else if (!strcmp(op, "Tanh")) *r = tanh(a);
	else if (!strcmp(op, "Erf")) *r = erf(a);
	else return -2;
	return 0;
}

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

static void store(ab_value *v, int64_t k, double d, int64_t i, int use_int)
{
	if (v->i)
		v->i[k] = use_int ? i : ab_f2i(d);
	else
		v->f[k] = use_int ? (double)i : d;
}

int ab_fold_elementwise(ab_ctx *c)
{
	const char *op = c->n->op;
	const ab_shape *os = &c->shapes[c->n->out[0]];
	int rc;
	if (c->n->n_out < 1 || c->n->out[0] < 0)
		return 0;
	if (os->numel > AB_MAX_CONST_ELEMS)
		return 0; /* too large to fold: stays a (constant) compute node */
	/* Every input slot must hold a value: an omitted optional input (an empty name, e.g. CumSum's axis)
	 * is not a constant to fold with (found by fuzz_onnx). */
	for (int k = 0; k < c->n->n_in; k++)
		if (!ab_inval(c, k))
			return 0;
	ab_value *v = ab_value_new(c->arena, os->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	int fmod_attr = (int)ab_attr_int(c->n, "fmod", 0);
	int is_where = !strcmp(op, "Where");
	for (int64_t o = 0; o < v->n; o++) {
		if (is_where) {
			const ab_value *cv = ab_inval(c, 0), *a = ab_inval(c, 1), *b = ab_inval(c, 2);
			const ab_value *pick = ab_value_get(cv, bcast_index(cv, os->dims, os->rank, o)) != 0 ? a : b;
			int64_t j = bcast_index(pick, os->dims, os->rank, o);
			store(v, o, pick->f ? pick->f[j] : 0, pick->i ? pick->i[j] : 0, pick->i != NULL);
			continue;
		}
		const ab_value *a = ab_inval(c, 0);
		int64_t ja = bcast_index(a, os->dims, os->rank, o);
		if (c->n->n_in == 1) {
			double r;
			if (a->i && (!strcmp(op, "Identity") || !strcmp(op, "Cast") || !strcmp(op, "Neg") ||
			             !strcmp(op, "Abs") || !strcmp(op, "CastLike"))) {
				int64_t x = a->i[ja];
				int64_t y = !strcmp(op, "Neg") ? -x : !strcmp(op, "Abs") ? (x < 0 ? -x : x) : x;
				if (x == INT64_MIN && (op[0] == 'N' || op[0] == 'A'))
					goto overflow;
				store(v, o, (double)y, y, 1);
				continue;
			}
			if (apply_unary(op, ab_value_get(a, ja), &r) == -2)
				goto unsupported;
			if (v->i && !(r > -9.3e18 && r < 9.3e18))
				goto overflow;
			store(v, o, r, 0, 0);
			continue;
		}
		/* Binary or variadic: fold left to right. */
		int all_int = 1;
		for (int k = 0; k < c->n->n_in; k++)
			if (!ab_inval(c, k)->i)
				all_int = 0;
		if (all_int) {
			int64_t acc = a->i[ja];
			for (int k = 1; k < c->n->n_in; k++) {
				const ab_value *b = ab_inval(c, k);
				int64_t r;
				int e = apply_int(op, acc, b->i[bcast_index(b, os->dims, os->rank, o)], fmod_attr, &r);
				if (e == -2)
					goto unsupported;
				if (e)
					goto overflow;
				acc = r;
			}
			store(v, o, (double)acc, acc, 1);
		} else {
			double acc = ab_value_get(a, ja);
			for (int k = 1; k < c->n->n_in; k++) {
				const ab_value *b = ab_inval(c, k);
				double r;
				if (apply_float(op, acc, ab_value_get(b, bcast_index(b, os->dims, os->rank, o)), &r))
					goto unsupported;
				acc = r;
			}
			if (v->i && !(acc > -9.3e18 && acc < 9.3e18))
				goto overflow;
			store(v, o, acc, 0, 0);
		}
	}
	if (!strcmp(op, "Mean") && v->f)
		for (int64_t o = 0; o < v->n; o++)
			v->f[o] /= c->n->n_in;
	rc = ab_set_outval(c, 0, v);
	return rc;
unsupported:
	ab_value_free(v);
	return 0; /* not foldable here: it stays a compute node */
overflow:
	ab_value_free(v);
	return ab_node_err(c, ABACUS_ESHAPE, "integer arithmetic on constant shape values overflows or divides by zero");
}
