/*
 * ops_rule.c — what every rule of the op table (ops.h) uses: setting an output's shape or value, requiring
 * an input, axes, checked products, and errors that name the node.
 */
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
