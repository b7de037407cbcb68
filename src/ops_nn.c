/*
 * ops_nn.c — the compute-heavy ops: convolution, pooling, Gemm/MatMul/Einsum, normalisation, softmax,
 * dropout, reductions and recurrent layers. Each has a shape rule and a cost rule.
 *
 * FLOP convention: a multiply-add is 2 FLOPs. Backward FLOPs count the gradient w.r.t. every input that
 * requires grad (activations derived from parameters, and parameters themselves); the graph input needs
 * none, so a network's first convolution has no input-gradient cost, as in PyTorch.
 * Saved-for-backward sets follow PyTorch's autograd formulas (derivatives.yaml): convolution and matmul
 * save their inputs, ReLU and sigmoid their output, max pooling its input and int64 indices, dropout a
 * mask of its input's dtype (the CPU path), batch norm its input and per-channel statistics.
 */
#include <math.h>
#include <string.h>

#include "runtime.h"

static int64_t bytes_of(const ab_shape *s)
{
	int64_t b;
	if (!s || !s->known || ab_mul(s->numel, ab_dtype_size(s->dtype) ? ab_dtype_size(s->dtype) : 4, &b))
		return 0;
	return b;
}

static const ab_shape *out0(const ab_ctx *c)
{
	return c->n->n_out > 0 && c->n->out[0] >= 0 ? &c->shapes[c->n->out[0]] : NULL;
}

/* Default byte traffic: every input read once, every output written once. */
static void io_bytes(ab_ctx *c, ab_cost *k)
{
	for (int i = 0; i < c->n->n_in; i++)
		ab_sat_add(&k->bytes_read, bytes_of(ab_in(c, i)));
	for (int o = 0; o < c->n->n_out; o++)
		if (c->n->out[o] >= 0)
			ab_sat_add(&k->bytes_written, bytes_of(&c->shapes[c->n->out[o]]));
}

#define OVF(c) ab_node_err((c), ABACUS_ESHAPE, "FLOP count overflows 64 bits")

/* ---- convolution and pooling ---- */

/* Output spatial size for conv/pool along one axis. */
static int window_out(ab_ctx *c, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int ceil_mode,
                      const char *auto_pad, int64_t *out)
{
	if (k <= 0 || s <= 0 || d <= 0)
		return ab_node_err(c, ABACUS_ESHAPE, "kernel, stride and dilation must be positive");
	if (auto_pad && (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER"))) {
		*out = (in + s - 1) / s;
		return 0;
	}
	if (auto_pad && !strcmp(auto_pad, "VALID"))
		pb = pe = 0;
	int64_t span = d * (k - 1) + 1;
	int64_t num = in + pb + pe - span;
	if (num < 0)
		return ab_node_err(c, ABACUS_ESHAPE, "the window (%lld) is larger than the padded input (%lld)", (long long)span,
		                   (long long)(in + pb + pe));
	int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
	/* With ceil_mode the last window must start inside the input or left padding (PyTorch rule). */
	if (ceil_mode && (o - 1) * s >= in + pb)
		o--;
	*out = o;
	return 0;
}

typedef struct win {
	int nsp;                          /* spatial dims */
	int64_t k[ABACUS_MAX_RANK], s[ABACUS_MAX_RANK], d[ABACUS_MAX_RANK], pb[ABACUS_MAX_RANK], pe[ABACUS_MAX_RANK];
} win;

static int read_window(ab_ctx *c, int nsp, const int64_t *kernel_from_weight, win *w)
{
	size_t nk, ns, nd, np;
	const int64_t *k = ab_attr_ints(c->n, "kernel_shape", &nk);
	const int64_t *s = ab_attr_ints(c->n, "strides", &ns);
	const int64_t *d = ab_attr_ints(c->n, "dilations", &nd);
	const int64_t *p = ab_attr_ints(c->n, "pads", &np);
	w->nsp = nsp;
	if ((k && (int)nk != nsp) || (s && (int)ns != nsp) || (d && (int)nd != nsp) || (p && (int)np != 2 * nsp))
		return ab_node_err(c, ABACUS_ESHAPE, "kernel_shape/strides/dilations/pads do not match %d spatial dims", nsp);
	if (!k && !kernel_from_weight)
		return ab_node_err(c, ABACUS_EGRAPH, "kernel_shape is required");
	for (int i = 0; i < nsp; i++) {
		w->k[i] = k ? k[i] : kernel_from_weight[i];
		w->s[i] = s ? s[i] : 1;
		w->d[i] = d ? d[i] : 1;
		w->pb[i] = p ? p[i] : 0;
		w->pe[i] = p ? p[nsp + i] : 0;
		if (w->pb[i] < 0 || w->pe[i] < 0)
			return ab_node_err(c, ABACUS_ESHAPE, "negative padding");
	}
	return 0;
}

int ab_shape_conv(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need(c, 1)))
		return rc;
	const ab_shape *x = ab_in(c, 0), *wt = ab_in(c, 1);
	if (x->rank < 3 || wt->rank != x->rank)
		return ab_node_err(c, ABACUS_ESHAPE, "input rank %d and weight rank %d do not fit a convolution", x->rank,
		                   wt->rank);
	int64_t g = ab_attr_int(c->n, "group", 1);
	if (g <= 0 || x->dims[1] % g || wt->dims[1] * g != x->dims[1])
		return ab_node_err(c, ABACUS_ESHAPE, "input has %lld channels but weight expects %lld × group %lld",
		                   (long long)x->dims[1], (long long)wt->dims[1], (long long)g);
	win w;
	if ((rc = read_window(c, x->rank - 2, wt->dims + 2, &w)))
		return rc;
	int64_t dims[ABACUS_MAX_RANK] = { x->dims[0], wt->dims[0] };
	const char *ap = ab_attr_str(c->n, "auto_pad", "NOTSET");
	for (int i = 0; i < w.nsp; i++)
		if ((rc = window_out(c, x->dims[2 + i], w.k[i], w.s[i], w.d[i], w.pb[i], w.pe[i], 0, ap, &dims[2 + i])))
			return rc;
	return ab_set_out(c, 0, x->dtype, x->rank, dims);
}

