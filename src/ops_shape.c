/*
 * ops_shape.c — ops that move, slice, join or describe tensors rather than compute on them: shape rules
 * and constant folding for Reshape, Flatten, Transpose, (Un)Squeeze, Concat, Split, Slice, Gather,
 * Expand, Tile, Shape, Size, Constant, ConstantOfShape, Range, Pad, Resize and friends.
 *
 * Folding these on constant inputs is what resolves traced PyTorch exports: `x.view(x.size(0), -1)`
 * becomes Shape → Gather → Unsqueeze → Concat → Reshape, and every one of them must produce a value.
 * Axis lists come from attributes before opset 13 (Squeeze/Unsqueeze/Split) and from inputs after.
 */
#include <string.h>

#include "ops.h"

/* Reads an axes/ints list from input k (when present) or from attribute `attr`. *n = -1 when absent. */
static int get_list(ab_ctx *c, int k, const char *attr, int64_t *out, int *n, int max)
{
	*n = -1;
	if (ab_has_in(c, k)) {
		int rc = ab_need_val(c, k, attr);
		if (rc)
			return rc;
		const ab_value *v = ab_inval(c, k);
		if (v->n > max)
			return ab_node_err(c, ABACUS_ELIMIT, "%s has %lld entries; at most %d are supported", attr,
			                   (long long)v->n, max);
		for (int64_t i = 0; i < v->n; i++)
			out[i] = ab_value_geti(v, i);
		*n = (int)v->n;
		return 0;
	}
	size_t cnt;
	const int64_t *ints = ab_attr_ints(c->n, attr, &cnt);
	if (!ints)
		return 0;
	if (cnt > (size_t)max)
		return ab_node_err(c, ABACUS_ELIMIT, "%s has %zu entries; at most %d are supported", attr, cnt, max);
	memcpy(out, ints, cnt * sizeof *ints);
	*n = (int)cnt;
	return 0;
}