int ab_shape_conv_transpose(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need(c, 1)))
		return rc;
	const ab_shape *x = ab_in(c, 0), *wt = ab_in(c, 1);
	if (x->rank < 3 || wt->rank != x->rank || wt->dims[0] != x->dims[1])
		return ab_node_err(c, ABACUS_ESHAPE, "input and weight do not fit a transposed convolution");
	int64_t g = ab_attr_int(c->n, "group", 1);
	if (g <= 0)
		return ab_node_err(c, ABACUS_ESHAPE, "group must be positive");
	win w;
	if ((rc = read_window(c, x->rank - 2, wt->dims + 2, &w)))
		return rc;
	size_t nop, nos;
	const int64_t *op = ab_attr_ints(c->n, "output_padding", &nop);
	const int64_t *os = ab_attr_ints(c->n, "output_shape", &nos);
	int64_t dims[ABACUS_MAX_RANK] = { x->dims[0], 0 };
	if (ab_mul(wt->dims[1], g, &dims[1]))
		return OVF(c);
	for (int i = 0; i < w.nsp; i++) {
		if (os && (int)nos == w.nsp) {
			dims[2 + i] = os[i];
			continue;
		}
		int64_t o = w.s[i] * (x->dims[2 + i] - 1) + (op && (int)nop == w.nsp ? op[i] : 0) + (w.k[i] - 1) * w.d[i] + 1 -
		            w.pb[i] - w.pe[i];
		if (o <= 0)
			return ab_node_err(c, ABACUS_ESHAPE, "output size %lld at spatial axis %d is not positive", (long long)o, i);
		dims[2 + i] = o;
	}
	return ab_set_out(c, 0, x->dtype, x->rank, dims);
}

/* Input k is made by a permutation of axes that moves any (a Transpose that is no identity), which PyTorch
 * runs as a strided view: a Conv1d over an embedding's x.transpose(1, 2) reads it so. */
static int permuted_view(const ab_ctx *c, int k)
{
	if (!ab_has_in(c, k) || c->g->tensors[c->n->in[k]].producer < 0)
		return 0;
	const ab_node *p = &c->g->nodes[c->g->tensors[c->n->in[k]].producer];
	size_t np = 0;
	const int64_t *perm = ab_attr_ints(p, "perm", &np);
	if (!(ab_node_flags(p) & AB_OP_PERMUTE) || !perm)
		return 0;
	for (size_t i = 0; i < np; i++)
		if (perm[i] != (int64_t)i)
			return 1;
	return 0;
}

/* Convolution: MACs = N × Cout × out_spatial × (Cin/group) × kernel (ConvTranspose: over the input). */
int ab_cost_conv(ab_ctx *c, ab_cost *k)
{
	const ab_shape *x = ab_in(c, 0), *wt = ab_in(c, 1), *y = out0(c);
	int64_t macs = 1, ksz = 1;
	if (wt->rank > 2 && ab_numel(wt->dims + 2, wt->rank - 2, &ksz))
		return OVF(c);
	int transpose = (ab_node_flags(c->n) & AB_OP_TRANSPOSED) != 0;
	/* Per output (conv) or input (transpose) element: weight->dims[1] × kernel MACs. */
	const ab_shape *base = transpose ? x : y;
	if (ab_mul(base->numel, wt->dims[1], &macs) || ab_mul(macs, ksz, &macs))
		return OVF(c);
	int64_t mm;
	if (ab_mul(macs, 2, &mm))
		return OVF(c);
	k->fwd = mm;
	if (ab_has_in(c, 2) && ab_add(k->fwd, y->numel, &k->fwd))
		return OVF(c);
	k->bwd = 0;
	if (ab_in_rg(c, 0) && ab_add(k->bwd, mm, &k->bwd))
		return OVF(c);
	if (ab_in_rg(c, 1) && ab_add(k->bwd, mm, &k->bwd))
		return OVF(c);
	if (ab_in_rg(c, 2) && ab_add(k->bwd, y->numel, &k->bwd))
		return OVF(c);
	k->in_mask = 1; /* the input (weights are parameters, always live) */
	io_bytes(c, k);
	/* Which kernel runs it, and what that kernel holds, is the runtime's (runtime.h). */
	ab_conv_desc cv = { .x = x, .w = wt, .y = y, .nsp = x->rank - 2, .group = ab_attr_int(c->n, "group", 1),
	                    .ksz = ksz, .transpose = transpose, .x_grad = ab_in_rg(c, 0), .w_grad = ab_in_rg(c, 1),
	                    .x_channels_last = ab_in_cl(c, 0), .x_permuted = permuted_view(c, 0) && !ab_in_cl(c, 0) };
	win w;
	int rc = read_window(c, cv.nsp, wt->dims + 2, &w);
	if (rc)
		return rc;
	memcpy(cv.k, w.k, sizeof cv.k);
	memcpy(cv.s, w.s, sizeof cv.s);
	memcpy(cv.d, w.d, sizeof cv.d);
	for (int i = 0; i < cv.nsp; i++)
		cv.padded |= w.pb[i] || w.pe[i];
	cv.threads = c->threads; /* at least 1: abacus_analyze makes it so */
	cv.no_avx = c->no_avx;
	c->rt->conv_kernel(&cv, k);
	return 0;
}

int ab_shape_pool(ab_ctx *c)
{
	int rc = ab_need(c, 0);
	if (rc)
		return rc;
	const ab_shape *x = ab_in(c, 0);
	if (x->rank < 3)
		return ab_node_err(c, ABACUS_ESHAPE, "pooling needs an input of rank ≥ 3, got %d", x->rank);
	int64_t dims[ABACUS_MAX_RANK] = { x->dims[0], x->dims[1] };
	if (ab_node_flags(c->n) & AB_OP_GLOBAL) {
		for (int i = 2; i < x->rank; i++)
			dims[i] = 1;
		return ab_set_out(c, 0, x->dtype, x->rank, dims);
	}
	win w;
	if ((rc = read_window(c, x->rank - 2, NULL, &w)))
		return rc;
	int ceil_mode = (int)ab_attr_int(c->n, "ceil_mode", 0);
	const char *ap = ab_attr_str(c->n, "auto_pad", "NOTSET");
	for (int i = 0; i < w.nsp; i++)
		if ((rc = window_out(c, x->dims[2 + i], w.k[i], w.s[i], w.d[i], w.pb[i], w.pe[i], ceil_mode, ap, &dims[2 + i])))
			return rc;
	if ((rc = ab_set_out(c, 0, x->dtype, x->rank, dims)))
		return rc;
	return ab_set_out(c, 1, AB_DT_INT64, x->rank, dims);
}

int ab_cost_pool(ab_ctx *c, ab_cost *k)
{
	const ab_shape *x = ab_in(c, 0), *y = out0(c);
	int global = (ab_node_flags(c->n) & AB_OP_GLOBAL) != 0;
	int maxp = (ab_node_flags(c->n) & AB_OP_ARGMAX) != 0;
	int64_t win_elems = 1;
	if (!global) {
		size_t nk;
		const int64_t *ks = ab_attr_ints(c->n, "kernel_shape", &nk);
		for (size_t i = 0; ks && i < nk; i++)
			win_elems *= ks[i];
	}
	if (global) {
		k->fwd = x->numel;
	} else if (ab_mul(y->numel, win_elems, &k->fwd)) {
		return OVF(c);
	}
	k->bwd = ab_in_rg(c, 0) ? (maxp ? x->numel + y->numel : x->numel) : 0;
	k->in_mask = 1;
	/* PyTorch's max pooling keeps int64 argmax indices for backward. */
	if (maxp && !global && ab_mul(y->numel, 8, &k->extra_bytes))
		return OVF(c);
	io_bytes(c, k);
	return 0;
}

/* ---- matrix products ---- */

int ab_shape_gemm(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need(c, 1)))
		return rc;
	const ab_shape *a = ab_in(c, 0), *b = ab_in(c, 1);
	if (a->rank != 2 || b->rank != 2)
		return ab_node_err(c, ABACUS_ESHAPE, "Gemm needs 2-D inputs, got ranks %d and %d", a->rank, b->rank);
	int ta = ab_attr_int(c->n, "transA", 0) != 0, tb = ab_attr_int(c->n, "transB", 0) != 0;
	int64_t m = a->dims[ta], ka = a->dims[!ta], kb = b->dims[tb], n = b->dims[!tb];
	if (ka != kb)
		return ab_node_err(c, ABACUS_ESHAPE, "inner dims differ: %lld vs %lld", (long long)ka, (long long)kb);
	int64_t dims[2] = { m, n };
	return ab_set_out(c, 0, a->dtype, 2, dims);
}

int ab_cost_gemm(ab_ctx *c, ab_cost *k)
{
	const ab_shape *a = ab_in(c, 0), *y = out0(c);
	int ta = ab_attr_int(c->n, "transA", 0) != 0;
	int64_t mm;
	if (ab_mul(y->numel, a->dims[!ta], &mm) || ab_mul(mm, 2, &mm))
		return OVF(c);
	k->fwd = mm + (ab_has_in(c, 2) ? y->numel : 0);
	k->bwd = (ab_in_rg(c, 0) ? mm : 0) + (ab_in_rg(c, 1) ? mm : 0) + (ab_in_rg(c, 2) ? y->numel : 0);
	k->in_mask = ab_product_in_mask(c); /* addmm keeps neither the bias nor an operand no gradient needs */
	io_bytes(c, k);
	return 0;
}

int ab_shape_matmul(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need(c, 1)))
		return rc;
	ab_shape a = *ab_in(c, 0), b = *ab_in(c, 1);
	if (a.rank < 1 || b.rank < 1)
		return ab_node_err(c, ABACUS_ESHAPE, "MatMul inputs must have rank ≥ 1");
	int va = a.rank == 1, vb = b.rank == 1;
	if (va) { a.rank = 2; a.dims[1] = a.dims[0]; a.dims[0] = 1; }
	if (vb) { b.rank = 2; b.dims[1] = 1; }
	if (a.dims[a.rank - 1] != b.dims[b.rank - 2])
		return ab_node_err(c, ABACUS_ESHAPE, "inner dims differ: %lld vs %lld", (long long)a.dims[a.rank - 1],
		                   (long long)b.dims[b.rank - 2]);
	ab_shape ba = a, bb = b;
	ba.rank -= 2;
	bb.rank -= 2;
	int r;
	int64_t dims[ABACUS_MAX_RANK];
	if ((rc = ab_broadcast_dims(c, &ba, &bb, &r, dims)))
		return rc;
	if (!va)
		dims[r++] = a.dims[a.rank - 2];
	if (!vb)
		dims[r++] = b.dims[b.rank - 1];
	return ab_set_out(c, 0, a.dtype, r, dims);
}

/* A batched product of `batch` matrices of m·k·n `mkn` (ab_cost.bmm_items, bmm_mkn): its forward's product and
 * each operand gradient's, a batched product of the same count. */
static void bmm_geometry(ab_ctx *c, ab_cost *k, int64_t batch, int64_t mkn)
{
	k->bmm_items = batch;
	ab_sat_mul(&k->bmm_items, 1 + (ab_in_rg(c, 0) != 0) + (ab_in_rg(c, 1) != 0));
	k->bmm_mkn = mkn;
}

int ab_cost_matmul(ab_ctx *c, ab_cost *k)
{
	const ab_shape *a = ab_in(c, 0), *y = out0(c);
	int64_t mm;
	if (ab_mul(y->numel, a->dims[a->rank - 1], &mm) || ab_mul(mm, 2, &mm))
		return OVF(c);
	k->fwd = mm;
	k->bwd = (ab_in_rg(c, 0) ? mm : 0) + (ab_in_rg(c, 1) ? mm : 0);
	/* A constant or buffer operand (dense_gnn's adjacency, A·H) needs no gradient, so H is not kept: a
	 * [B, 256, 96] H per layer, 393,216 B at batch 4, that put dense_gnn L256 batch 4 +8.9 % high. */
	k->in_mask = ab_product_in_mask(c);
	/* A right operand with batch axes makes torch.matmul a bmm over the broadcast batch (a left operand's
	 * batch over a 2-D right one is folded into one matrix product: a Linear). */
	const ab_shape *b = ab_in(c, 1);
	if (b->rank >= 3) {
		int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, n = b->dims[b->rank - 1], mn, mkn;
		if (ab_mul(m, n, &mn) || ab_mul(mn, a->dims[a->rank - 1], &mkn))
			return OVF(c);
		bmm_geometry(c, k, mn > 0 ? y->numel / mn : 0, mkn);
	}
	io_bytes(c, k);
	return 0;
}

/* Einsum: explicit equations ("bij,bjk->bik") and implicit ones (output = letters seen once, sorted). */
static int einsum_parse(ab_ctx *c, int64_t letter_dim[128], char *out_letters, int *n_out)
{
	const char *eq = ab_attr_str(c->n, "equation", NULL);
	if (!eq)
		return ab_node_err(c, ABACUS_EGRAPH, "Einsum needs an equation");
	int count[128] = { 0 };
	for (int i = 0; i < 128; i++)
		letter_dim[i] = -1;
	const char *p = eq;
	for (int k = 0; k < c->n->n_in; k++) {
		int rc = ab_need(c, k);
		if (rc)
			return rc;
		const ab_shape *s = ab_in(c, k);
		int axis = 0;
		while (*p == ' ')
			p++;
		for (; *p && *p != ',' && *p != '-'; p++) {
			if (*p == ' ')
				continue;
			if (*p == '.')
				return ab_node_err(c, ABACUS_EUNSUPPORTED, "Einsum ellipsis is not supported");
			unsigned char ch = (unsigned char)*p;
			if (ch >= 128 || axis >= s->rank)
				return ab_node_err(c, ABACUS_ESHAPE, "equation '%s' does not match input %d of rank %d", eq, k, s->rank);
			if (letter_dim[ch] >= 0 && letter_dim[ch] != s->dims[axis] && s->dims[axis] != 1 && letter_dim[ch] != 1)
				return ab_node_err(c, ABACUS_ESHAPE, "index '%c' has sizes %lld and %lld", ch, (long long)letter_dim[ch],
				                   (long long)s->dims[axis]);
			if (letter_dim[ch] < s->dims[axis])
				letter_dim[ch] = s->dims[axis];
			count[ch]++;
			axis++;
		}
		if (axis != s->rank)
			return ab_node_err(c, ABACUS_ESHAPE, "equation '%s' names %d axes for input %d of rank %d", eq, axis, k,
			                   s->rank);
		if (*p == ',')
			p++;
	}
	*n_out = 0;
	const char *arrow = strstr(eq, "->");
	if (arrow) {
		for (p = arrow + 2; *p; p++) {
			if (*p == ' ')
				continue;
			unsigned char ch = (unsigned char)*p;
			if (ch >= 128 || letter_dim[ch] < 0 || *n_out >= ABACUS_MAX_RANK)
				return ab_node_err(c, ABACUS_ESHAPE, "output index '%c' of '%s' is not an input index", *p, eq);
			out_letters[(*n_out)++] = (char)ch;
		}
	} else {
		for (int ch = 0; ch < 128; ch++)
			if (count[ch] == 1 && *n_out < ABACUS_MAX_RANK)
				out_letters[(*n_out)++] = (char)ch;
	}
	return 0;
}