/* A value with the same data as input 0 and new dims (Reshape, Flatten, Squeeze, Unsqueeze, Identity). */
int ab_fold_same_data(ab_ctx *c)
{
	const ab_shape *os = &c->shapes[c->n->out[0]];
	const ab_value *in = ab_inval(c, 0);
	if (os->numel != in->n)
		return 0;
	ab_value *v = ab_value_new(c->arena, in->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	if (in->i && v->i)
		memcpy(v->i, in->i, (size_t)in->n * sizeof *in->i);
	if (in->f && v->f)
		memcpy(v->f, in->f, (size_t)in->n * sizeof *in->f);
	return ab_set_outval(c, 0, v);
}

int ab_shape_reshape(ab_ctx *c)
{
	int rc, n;
	int64_t want[ABACUS_MAX_RANK], dims[ABACUS_MAX_RANK];
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s = ab_in(c, 0);
	if ((rc = get_list(c, 1, "shape", want, &n, ABACUS_MAX_RANK)))
		return rc;
	if (n < 0)
		return ab_node_err(c, ABACUS_EGRAPH, "Reshape needs a shape input");
	int allowzero = (int)ab_attr_int(c->n, "allowzero", 0);
	int infer = -1;
	int64_t known = 1;
	for (int i = 0; i < n; i++) {
		int64_t d = want[i];
		if (d == 0 && !allowzero) {
			if (i >= s->rank)
				return ab_node_err(c, ABACUS_ESHAPE, "shape entry %d is 0 (copy) but the input has rank %d", i, s->rank);
			d = s->dims[i];
		}
		if (d == -1) {
			if (infer >= 0)
				return ab_node_err(c, ABACUS_ESHAPE, "shape has more than one -1");
			infer = i;
			dims[i] = 1;
			continue;
		}
		if (d < 0)
			return ab_node_err(c, ABACUS_ESHAPE, "shape entry %d is negative (%lld)", i, (long long)d);
		dims[i] = d;
		if (ab_mul(known, d, &known))
			return ab_node_err(c, ABACUS_ESHAPE, "target shape overflows 64 bits");
	}
	if (infer >= 0) {
		if (known == 0 || s->numel % known)
			return ab_node_err(c, ABACUS_ESHAPE, "cannot reshape %lld elements with a -1 in the target shape",
			                   (long long)s->numel);
		dims[infer] = s->numel / known;
	} else if (known != s->numel) {
		return ab_node_err(c, ABACUS_ESHAPE, "cannot reshape %lld elements into a shape of %lld elements",
		                   (long long)s->numel, (long long)known);
	}
	return ab_set_out(c, 0, s->dtype, n, dims);
}

int ab_shape_flatten(ab_ctx *c)
{
	int rc = ab_need(c, 0);
	if (rc)
		return rc;
	const ab_shape *s = ab_in(c, 0);
	int64_t axis = ab_attr_int(c->n, "axis", 1);
	if (axis < 0)
		axis += s->rank;
	if (axis < 0 || axis > s->rank)
		return ab_node_err(c, ABACUS_ESHAPE, "axis %lld is out of range for rank %d", (long long)axis, s->rank);
	int64_t d[2] = { 1, 1 };
	for (int i = 0; i < s->rank; i++)
		if (ab_mul(d[i >= axis], s->dims[i], &d[i >= axis]))
			return ab_node_err(c, ABACUS_ESHAPE, "dims overflow");
	return ab_set_out(c, 0, s->dtype, 2, d);
}

int ab_shape_transpose(ab_ctx *c)
{
	int rc = ab_need(c, 0);
	if (rc)
		return rc;
	const ab_shape *s = ab_in(c, 0);
	size_t n;
	const int64_t *perm = ab_attr_ints(c->n, "perm", &n);
	int64_t dims[ABACUS_MAX_RANK];
	int seen[ABACUS_MAX_RANK] = { 0 };
	if (perm && (int)n != s->rank)
		return ab_node_err(c, ABACUS_ESHAPE, "perm has %zu entries for an input of rank %d", n, s->rank);
	for (int i = 0; i < s->rank; i++) {
		int p = perm ? ab_axis(perm[i], s->rank) : s->rank - 1 - i;
		if (p < 0 || seen[p]++)
			return ab_node_err(c, ABACUS_ESHAPE, "perm is not a permutation of 0..%d", s->rank - 1);
		dims[i] = s->dims[p];
	}
	return ab_set_out(c, 0, s->dtype, s->rank, dims);
}

int ab_fold_transpose(ab_ctx *c)
{
	const ab_value *in = ab_inval(c, 0);
	const ab_shape *os = &c->shapes[c->n->out[0]];
	size_t n;
	const int64_t *perm = ab_attr_ints(c->n, "perm", &n);
	ab_value *v = ab_value_new(c->arena, in->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	int64_t istride[ABACUS_MAX_RANK];
	int64_t st = 1;
	for (int i = in->rank - 1; i >= 0; i--) {
		istride[i] = st;
		st *= in->dims[i];
	}
	for (int64_t o = 0; o < v->n; o++) {
		int64_t rem = o, idx = 0;
		for (int i = os->rank - 1; i >= 0; i--) {
			int64_t coord = rem % os->dims[i];
			rem /= os->dims[i];
			int p = perm ? ab_axis(perm[i], in->rank) : in->rank - 1 - i;
			idx += coord * istride[p];
		}
		if (v->i)
			v->i[o] = ab_value_geti(in, idx);
		else
			v->f[o] = ab_value_get(in, idx);
	}
	return ab_set_outval(c, 0, v);
}

int ab_shape_squeeze(ab_ctx *c)
{
	int rc, n;
	int64_t axes[ABACUS_MAX_RANK], dims[ABACUS_MAX_RANK];
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s = ab_in(c, 0);
	if ((rc = get_list(c, 1, "axes", axes, &n, ABACUS_MAX_RANK)))
		return rc;
	int drop[ABACUS_MAX_RANK] = { 0 };
	for (int i = 0; i < n; i++) {
		int a = ab_axis(axes[i], s->rank);
		if (a < 0)
			return ab_node_err(c, ABACUS_ESHAPE, "axis %lld is out of range for rank %d", (long long)axes[i], s->rank);
		if (s->dims[a] != 1)
			return ab_node_err(c, ABACUS_ESHAPE, "cannot squeeze axis %d of size %lld", a, (long long)s->dims[a]);
		drop[a] = 1;
	}
	int r = 0;
	for (int i = 0; i < s->rank; i++)
		if (!(n < 0 ? s->dims[i] == 1 : drop[i]))
			dims[r++] = s->dims[i];
	return ab_set_out(c, 0, s->dtype, r, dims);
}

int ab_shape_unsqueeze(ab_ctx *c)
{
	int rc, n;
	int64_t axes[ABACUS_MAX_RANK], dims[ABACUS_MAX_RANK];
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s = ab_in(c, 0);
	if ((rc = get_list(c, 1, "axes", axes, &n, ABACUS_MAX_RANK)))
		return rc;
	if (n < 0)
		return ab_node_err(c, ABACUS_EGRAPH, "Unsqueeze needs axes");
	int r = s->rank + n;
	if (r > ABACUS_MAX_RANK)
		return ab_node_err(c, ABACUS_ELIMIT, "output rank %d exceeds %d", r, ABACUS_MAX_RANK);
	int ins[ABACUS_MAX_RANK] = { 0 };
	for (int i = 0; i < n; i++) {
		int a = ab_axis(axes[i], r);
		if (a < 0 || ins[a]++)
			return ab_node_err(c, ABACUS_ESHAPE, "axis %lld is invalid or repeated for output rank %d",
			                   (long long)axes[i], r);
	}
	for (int i = 0, j = 0; i < r; i++)
		dims[i] = ins[i] ? 1 : s->dims[j++];
	return ab_set_out(c, 0, s->dtype, r, dims);
}

int ab_shape_concat(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s0 = ab_in(c, 0);
	int axis = ab_axis(ab_attr_int(c->n, "axis", 0), s0->rank);
	if (axis < 0)
		return ab_node_err(c, ABACUS_ESHAPE, "axis is out of range for rank %d", s0->rank);
	int64_t dims[ABACUS_MAX_RANK];
	memcpy(dims, s0->dims, sizeof dims);
	for (int k = 1; k < c->n->n_in; k++) {
		if ((rc = ab_need(c, k)))
			return rc;
		const ab_shape *s = ab_in(c, k);
		if (s->rank != s0->rank)
			return ab_node_err(c, ABACUS_ESHAPE, "input %d has rank %d, input 0 has rank %d", k, s->rank, s0->rank);
		for (int i = 0; i < s->rank; i++)
			if (i != axis && s->dims[i] != s0->dims[i])
				return ab_node_err(c, ABACUS_ESHAPE, "input %d has dim %lld at axis %d, input 0 has %lld", k,
				                   (long long)s->dims[i], i, (long long)s0->dims[i]);
		if (ab_add(dims[axis], s->dims[axis], &dims[axis]))
			return ab_node_err(c, ABACUS_ESHAPE, "concatenated dim overflows");
	}
	return ab_set_out(c, 0, s0->dtype, s0->rank, dims);
}

int ab_fold_concat(ab_ctx *c)
{
	const ab_shape *os = &c->shapes[c->n->out[0]];
	if (os->numel > AB_MAX_CONST_ELEMS)
		return 0;
	ab_value *v = ab_value_new(c->arena, os->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	int axis = ab_axis(ab_attr_int(c->n, "axis", 0), os->rank);
	int64_t outer = 1, inner = 1;
	for (int i = 0; i < axis; i++)
		outer *= os->dims[i];
	for (int i = axis + 1; i < os->rank; i++)
		inner *= os->dims[i];
	int64_t o = 0;
	for (int64_t b = 0; b < outer; b++)
		for (int k = 0; k < c->n->n_in; k++) {
			const ab_value *in = ab_inval(c, k);
			int64_t chunk = in->dims[axis] * inner;
			for (int64_t j = 0; j < chunk; j++, o++) {
				int64_t src = b * chunk + j;
				if (v->i)
					v->i[o] = ab_value_geti(in, src);
				else
					v->f[o] = ab_value_get(in, src);
			}
		}
	return ab_set_outval(c, 0, v);
}

int ab_shape_split(ab_ctx *c)
{
	int rc, n;
	int64_t parts[AB_MAX_IO > 64 ? 64 : AB_MAX_IO];
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s = ab_in(c, 0);
	int axis = ab_axis(ab_attr_int(c->n, "axis", 0), s->rank);
	if (axis < 0)
		return ab_node_err(c, ABACUS_ESHAPE, "axis is out of range for rank %d", s->rank);
	int nout = c->n->n_out;
	if (nout > 64)
		return ab_node_err(c, ABACUS_ELIMIT, "more than 64 outputs");
	if ((rc = get_list(c, 1, "split", parts, &n, 64)))
		return rc;
	if (n < 0) {
		int64_t d = s->dims[axis], each = (d + nout - 1) / nout;
		for (int k = 0; k < nout; k++) {
			parts[k] = d >= each ? each : d;
			d -= parts[k];
		}
		n = nout;
	}
	if (n != nout)
		return ab_node_err(c, ABACUS_ESHAPE, "split has %d sizes for %d outputs", n, nout);
	int64_t sum = 0;
	for (int k = 0; k < n; k++) {
		int64_t dims[ABACUS_MAX_RANK];
		memcpy(dims, s->dims, sizeof dims);
		dims[axis] = parts[k];
		if (parts[k] < 0 || ab_add(sum, parts[k], &sum))
			return ab_node_err(c, ABACUS_ESHAPE, "invalid split size %lld", (long long)parts[k]);
		if ((rc = ab_set_out(c, k, s->dtype, s->rank, dims)))
			return rc;
	}
	if (sum != s->dims[axis])
		return ab_node_err(c, ABACUS_ESHAPE, "split sizes add up to %lld but the axis has %lld", (long long)sum,
		                   (long long)s->dims[axis]);
	return 0;
}

/* Resolves Slice's starts/ends/axes/steps for input shape s into per-axis (start, step, count). */
static int slice_plan(ab_ctx *c, const ab_shape *s, int64_t *start, int64_t *step, int64_t *count)
{
	int rc, ns, ne, na, nst;
	int64_t starts[ABACUS_MAX_RANK], ends[ABACUS_MAX_RANK], axes[ABACUS_MAX_RANK], steps[ABACUS_MAX_RANK];
	if ((rc = get_list(c, 1, "starts", starts, &ns, ABACUS_MAX_RANK)) ||
	    (rc = get_list(c, 2, "ends", ends, &ne, ABACUS_MAX_RANK)) ||
	    (rc = get_list(c, 3, "axes", axes, &na, ABACUS_MAX_RANK)) ||
	    (rc = get_list(c, 4, "steps", steps, &nst, ABACUS_MAX_RANK)))
		return rc;
	if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
		return ab_node_err(c, ABACUS_ESHAPE, "starts, ends, axes and steps must have the same length");
	for (int i = 0; i < s->rank; i++) {
		start[i] = 0;
		step[i] = 1;
		count[i] = s->dims[i];
	}
	for (int k = 0; k < ns; k++) {
		int a = ab_axis(na >= 0 ? axes[k] : k, s->rank);
		if (a < 0)
			return ab_node_err(c, ABACUS_ESHAPE, "slice axis is out of range for rank %d", s->rank);
		int64_t d = s->dims[a], st = nst >= 0 ? steps[k] : 1, b = starts[k], e = ends[k];
		if (st == 0)
			return ab_node_err(c, ABACUS_ESHAPE, "slice step is 0");
		if (b < 0)
			b = b < -d ? 0 : b + d;
		if (e < 0)
			e = e < -d ? -1 : e + d;
		if (st > 0) {
			b = b > d ? d : b;
			e = e > d ? d : (e < 0 ? 0 : e);
			count[a] = e > b ? (e - b + st - 1) / st : 0;
		} else {
			b = b > d - 1 ? d - 1 : b;
			e = e > d - 1 ? d - 1 : e;
			count[a] = b > e ? (b - e + (-st) - 1) / (-st) : 0;
		}
		start[a] = b;
		step[a] = st;
	}
	return 0;
}

int ab_shape_slice(ab_ctx *c)
{
	int rc;
	int64_t start[ABACUS_MAX_RANK], step[ABACUS_MAX_RANK], count[ABACUS_MAX_RANK];
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s = ab_in(c, 0);
	if ((rc = slice_plan(c, s, start, step, count)))
		return rc;
	return ab_set_out(c, 0, s->dtype, s->rank, count);
}

int ab_fold_slice(ab_ctx *c)
{
	int64_t start[ABACUS_MAX_RANK], step[ABACUS_MAX_RANK], count[ABACUS_MAX_RANK];
	const ab_value *in = ab_inval(c, 0);
	const ab_shape *s = ab_in(c, 0);
	int rc = slice_plan(c, s, start, step, count);
	if (rc)
		return rc;
	ab_value *v = ab_value_new(c->arena, in->dtype, in->rank, count, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	int64_t istride[ABACUS_MAX_RANK], st = 1;
	for (int i = in->rank - 1; i >= 0; i--) {
		istride[i] = st;
		st *= in->dims[i];
	}
	for (int64_t o = 0; o < v->n; o++) {
		int64_t rem = o, idx = 0;
		for (int i = in->rank - 1; i >= 0; i--) {
			int64_t coord = rem % count[i];
			rem /= count[i];
			idx += (start[i] + coord * step[i]) * istride[i];
		}
		if (v->i)
			v->i[o] = ab_value_geti(in, idx);
		else
			v->f[o] = ab_value_get(in, idx);
	}
	return ab_set_outval(c, 0, v);
}

int ab_shape_gather(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need(c, 1)))
		return rc;
	const ab_shape *d = ab_in(c, 0), *ix = ab_in(c, 1);
	int axis = ab_axis(ab_attr_int(c->n, "axis", 0), d->rank);
	if (axis < 0)
		return ab_node_err(c, ABACUS_ESHAPE, "axis is out of range for rank %d", d->rank);
	int r = d->rank - 1 + ix->rank;
	if (r > ABACUS_MAX_RANK)
		return ab_node_err(c, ABACUS_ELIMIT, "output rank %d exceeds %d", r, ABACUS_MAX_RANK);
	int64_t dims[ABACUS_MAX_RANK];
	int j = 0;
	for (int i = 0; i < axis; i++)
		dims[j++] = d->dims[i];
	for (int i = 0; i < ix->rank; i++)
		dims[j++] = ix->dims[i];
	for (int i = axis + 1; i < d->rank; i++)
		dims[j++] = d->dims[i];
	return ab_set_out(c, 0, d->dtype, r, dims);
}

int ab_fold_gather(ab_ctx *c)
{
	const ab_value *d = ab_inval(c, 0), *ix = ab_inval(c, 1);
	const ab_shape *os = &c->shapes[c->n->out[0]];
	int axis = ab_axis(ab_attr_int(c->n, "axis", 0), d->rank);
	if (os->numel > AB_MAX_CONST_ELEMS)
		return 0;
	ab_value *v = ab_value_new(c->arena, d->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	int64_t outer = 1, inner = 1, ad = d->dims[axis];
	for (int i = 0; i < axis; i++)
		outer *= d->dims[i];
	for (int i = axis + 1; i < d->rank; i++)
		inner *= d->dims[i];
	int64_t o = 0;
	for (int64_t b = 0; b < outer; b++)
		for (int64_t k = 0; k < ix->n; k++) {
			int64_t idx = ab_value_geti(ix, k);
			if (idx < 0)
				idx += ad;
			if (idx < 0 || idx >= ad) {
				ab_value_free(v);
				return ab_node_err(c, ABACUS_ESHAPE, "index %lld is out of range for a dim of %lld",
				                   (long long)ab_value_geti(ix, k), (long long)ad);
			}
			for (int64_t j = 0; j < inner; j++, o++) {
				int64_t src = (b * ad + idx) * inner + j;
				if (v->i)
					v->i[o] = ab_value_geti(d, src);
				else
					v->f[o] = ab_value_get(d, src);
			}
		}
	return ab_set_outval(c, 0, v);
}

int ab_shape_expand(ab_ctx *c)
{
	int rc, n;
	int64_t want[ABACUS_MAX_RANK], dims[ABACUS_MAX_RANK];
	if ((rc = ab_need(c, 0)))
		return rc;
	if ((rc = get_list(c, 1, "shape", want, &n, ABACUS_MAX_RANK)))
		return rc;
	if (n < 0)
		return ab_node_err(c, ABACUS_EGRAPH, "Expand needs a shape input");
	ab_shape t = { 1, 0, n, { 0 }, 0 };
	memcpy(t.dims, want, (size_t)n * sizeof *want);
	int r;
	if ((rc = ab_broadcast_dims(c, ab_in(c, 0), &t, &r, dims)))
		return rc;
	return ab_set_out(c, 0, ab_in(c, 0)->dtype, r, dims);
}

int ab_shape_tile(ab_ctx *c)
{
	int rc, n;
	int64_t rep[ABACUS_MAX_RANK], dims[ABACUS_MAX_RANK];
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s = ab_in(c, 0);
	if ((rc = get_list(c, 1, "repeats", rep, &n, ABACUS_MAX_RANK)))
		return rc;
	if (n != s->rank)
		return ab_node_err(c, ABACUS_ESHAPE, "repeats has %d entries for rank %d", n, s->rank);
	for (int i = 0; i < n; i++)
		if (rep[i] < 0 || ab_mul(s->dims[i], rep[i], &dims[i]))
			return ab_node_err(c, ABACUS_ESHAPE, "invalid repeat %lld", (long long)rep[i]);
	return ab_set_out(c, 0, s->dtype, s->rank, dims);
}

/* Expand: element-wise identity with broadcasting; Tile (`tile`): index modulo input dims. */
static int fold_broadcast_copy(ab_ctx *c, int tile)
{
	const ab_value *in = ab_inval(c, 0);
	const ab_shape *os = &c->shapes[c->n->out[0]];
	if (os->numel > AB_MAX_CONST_ELEMS)
		return 0;
	ab_value *v = ab_value_new(c->arena, in->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	for (int64_t o = 0; o < v->n; o++) {
		int64_t rem = o, idx = 0, stride = 1;
		for (int i = os->rank - 1; i >= 0; i--) {
			int64_t coord = rem % os->dims[i];
			rem /= os->dims[i];
			int si = i - (os->rank - in->rank);
			if (si < 0)
				continue;
			int64_t d = in->dims[si];
			idx += (tile ? coord % d : (d == 1 ? 0 : coord)) * stride;
			stride *= d;
		}
		if (v->i)
			v->i[o] = ab_value_geti(in, idx);
		else
			v->f[o] = ab_value_get(in, idx);
	}
	return ab_set_outval(c, 0, v);
}

int ab_fold_expand(ab_ctx *c)
{
	return fold_broadcast_copy(c, 0);
}

int ab_fold_tile(ab_ctx *c)
{
	return fold_broadcast_copy(c, 1);
}

/* Shape and Size always fold once the input's shape is known: that is what removes shape sub-graphs. */
static int shape_query(ab_ctx *c, int is_size)
{
	int rc = ab_need(c, 0);
	if (rc)
		return rc;
	const ab_shape *s = ab_in(c, 0);
	int64_t r = is_size ? 0 : s->rank;
	int64_t one = 1;
	ab_value *v = ab_value_new(c->arena, AB_DT_INT64, is_size ? 0 : 1, is_size ? &one : &r, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	if (is_size) {
		v->i[0] = s->numel;
	} else {
		int64_t b = ab_attr_int(c->n, "start", 0), e = ab_attr_int(c->n, "end", s->rank);
		if (b < 0)
			b += s->rank;
		if (e < 0)
			e += s->rank;
		b = b < 0 ? 0 : (b > s->rank ? s->rank : b);
		e = e < b ? b : (e > s->rank ? s->rank : e);
		v->dims[0] = v->n = e - b;
		for (int64_t i = b; i < e; i++)
			v->i[i - b] = s->dims[i];
	}
	return ab_set_outval(c, 0, v);
}

int ab_shape_shape(ab_ctx *c)
{
	return shape_query(c, 0);
}

int ab_shape_size(ab_ctx *c)
{
	return shape_query(c, 1);
}

int ab_shape_constant(ab_ctx *c)
{
	const ab_node *n = c->n;
	const ab_attr *a;
	ab_value *v = NULL;
	if ((a = ab_node_attr(n, "value")) && a->type == AB_ATTR_TENSOR && a->t) {
		if (a->t->n < 0 || (!a->t->i && !a->t->f && a->t->n > 0))
			/* Shape-only constant (data stripped): shape known, value unknown. */
			return ab_set_out(c, 0, a->t->dtype, a->t->rank, a->t->dims);
		/* The graph's value outlives the analysis: borrowed, not copied. */
		return ab_set_outval(c, 0, a->t);
	} else if ((a = ab_node_attr(n, "value_int")) && a->type == AB_ATTR_INT) {
		v = ab_value_new(c->arena, AB_DT_INT64, 0, NULL, c->err);
		if (v)
			v->i[0] = a->i;
	} else if ((a = ab_node_attr(n, "value_ints")) && a->type == AB_ATTR_INTS) {
		int64_t d = (int64_t)a->n_ints;
		v = ab_value_new(c->arena, AB_DT_INT64, 1, &d, c->err);
		if (v && a->n_ints)
			memcpy(v->i, a->ints, a->n_ints * sizeof *a->ints);
	} else if ((a = ab_node_attr(n, "value_float")) && a->type == AB_ATTR_FLOAT) {
		v = ab_value_new(c->arena, AB_DT_FLOAT, 0, NULL, c->err);
		if (v)
			v->f[0] = a->f;
	} else {
		return ab_node_err(c, ABACUS_EUNSUPPORTED, "Constant without a value, value_int(s) or value_float attribute");
	}
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	return ab_set_outval(c, 0, v);
}

int ab_shape_constant_of_shape(ab_ctx *c)
{
	int rc, n;
	int64_t dims[ABACUS_MAX_RANK];
	if ((rc = get_list(c, 0, "shape", dims, &n, ABACUS_MAX_RANK)))
		return rc;
	if (n < 0)
		return ab_node_err(c, ABACUS_EGRAPH, "ConstantOfShape needs a shape input");
	const ab_attr *a = ab_node_attr(c->n, "value");
	int dtype = a && a->t ? a->t->dtype : AB_DT_FLOAT;
	if ((rc = ab_set_out(c, 0, dtype, n, dims)))
		return rc;
	const ab_shape *os = &c->shapes[c->n->out[0]];
	if (os->numel > AB_MAX_CONST_ELEMS)
		return 0;
	ab_value *v = ab_value_new(c->arena, dtype, n, dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	double fill = a && a->t && a->t->n > 0 ? ab_value_get(a->t, 0) : 0.0;
	int64_t ifill = 0;
	if (v->i && ab_d2i(fill, &ifill))
		return ab_node_err(c, ABACUS_ELIMIT, "ConstantOfShape value %g does not fit its integer type", fill);
	for (int64_t k = 0; k < v->n; k++) {
		if (v->i)
			v->i[k] = ifill;
		else
			v->f[k] = fill;
	}
	return ab_set_outval(c, 0, v);
}

int ab_shape_range(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need_val(c, 0, "start")) || (rc = ab_need_val(c, 1, "limit")) || (rc = ab_need_val(c, 2, "delta")))
		return rc;
	const ab_value *s = ab_inval(c, 0), *l = ab_inval(c, 1), *d = ab_inval(c, 2);
	if (s->n < 1 || l->n < 1 || d->n < 1)
		return ab_node_err(c, ABACUS_ESHAPE, "start, limit and delta must be scalars");
	double start = ab_value_get(s, 0), limit = ab_value_get(l, 0), delta = ab_value_get(d, 0);
	if (delta == 0)
		return ab_node_err(c, ABACUS_ESHAPE, "delta is 0");
	double cnt = (limit - start) / delta;
	if (!(cnt < (double)AB_MAX_CONST_ELEMS + 1))
		return ab_node_err(c, ABACUS_ELIMIT, "range of %g elements exceeds the folding limit", cnt);
	int64_t n = cnt <= 0 ? 0 : (int64_t)(cnt + 0.999999999);
	if (n > AB_MAX_CONST_ELEMS)
		return ab_node_err(c, ABACUS_ELIMIT, "range of %lld elements exceeds the folding limit", (long long)n);
	ab_value *v = ab_value_new(c->arena, s->dtype, 1, &n, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	for (int64_t k = 0; k < n; k++) {
		if (v->i)
			v->i[k] = s->i[0] + k * ab_value_geti(d, 0);
		else
			v->f[k] = start + (double)k * delta;
	}
	return ab_set_outval(c, 0, v);
}

int ab_shape_pad(ab_ctx *c)
{
	int rc, n;
	int64_t pads[2 * ABACUS_MAX_RANK], dims[ABACUS_MAX_RANK];
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s = ab_in(c, 0);
	if ((rc = get_list(c, 1, "pads", pads, &n, 2 * ABACUS_MAX_RANK)))
		return rc;
	if (n != 2 * s->rank)
		return ab_node_err(c, ABACUS_ESHAPE, "pads has %d entries for rank %d", n, s->rank);
	for (int i = 0; i < s->rank; i++) {
		dims[i] = s->dims[i] + pads[i] + pads[i + s->rank];
		if (dims[i] < 0)
			return ab_node_err(c, ABACUS_ESHAPE, "padding makes axis %d negative", i);
	}
	return ab_set_out(c, 0, s->dtype, s->rank, dims);
}

static int shape_resize(ab_ctx *c, int upsample)
{
	int rc;
	if ((rc = ab_need(c, 0)))
		return rc;
	const ab_shape *s = ab_in(c, 0);
	int64_t dims[ABACUS_MAX_RANK];
	int si = upsample ? 1 : 2;   /* scales input */
	const ab_value *sizes = upsample ? NULL : ab_inval(c, 3);
	if (!upsample && ab_has_in(c, 3) && ab_in(c, 3)->known && ab_in(c, 3)->numel > 0) {
		if (!sizes)
			return ab_need_val(c, 3, "sizes");
		if (sizes->n != s->rank)
			return ab_node_err(c, ABACUS_ESHAPE, "sizes has %lld entries for rank %d", (long long)sizes->n, s->rank);
		for (int i = 0; i < s->rank; i++)
			dims[i] = ab_value_geti(sizes, i);
		return ab_set_out(c, 0, s->dtype, s->rank, dims);
	}
	if ((rc = ab_need_val(c, si, "scales")))
		return rc;
	const ab_value *sc = ab_inval(c, si);
	if (sc->n != s->rank)
		return ab_node_err(c, ABACUS_ESHAPE, "scales has %lld entries for rank %d", (long long)sc->n, s->rank);
	for (int i = 0; i < s->rank; i++) {
		double d = (double)s->dims[i] * ab_value_get(sc, i);
		if (!(d >= 0 && d < AB_I64_DOUBLE_MAX))
			return ab_node_err(c, ABACUS_ESHAPE, "scale %g at axis %d is invalid", ab_value_get(sc, i), i);
		dims[i] = (int64_t)d;
	}
	return ab_set_out(c, 0, s->dtype, s->rank, dims);
}

int ab_shape_resize(ab_ctx *c)
{
	return shape_resize(c, 0);
}

/* Upsample (opset < 10): scales are input 1, and there are no sizes. */
int ab_shape_upsample(ab_ctx *c)
{
	return shape_resize(c, 1);
}

/* Output takes the shape of input `k`: ScatterND/ScatterElements (data), GatherElements (indices). */
int ab_shape_like_input1(ab_ctx *c)
{
	int rc = ab_need(c, 1);
	if (rc)
		return rc;
	const ab_shape *s = ab_in(c, 1);
	rc = ab_need(c, 0);
	return rc ? rc : ab_set_out(c, 0, ab_in(c, 0)->dtype, s->rank, s->dims);
}

static int depth_space(ab_ctx *c, int to_space)
{
	int rc = ab_need(c, 0);
	if (rc)
		return rc;
	const ab_shape *s = ab_in(c, 0);
	int64_t b = ab_attr_int(c->n, "blocksize", 1);
	if (s->rank != 4 || b <= 0)
		return ab_node_err(c, ABACUS_ESHAPE, "expects a 4-D input and a positive blocksize");
	int64_t d[4] = { s->dims[0], 0, 0, 0 };
	if (to_space) {
		if (s->dims[1] % (b * b))
			return ab_node_err(c, ABACUS_ESHAPE, "channels not divisible by blocksize²");
		d[1] = s->dims[1] / (b * b);
		if (ab_mul(s->dims[2], b, &d[2]) || ab_mul(s->dims[3], b, &d[3]))
			return ab_node_err(c, ABACUS_ESHAPE, "dims overflow");
	} else {
		if (s->dims[2] % b || s->dims[3] % b)
			return ab_node_err(c, ABACUS_ESHAPE, "spatial dims not divisible by blocksize");
		if (ab_mul(s->dims[1], b * b, &d[1]))
			return ab_node_err(c, ABACUS_ESHAPE, "dims overflow");
		d[2] = s->dims[2] / b;
		d[3] = s->dims[3] / b;
	}
	return ab_set_out(c, 0, s->dtype, 4, d);
}

int ab_shape_depth_to_space(ab_ctx *c)
{
	return depth_space(c, 1);
}

int ab_shape_space_to_depth(ab_ctx *c)
{
	return depth_space(c, 0);
}


/* RandomUniformLike/RandomNormalLike/Bernoulli take input 0's shape; RandomUniform/RandomNormal the
 * `shape` attribute. The `dtype` attribute, when present, sets the element type. */
static int shape_random(ab_ctx *c, int like)
{
	int rc;
	const ab_node *n = c->n;
	if (like) {
		if ((rc = ab_need(c, 0)))
			return rc;
		const ab_shape *s = ab_in(c, 0);
		return ab_set_out(c, 0, (int)ab_attr_int(n, "dtype", s->dtype), s->rank, s->dims);
	}
	size_t cnt;
	const int64_t *dims = ab_attr_ints(n, "shape", &cnt);
	if (!dims || cnt > ABACUS_MAX_RANK)
		return ab_node_err(c, ABACUS_EGRAPH, "needs a shape attribute of at most %d dims", ABACUS_MAX_RANK);
	return ab_set_out(c, 0, (int)ab_attr_int(n, "dtype", AB_DT_FLOAT), (int)cnt, dims);
}

int ab_shape_random(ab_ctx *c)
{
	return shape_random(c, 0);
}

int ab_shape_random_like(ab_ctx *c)
{
	return shape_random(c, 1);
}

/* OneHot: indices shape with `depth` (a constant input) inserted at `axis`. */
int ab_shape_onehot(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need_val(c, 1, "depth")) || (rc = ab_need(c, 2)))
		return rc;
	const ab_shape *ix = ab_in(c, 0);
	const ab_value *d = ab_inval(c, 1);
	if (d->n < 1)
		return ab_node_err(c, ABACUS_ESHAPE, "depth must be a scalar");
	int r = ix->rank + 1;
	if (r > ABACUS_MAX_RANK)
		return ab_node_err(c, ABACUS_ELIMIT, "output rank %d exceeds %d", r, ABACUS_MAX_RANK);
	int axis = ab_axis(ab_attr_int(c->n, "axis", -1), r);
	if (axis < 0)
		return ab_node_err(c, ABACUS_ESHAPE, "axis is out of range");
	int64_t depth = ab_value_geti(d, 0), dims[ABACUS_MAX_RANK];
	if (depth <= 0)
		return ab_node_err(c, ABACUS_ESHAPE, "depth must be positive, got %lld", (long long)depth);
	for (int i = 0, j = 0; i < r; i++)
		dims[i] = i == axis ? depth : ix->dims[j++];
	return ab_set_out(c, 0, ab_in(c, 2)->dtype, r, dims);
}

/* GatherND: indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:]. */
int ab_shape_gather_nd(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need(c, 1)))
		return rc;
	const ab_shape *d = ab_in(c, 0), *ix = ab_in(c, 1);
	int64_t b = ab_attr_int(c->n, "batch_dims", 0);
	if (ix->rank < 1 || b < 0 || b >= ix->rank)
		return ab_node_err(c, ABACUS_ESHAPE, "invalid indices rank %d or batch_dims %lld", ix->rank, (long long)b);
	int64_t last = ix->dims[ix->rank - 1];
	if (last < 1 || b + last > d->rank)
		return ab_node_err(c, ABACUS_ESHAPE, "indices address %lld dims of a rank-%d input", (long long)last, d->rank);
	int r = ix->rank - 1 + d->rank - (int)(b + last);
	if (r > ABACUS_MAX_RANK)
		return ab_node_err(c, ABACUS_ELIMIT, "output rank %d exceeds %d", r, ABACUS_MAX_RANK);
	int64_t dims[ABACUS_MAX_RANK];
	int j = 0;
	for (int i = 0; i < ix->rank - 1; i++)
		dims[j++] = ix->dims[i];
	for (int i = (int)(b + last); i < d->rank; i++)
		dims[j++] = d->dims[i];
	return ab_set_out(c, 0, d->dtype, r, dims);
}