int ab_shape_einsum(ab_ctx *c)
{
	int64_t ld[128];
	char letters[ABACUS_MAX_RANK];
	int n, rc;
	if ((rc = einsum_parse(c, ld, letters, &n)))
		return rc;
	int64_t dims[ABACUS_MAX_RANK];
	for (int i = 0; i < n; i++)
		dims[i] = ld[(unsigned char)letters[i]];
	return ab_set_out(c, 0, ab_in(c, 0)->dtype, n, dims);
}

/* The labels of input k of an Einsum's equation (no spaces), or 0 when it has none. */
static int einsum_labels(const char *eq, int k, char *out, int cap)
{
	int n = 0;
	for (const char *p = eq; *p && *p != '-'; p++) {
		if (*p == ',')
			k--;
		else if (k == 0 && *p != ' ' && n < cap)
			out[n++] = *p;
		if (k < 0)
			break;
	}
	return n;
}

static int64_t label_dim(const char *lab, int n, const ab_shape *s, char ch)
{
	for (int i = 0; i < n && i < s->rank; i++)
		if (lab[i] == ch)
			return s->dims[i];
	return 1;
}

/* Whether PyTorch's reshape of an operand (labels `lab`) permuted into the groups of axes `want` (split
 * at the offsets `cut`) is a view: within each group, the operand's non-trivial axes must follow each
 * other in its own order, so that they merge into one axis; groups themselves may sit in any order
 * (bmm reads a transposed or batch-strided matrix as it is). */
static int groups_merge(const char *lab, int n, const ab_shape *s, const char *want, const int *cut, int ngroups)
{
	for (int gi = 0; gi < ngroups; gi++) {
		int prev = -1;
		for (int j = cut[gi]; j < cut[gi + 1]; j++) {
			int pos = -1;
			for (int i = 0; i < n && i < s->rank; i++)
				if (lab[i] == want[j] && s->dims[i] != 1)
					pos = i;
			if (pos < 0)
				continue;
			/* The next non-trivial axis after the previous one must be this one. */
			if (prev >= 0) {
				int next = prev + 1;
				while (next < n && next < s->rank && s->dims[next] == 1)
					next++;
				if (next != pos)
					return 0;
			}
			prev = pos;
		}
	}
	return 1;
}

/* Whether an operand's non-trivial axes (labels `lab`) already lie in the order `want` (n labels). */
static int same_order(const char *lab, int n, const ab_shape *s, const char *want, int nwant)
{
	int j = 0;
	for (int i = 0; i < n && i < s->rank; i++) {
		if (s->dims[i] == 1)
			continue;
		while (j < nwant && label_dim(lab, n, s, want[j]) == 1)
			j++;
		if (j >= nwant || want[j] != lab[i])
			return 0;
		j++;
	}
	return 1;
}

/* PyTorch 1.13 contracts two operands as one bmm (sumproduct_pair), whose geometry this records (bmm_geometry)
 * with the copies it makes: the left operand permuted to [batch, left-only, summed] axes and reshaped to
 * three, the right to [batch, summed, right-only], the
 * output viewed from [batch, left-only, right-only] and permuted to the equation's order. A reshape
 * that must merge axes not adjacent in the operand is a copy, and bmm keeps the copy for the other
 * operand's gradient: an MoE's "bld,edh->bleh" copies the [E, D, H] expert weights to [D, E·H] (kept
 * until backward); "bleh,ehd->bled" reads its [B, L, E, H] input as [E, BL, H] batch-strided, no copy
 * (measured 2026-12-05 with the allocator tracker, B 1 and 4: counting a copy there put the simulation
 * 16 % high). An output whose groups are not adjacent in the equation's order is likewise copied by
 * the backward, its gradient reshaped to [batch, ·, ·]. */
static void einsum_pair_bmm(ab_ctx *c, const char *out, int n_out, ab_cost *k)
{
	const char *eq = ab_attr_str(c->n, "equation", "");
	char la[ABACUS_MAX_RANK], lb[ABACUS_MAX_RANK], lw[2][3 * ABACUS_MAX_RANK], lo[3 * ABACUS_MAX_RANK];
	int na = einsum_labels(eq, 0, la, ABACUS_MAX_RANK), nb = einsum_labels(eq, 1, lb, ABACUS_MAX_RANK);
	const ab_shape *A = ab_in(c, 0), *B = ab_in(c, 1), *y = out0(c);
	int nsum = 0;
	char lro[ABACUS_MAX_RANK], lonly[ABACUS_MAX_RANK], ronly[ABACUS_MAX_RANK], sum[2 * ABACUS_MAX_RANK];
	int nlro = 0, nlo = 0, nro = 0;
	for (int i = 0; i < n_out; i++) {
		int sl = label_dim(la, na, A, out[i]) > 1, sr = label_dim(lb, nb, B, out[i]) > 1;
		if (sl && sr)
			lro[nlro++] = out[i];
		else if (sl)
			lonly[nlo++] = out[i];
		else if (sr)
			ronly[nro++] = out[i];
	}
	for (int ch = 1; ch < 128; ch++) /* summed labels in label order, as einsum aligns them */
		if (!memchr(out, ch, (size_t)n_out) && label_dim(la, na, A, (char)ch) > 1 && label_dim(lb, nb, B, (char)ch) > 1)
			sum[nsum++] = (char)ch;
	/* The bmm's geometry: [batch] matrices of [left-only, summed] × [summed, right-only]. */
	int64_t dim[4] = { 1, 1, 1, 1 }; /* batch, m, k, n */
	for (int i = 0; i < nlro; i++) {
		int64_t l = label_dim(la, na, A, lro[i]), r = label_dim(lb, nb, B, lro[i]);
		ab_sat_mul(&dim[0], l > r ? l : r);
	}
	for (int i = 0; i < nlo; i++)
		ab_sat_mul(&dim[1], label_dim(la, na, A, lonly[i]));
	for (int i = 0; i < nsum; i++)
		ab_sat_mul(&dim[2], label_dim(la, na, A, sum[i]));
	for (int i = 0; i < nro; i++)
		ab_sat_mul(&dim[3], label_dim(lb, nb, B, ronly[i]));
	ab_sat_mul(&dim[1], dim[2]);
	ab_sat_mul(&dim[1], dim[3]);
	bmm_geometry(c, k, dim[0], dim[1]);
	if (!nsum)
		return;
	memcpy(lw[0], lro, (size_t)nlro);
	memcpy(lw[0] + nlro, lonly, (size_t)nlo);
	memcpy(lw[0] + nlro + nlo, sum, (size_t)nsum);
	memcpy(lw[1], lro, (size_t)nlro);
	memcpy(lw[1] + nlro, sum, (size_t)nsum);
	memcpy(lw[1] + nlro + nsum, ronly, (size_t)nro);
	memcpy(lo, lro, (size_t)nlro);
	memcpy(lo + nlro, lonly, (size_t)nlo);
	memcpy(lo + nlro + nlo, ronly, (size_t)nro);
	const int cuts[3][4] = { { 0, nlro, nlro + nlo, nlro + nlo + nsum }, { 0, nlro, nlro + nsum, nlro + nsum + nro },
		                 { 0, nlro, nlro + nlo, nlro + nlo + nro } };
	const ab_shape *ops[2] = { A, B };
	const char *labs[2] = { la, lb };
	int nlab[2] = { na, nb };
	for (int i = 0; i < 2; i++) {
		if (groups_merge(labs[i], nlab[i], ops[i], lw[i], cuts[i], 3)) {
			/* Read as it is, batch-strided or transposed: its gradient, bmm's row-major
			 * [batch, ·, ·] result viewed back in the operand's order, is strided. */
			if (!same_order(labs[i], nlab[i], ops[i], lw[i], cuts[i][3]))
				k->grad_strided |= 1u << i;
			continue;
		}
		int64_t b = bytes_of(ops[i]);
		k->in_mask &= ~(1u << i);
		if (ab_in_rg(c, 1 - i))
			ab_sat_add(&k->extra_bytes, b); /* kept for the other operand's gradient */
		else
			ab_sat_add(&k->fwd_workspace, b);
	}
	if (!groups_merge(out, n_out, y, lo, cuts[2], 3))
		k->bwd_workspace = bytes_of(y);
}

int ab_cost_einsum(ab_ctx *c, ab_cost *k)
{
	int64_t ld[128], prod = 1;
	char letters[ABACUS_MAX_RANK];
	int n, rc;
	if ((rc = einsum_parse(c, ld, letters, &n)))
		return rc;
	for (int ch = 0; ch < 128; ch++)
		if (ld[ch] > 0 && ab_mul(prod, ld[ch], &prod))
			return OVF(c);
	/* Every combination of indices is one multiply-add (one multiply for a single operand). */
	int64_t f = c->n->n_in > 1 ? prod * 2 : prod;
	k->fwd = f;
	for (int i = 0; i < c->n->n_in; i++)
		if (ab_in_rg(c, i))
			k->bwd += f;
	k->in_mask = c->n->n_in == 2 ? ab_product_in_mask(c) : (1u << (c->n->n_in < 16 ? c->n->n_in : 16)) - 1;
	/* Nothing summed ("blhd,blhe->blhde"): PyTorch's einsum multiplies the broadcast operands, and its
	 * backward is a broadcasting product's (ab_broadcast_product_workspace). */
	if (prod == out0(c)->numel)
		k->bwd_workspace = ab_broadcast_product_workspace(c, 0);
	else if (c->n->n_in == 2)
		einsum_pair_bmm(c, letters, n, k);
	io_bytes(c, k);
	return 0;
}

/* ---- normalisation, softmax, dropout ---- */

int ab_shape_batchnorm(ab_ctx *c)
{
	int rc = ab_shape_unary(c);
	if (rc)
		return rc;
	const ab_shape *x = ab_in(c, 0);
	int64_t ch = x->rank > 1 ? x->dims[1] : 1;
	for (int o = 1; o < c->n->n_out; o++)
		if ((rc = ab_set_out(c, o, x->dtype, 1, &ch)))
			return rc;
	return 0;
}

int ab_shape_layernorm(ab_ctx *c)
{
	int rc = ab_shape_unary(c);
	if (rc)
		return rc;
	const ab_shape *x = ab_in(c, 0);
	int axis = ab_axis(ab_attr_int(c->n, "axis", -1), x->rank);
	if (axis < 0)
		return ab_node_err(c, ABACUS_ESHAPE, "axis is out of range for rank %d", x->rank);
	int64_t dims[ABACUS_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		dims[i] = i < axis ? x->dims[i] : 1;
	for (int o = 1; o < c->n->n_out; o++)
		if ((rc = ab_set_out(c, o, AB_DT_FLOAT, x->rank, dims)))
			return rc;
	return 0;
}

/* Batch/layer/group/instance norm in training: statistics (3 FLOPs/element), normalise (2), affine (2);
 * backward about 9 per element plus the parameter reductions. Saves the input and per-group stats. */
int ab_cost_norm(ab_ctx *c, ab_cost *k)
{
	const ab_shape *x = ab_in(c, 0);
	if (ab_mul(x->numel, 7, &k->fwd) || ab_mul(x->numel, ab_in_rg(c, 0) ? 9 : 2, &k->bwd))
		return OVF(c);
	k->in_mask = 1;
	int64_t groups = 1;
	const ab_opdef *def = ab_node_def(c->n);
	int bn = def && def->cat == ABACUS_CAT_BATCHNORM;
	if (bn)
		groups = x->rank > 1 ? x->dims[1] : 1;
	else
		groups = x->rank > 0 ? x->numel / (x->dims[x->rank - 1] ? x->dims[x->rank - 1] : 1) : 1;
	k->extra_bytes = 2 * 4 * groups;
	/* The backward's transient buffers and the unvectorised small maps are the runtime's (runtime.h). */
	if (bn && ab_in_rg(c, 0) && ab_mul(bytes_of(x), c->rt->bn_backward_buffers, &k->bwd_workspace))
		return OVF(c);
	if (bn && groups > 0 && x->rank > 2) {
		int64_t rows = x->dims[0] * groups, map = rows > 0 ? x->numel / rows : 0;
		if (map >= c->rt->bn_scalar_map_min && map <= c->rt->bn_scalar_map_max)
			k->norm_rows = rows;
	}
	io_bytes(c, k);
	return 0;
}

int ab_shape_dropout(ab_ctx *c)
{
	int rc = ab_shape_unary(c);
	if (rc)
		return rc;
	const ab_shape *x = ab_in(c, 0);
	return ab_set_out(c, 1, AB_DT_BOOL, x->rank, x->dims);
}

int ab_cost_dropout(ab_ctx *c, ab_cost *k)
{
	const ab_shape *x = ab_in(c, 0);
	const ab_value *ratio = ab_inval(c, 1), *training = ab_inval(c, 2);
	/* Without a training_mode input ONNX means inference; with one whose value is not known, training.
	 * PyTorch returns the input itself, no kernel and no mask, when it is not training or p is 0 (ViT
	 * and Swin export their p = 0 dropouts). */
	int has_mode = c->n->n_in > 2 && c->n->in[2] >= 0;
	int train = has_mode && !(training && training->n == 1 && ab_value_get(training, 0) == 0);
	if (!train || (ratio && ratio->n == 1 && ab_value_get(ratio, 0) == 0)) {
		k->identity = 1;
		return 0;
	}
	/* On the CPU, PyTorch's dropout is not the fused kernel (CUDA only) but
	 * noise = empty_like(x).bernoulli_(1 - p); noise.div_(1 - p); y = x * noise, and autograd keeps `noise`:
	 * a mask of x's dtype, not the graph's bool output 1 (which nothing reads). */
	if (ab_mul(x->numel, 3, &k->fwd))
		return OVF(c);
	k->bwd = ab_in_rg(c, 0) ? x->numel : 0;
	k->extra_bytes = bytes_of(x);
	/* bernoulli_ writes the noise, div_ reads and writes it, the multiply reads x and the noise. */
	if (ab_mul(k->extra_bytes, 3, &k->bytes_read))
		return ab_node_err(c, ABACUS_ESHAPE, "byte count overflows 64 bits");
	k->bytes_written = k->bytes_read;
	return 0;
}

/* ---- reductions, arg reductions, top-k ---- */

int ab_shape_reduce(ab_ctx *c)
{
	int rc = ab_need(c, 0);
	if (rc)
		return rc;
	const ab_shape *x = ab_in(c, 0);
	int64_t axes[ABACUS_MAX_RANK];
	int n = -1;
	if (ab_has_in(c, 1)) {
		if ((rc = ab_need_val(c, 1, "axes")))
			return rc;
		const ab_value *v = ab_inval(c, 1);
		if (v->n > ABACUS_MAX_RANK)
			return ab_node_err(c, ABACUS_ESHAPE, "too many axes");
		for (int64_t i = 0; i < v->n; i++)
			axes[i] = ab_value_geti(v, i);
		n = (int)v->n;
	} else {
		size_t cnt;
		const int64_t *a = ab_attr_ints(c->n, "axes", &cnt);
		if (a) {
			if (cnt > ABACUS_MAX_RANK)
				return ab_node_err(c, ABACUS_ESHAPE, "too many axes");
			memcpy(axes, a, cnt * sizeof *a);
			n = (int)cnt;
		}
		if (ab_node_attr(c->n, "axis")) { /* ArgMax/ArgMin */
			axes[0] = ab_attr_int(c->n, "axis", 0);
			n = 1;
		}
	}
	int keep = (int)ab_attr_int(c->n, "keepdims", 1);
	int noop = (int)ab_attr_int(c->n, "noop_with_empty_axes", 0);
	int red[ABACUS_MAX_RANK] = { 0 };
	if (n <= 0 && !noop) {
		for (int i = 0; i < x->rank; i++)
			red[i] = 1;
	}
	for (int i = 0; i < n; i++) {
		int a = ab_axis(axes[i], x->rank);
		if (a < 0)
			return ab_node_err(c, ABACUS_ESHAPE, "axis %lld is out of range for rank %d", (long long)axes[i], x->rank);
		red[a] = 1;
	}
	int64_t dims[ABACUS_MAX_RANK];
	int r = 0;
	for (int i = 0; i < x->rank; i++) {
		if (!red[i])
			dims[r++] = x->dims[i];
		else if (keep)
			dims[r++] = 1;
	}
	const ab_opdef *def = ab_node_def(c->n);
	int dtype = def && def->out_dtype == AB_OUT_INDEX ? AB_DT_INT64 : x->dtype;
	return ab_set_out(c, 0, dtype, r, dims);
}

int ab_fold_reduce(ab_ctx *c)
{
	/* Only ReduceProd/ReduceSum/ReduceMin/ReduceMax over all elements to a scalar-ish value are common in
	 * shape code (numel computations); fold those, leave the rest as compute. */
	const ab_value *in = ab_inval(c, 0);
	const ab_shape *os = &c->shapes[c->n->out[0]];
	if (os->numel != 1 || in->n == 0)
		return 0;
	const char *op = c->n->op;
	const ab_opdef *def = ab_node_def(c->n);
	const ab_scalar *sc = def ? def->scalar : NULL;
	if (!sc)
		return 0;
	/* In doubles, as the values are shape arithmetic (products of dims), then checked back into int64. */
	double acc = ab_value_get(in, 0);
	for (int64_t k = 1; k < in->n; k++)
		acc = sc->f(acc, ab_value_get(in, k), 0);
	if (sc->mean)
		acc /= (double)in->n;
	ab_value *v = ab_value_new(c->arena, in->dtype, os->rank, os->dims, c->err);
	if (!v)
		return c->err ? c->err->code : ABACUS_ENOMEM;
	if (v->i && ab_d2i(acc, &v->i[0]))
		return ab_node_err(c, ABACUS_ELIMIT, "%s of an integer tensor is %g, outside int64", op, acc);
	if (!v->i)
		v->f[0] = acc;
	return ab_set_outval(c, 0, v);
}

int ab_reduce_has_axes(const ab_node *n)
{
	size_t cnt = 0;
	return (ab_attr_ints(n, "axes", &cnt) && cnt > 0) || (n->n_in > 1 && n->in[1] >= 0);
}

/* A max or min reduction's backward (PyTorch's amax/amin over dims: scale_grad_by_count; over everything:
 * evenly_distribute_backward) compares the input with the result into a bool mask (1 byte per input element)
 * and counts the selected elements with a sum that first casts the mask to int64 (8 bytes per element);
 * over dims it then multiplies the scaled gradient by the mask cast to the input's dtype. Measured
 * 2026-12-05 with the allocator tracker (/tmp/wt-mem-probe/p_amax2.py, float inputs [32, 128, 126],
 * [4, 512, 1024] and [8, 64, 64]; PyTorch 1.13 and 2.15 alike): the backward peaks at 9.02-9.21 bytes per
 * input element above what was live before it over dims, 13.05 over everything; 4 of them are the
 * input's gradient, which stays. textcnn (three Conv1d → ReLU → amax(2) branches) peaks in the second
 * branch's backward with one such mask beside its gradients. */
#define AB_SELECT_MASK_BYTES 1 /* the bool mask, per input element */
#define AB_SELECT_COUNT_BYTES 8 /* the int64 cast the count's sum makes, per input element */

static int64_t select_backward_bytes(const ab_ctx *c, const ab_shape *x)
{
	int sz = ab_dtype_size(x->dtype) ? ab_dtype_size(x->dtype) : 4;
	/* over dims: mask + its cast (1 + 4 for floats) while the gradient is made, the count's int64 cast
	 * (1 + 8) before it; over everything the count's cast comes beside the gradient */
	int64_t per = ab_reduce_has_axes(c->n) ? AB_SELECT_MASK_BYTES + sz : AB_SELECT_MASK_BYTES + AB_SELECT_COUNT_BYTES;
	int64_t b;
	return ab_mul(x->numel, per, &b) ? 0 : b;
}

int ab_cost_reduce(ab_ctx *c, ab_cost *k)
{
	const ab_shape *x = ab_in(c, 0);
	k->fwd = x->numel;
	k->bwd = ab_in_rg(c, 0) ? x->numel : 0;
	/* Max/min reductions keep the input to route gradients; sums and means keep nothing (the table's save_in). */
	const ab_opdef *def = ab_node_def(c->n);
	k->in_mask = def ? def->save_in : 0;
	if (def && def->bwd_select && ab_in_rg(c, 0) && x->known)
		k->bwd_workspace = select_backward_bytes(c, x);
	io_bytes(c, k);
	return 0;
}

int ab_shape_topk(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need_val(c, 1, "K")))
		return rc;
	const ab_shape *x = ab_in(c, 0);
	int axis = ab_axis(ab_attr_int(c->n, "axis", -1), x->rank);
	if (axis < 0)
		return ab_node_err(c, ABACUS_ESHAPE, "axis is out of range");
	int64_t dims[ABACUS_MAX_RANK];
	memcpy(dims, x->dims, sizeof dims);
	dims[axis] = ab_value_geti(ab_inval(c, 1), 0);
	if (dims[axis] < 0 || dims[axis] > x->dims[axis])
		return ab_node_err(c, ABACUS_ESHAPE, "K=%lld is out of range", (long long)dims[axis]);
	if ((rc = ab_set_out(c, 0, x->dtype, x->rank, dims)))
		return rc;
	return ab_set_out(c, 1, AB_DT_INT64, x->rank, dims);
}

/* ---- recurrent layers ---- */

/* LSTM / GRU / RNN with layout 0: X [seq, batch, input]; W [dirs, G·H, input]; R [dirs, G·H, H]. */
static int rnn_gates(const ab_node *n)
{
	const ab_opdef *d = ab_node_def(n);
	return d && d->gates > 0 ? d->gates : 1;
}

int ab_shape_rnn(ab_ctx *c)
{
	int rc;
	if ((rc = ab_need(c, 0)) || (rc = ab_need(c, 1)))
		return rc;
	const ab_shape *x = ab_in(c, 0), *w = ab_in(c, 1);
	int64_t h = ab_attr_int(c->n, "hidden_size", -1);
	int layout = (int)ab_attr_int(c->n, "layout", 0);
	if (x->rank != 3 || w->rank != 3)
		return ab_node_err(c, ABACUS_ESHAPE, "expects a 3-D input and weight");
	if (h <= 0)
		h = w->dims[1] / rnn_gates(c->n);
	int64_t dirs = w->dims[0];
	int64_t seq = layout ? x->dims[1] : x->dims[0], batch = layout ? x->dims[0] : x->dims[1];
	int64_t y[4] = { seq, dirs, batch, h }, yh[3] = { dirs, batch, h };
	if (layout) {
		y[0] = batch; y[1] = seq; y[2] = dirs;
		yh[0] = batch; yh[1] = dirs;
	}
	if ((rc = ab_set_out(c, 0, x->dtype, 4, y)) || (rc = ab_set_out(c, 1, x->dtype, 3, yh)))
		return rc;
	return ab_set_out(c, 2, x->dtype, 3, yh);
}

/* A fused recurrent kernel's bytes by the runtime's terms (runtime.h ab_rnn_bytes): sb steps × samples, hidden
 * width h, input width in. */
static double fused_rnn_bytes(const ab_rnn_bytes *t, double sb, double h, double in)
{
	double m = in > h ? in : h;
	return t->sbh * sb * h + t->sbm * sb * m + t->hw * h * (h + in) + t->hh * h * h + t->c;
}

int ab_cost_rnn(ab_ctx *c, ab_cost *k)
{
	const ab_shape *x = ab_in(c, 0), *w = ab_in(c, 1);
	int layout = (int)ab_attr_int(c->n, "layout", 0);
	int64_t G = rnn_gates(c->n);
	int64_t dirs = w->dims[0], gh = w->dims[1], in = w->dims[2], h = gh / G;
	int64_t seq = layout ? x->dims[1] : x->dims[0], batch = layout ? x->dims[0] : x->dims[1];
	int64_t steps, macs, mm;
	/* Per step and direction: gates = x·Wᵀ + h·Rᵀ (G·H × (input + H) MACs per sample), then about
	 * 5 element-wise FLOPs per gate element for activations and the cell update. */
	if (ab_mul(seq, batch, &steps) || ab_mul(steps, dirs, &steps) || ab_mul(gh, in + h, &macs) ||
	    ab_mul(macs, steps, &mm) || ab_mul(mm, 2, &mm))
		return OVF(c);
	int64_t ew;
	if (ab_mul(steps, gh * 5, &ew) || ab_add(mm, ew, &k->fwd))
		return OVF(c);
	/* PyTorch runs a CPU LSTM/GRU one time step (and direction) at a time, a dozen small kernels each
	 * way: at a small batch that dispatch, not the FLOPs, is the cost. */
	k->serial_steps = seq * dirs;
	/* Per step, h·Rᵀ forward and, backward, dh = dgates·R and dR += dgatesᵀ·h: three products that each
	 * stream R (G·H × H) with batch rows. Measured here (one thread, LSTM and GRU, H 32-512, batch 1, 4
	 * and 16, sequence 64; 30 configurations, fitted within 2 % MRE, the worst 6 %): a step costs 81 µs
	 * of dispatch, plus 0.224 ns per byte of R or, when more, 0.1 ns per row-MAC of the three products
	 * (compute-bound from batch ~9; priced at 0.067 since batch 32 came out slow: runtime_torch_cpu.c), plus 10.8 ns per gate element (the unfused sigmoid/tanh/product
	 * kernels forward and backward); a plain RNN's step, a few kernels, about 35 µs. All are priced as
	 * bytes of R streamed (the runtime's rnn costs), and the recurrent products' and gates' FLOPs leave the FLOP
	 * terms (serial_flops). FLOPs plus bytes (the form before) counted the products twice and a 55 µs
	 * dispatch: small H came out 25 % fast (gru_classifier, H 128: -23 %, unseen; a bidirectional
	 * LSTM with H 64: -37 %), a plain RNN 10-40 % slow, H 512 at batch 4 26 % slow. x·Wᵀ stays a FLOP
	 * term: PyTorch runs it as one product over the whole sequence. A step in a longer sequence costs more
	 * (the runtime's seq_bytes per step of the sequence: runtime_torch_cpu.c). */
	int64_t r_elems, rbytes, rec_macs, gate_bytes, rec_flops, ew3;
	if (ab_mul(gh, h, &r_elems) || ab_mul(r_elems, 4, &rbytes) || ab_mul(batch, r_elems, &rec_macs) ||
	    ab_mul(batch, gh, &gate_bytes) || ab_mul(gate_bytes, c->rt->rnn.gate_bytes, &gate_bytes) ||
	    ab_mul(ew, 3, &ew3) ||
	    ab_mul(rec_macs, 6 * k->serial_steps, &rec_flops) || ab_add(rec_flops, ew3, &k->serial_flops))
		return OVF(c);
	/* Doubles from here: rec_macs fits 64 bits, so its product by a constant under one fits a double. */
	double prod = c->rt->rnn.mac_bytes * (double)rec_macs, per_step;
	per_step = (prod > (double)rbytes ? prod : (double)rbytes) + (double)gate_bytes +
	           (G == 1 ? c->rt->rnn.plain_step_bytes : c->rt->rnn.step_bytes) +
	           (G == 1 ? c->rt->rnn.plain_seq_bytes : c->rt->rnn.seq_bytes) * (double)seq;
	if (ab_d2i(per_step * (double)k->serial_steps, &k->serial_bytes))
		return OVF(c);
	/* Backward: input gradients (one product) and weight gradients (one product), element-wise twice. */
	k->bwd = (ab_in_rg(c, 0) ? mm : mm / 2) + mm / 2 * 1 + mm / 2 + 2 * ew;
	k->in_mask = 1;
	k->out_mask = 1;
	/* What a step keeps for backward, and its autograd records, are the runtime's (runtime.h ab_rnn_costs). */
	int64_t per_bytes = G == 1 ? c->rt->rnn.plain_saved_per_gate * gh : c->rt->rnn.saved_per_h * h;
	int64_t records;
	if (ab_mul(steps, per_bytes, &k->extra_bytes) ||
	    ab_mul(k->serial_steps, G == 1 ? c->rt->rnn.plain_record_bytes : c->rt->rnn.record_bytes, &records) ||
	    ab_add(k->extra_bytes, records, &k->extra_bytes) ||
	    ab_mul(k->serial_steps, G == 1 ? c->rt->rnn.plain_graph_bytes : c->rt->rnn.graph_bytes, &k->graph_bytes))
		return OVF(c);
	if (!ab_in_rg(c, 0) && !ab_in_rg(c, 1) && !ab_in_rg(c, 2))
		k->graph_bytes = 0; /* no autograd records without a gradient to compute */
	/* The input projection x·Wᵀ is one product over the whole sequence (sequence × batch × G·H), unbound
	 * into steps and freed when the layer returns; with two directions, each direction's outputs are
	 * stacked and then concatenated while the second direction's projection is still live. Measured:
	 * the forward peak is that much above what the layer leaves (bilstm_tagger's peak is there). */
	if (ab_mul(seq, batch, &k->fwd_workspace) ||
	    ab_mul(k->fwd_workspace, (gh + (dirs == 2 ? 2 * h : 0)) * 4, &k->fwd_workspace))
		return OVF(c);
	/* Backward through time accumulates R's gradient step by step, out of place: its peak, in multiples of
	 * R (the runtime's bwd_accum_r, or with two directions bwd_accum_r_two_dirs less half the layer's saved
	 * buffers, freed by then), beyond the layer's gradients that the simulator adds at once with every saved
	 * tensor live, is the workspace. */
	if (ab_in_rg(c, 2)) {
		double rb = (double)rbytes, grads = (double)dirs * (rb + 4.0 * (double)gh * (double)(in + 2));
		if (ab_in_rg(c, 0))
			grads += 4.0 * (double)seq * (double)batch * (double)in;
		double peak = c->rt->rnn.bwd_accum_r * rb, late = c->rt->rnn.bwd_accum_r_two_dirs * rb - (double)k->extra_bytes / 2;
		if (dirs == 2 && late > peak)
			peak = late;
		k->bwd_workspace = peak > grads ? (int64_t)(peak - grads) : 0;
		/* A while loop's backward (the runtime's bwd_parallel_iterations): each iteration in flight holds its
		 * partial gradients of W and R (G·H × (input + H) floats) until they are added into the sums, which
		 * the simulator counts with the layer's gradients; one direction's loop at a time. */
		if (c->rt->rnn.bwd_parallel_iterations > 0) {
			int64_t n = seq < c->rt->rnn.bwd_parallel_iterations ? seq : c->rt->rnn.bwd_parallel_iterations;
			double ws = (double)n * 4.0 * (double)gh * (double)(in + h);
			k->bwd_workspace = ws < 9e18 ? (int64_t)ws : INT64_MAX; /* an absurd graph's saturates */
		}
	}
	/* A runtime that trains an LSTM as one fused kernel per direction (the runtime's lstm_fused): its
	 * workspace and transients by the runtime's fitted terms, and one autograd record per direction. */
	if (G == 4 && c->rt->rnn.lstm_fused) {
		double sb = (double)seq * (double)batch, hd = (double)h, id = (double)in;
		double saved = (double)dirs * fused_rnn_bytes(&c->rt->rnn.fused_saved, sb, hd, id);
		if (ab_d2i(saved, &k->extra_bytes) ||
		    ab_d2i(fused_rnn_bytes(&c->rt->rnn.fused_fwd, sb, hd, id), &k->fwd_workspace) ||
		    ab_d2i(fused_rnn_bytes(&c->rt->rnn.fused_bwd, sb, hd, id), &k->bwd_workspace))
			return OVF(c);
		k->graph_bytes = 0;
		if (!ab_in_rg(c, 0) && !ab_in_rg(c, 1) && !ab_in_rg(c, 2))
			k->bwd_workspace = 0;
		/* Time: one kernel per direction each way, its recurrent products inside it priced as matrix-product
		 * FLOPs like the rest of the layer's, with no per-step dispatch. */
		k->serial_steps = dirs;
		k->serial_flops = 0;
		k->serial_bytes = 0;
	}
	io_bytes(c, k);
	return 0;
}

/* ---- gather-based embedding ---- */

int ab_cost_gather(ab_ctx *c, ab_cost *k)
{
	const ab_shape *y = out0(c);
	k->fwd = 0;
	/* The gradient of an embedding table is a scatter-add of the output gradient. */
	k->bwd = ab_in_rg(c, 0) ? y->numel : 0;
	k->in_mask = 2; /* indices */
	io_bytes(c, k);
	return 0;
}

int ab_cost_resize(ab_ctx *c, ab_cost *k)
{
	const ab_shape *y = out0(c);
	const char *mode = ab_attr_str(c->n, "mode", "nearest");
	int64_t per = !strcmp(mode, "nearest") ? 1 : !strcmp(mode, "linear") ? 7 : 20;
	if (ab_mul(y->numel, per, &k->fwd) || ab_mul(y->numel, ab_in_rg(c, 0) ? per : 0, &k->bwd))
		return OVF(c);
	io_bytes(c, k);
	return 0;
}

/* Data movement with no arithmetic: Concat, Pad, Split, Slice, Tile, Expand, Transpose copies ... */
int ab_cost_move(ab_ctx *c, ab_cost *k)
{
	const ab_shape *y = out0(c);
	k->fwd = 0;
	k->bwd = 0;
	(void)y;
	io_bytes(c, k);
	return 0;
}
