/*
 * analysis.c — one configuration of a loaded graph: bind input shapes (batch, overrides), walk the
 * nodes in topological order running each op's shape rule, fold shape sub-graphs to constants, account
 * the remaining compute nodes as layers with their costs, then simulate the training step's memory.
 *
 * A node is folded when every present input has a known value and its op can compute values; Shape and
 * Size fold as soon as their input's shape is known. Folded nodes are not layers: they do no work in a
 * training step that matters, and they are not part of the structural matrix.
 */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "runtime.h"

static int bind_inputs(abacus_analysis *a, abacus_error *err)
{
	const abacus_graph *g = a->g;
	const abacus_config *cfg = &a->cfg;
	for (size_t k = 0; k < cfg->n_inputs; k++) {
		const abacus_input_shape *in = &cfg->inputs[k];
		int found = 0;
		for (int i = 0; i < g->n_inputs; i++)
			if (in->name ? !strcmp(in->name, g->tensors[g->inputs[i]].name) : i == 0)
				found = 1;
		if (!found)
			return ab_err(err, ABACUS_EINVAL, in->name ? in->name : "",
			              "--input names '%s', which is not a graph input (see `abacus inspect` for the inputs)",
			              in->name ? in->name : "(first)");
	}
	for (int i = 0; i < g->n_inputs; i++) {
		int t = g->inputs[i];
		const ab_tensor *gt = &g->tensors[t];
		ab_shape *s = &a->shapes[t];
		const abacus_input_shape *ov = NULL;
		for (size_t k = 0; k < cfg->n_inputs; k++)
			if (cfg->inputs[k].name ? !strcmp(cfg->inputs[k].name, gt->name) : i == 0)
				ov = &cfg->inputs[k];
		s->dtype = gt->dtype ? gt->dtype : AB_DT_FLOAT;
		if (ov) {
			if (ov->rank < 0 || ov->rank > ABACUS_MAX_RANK)
				return ab_err(err, ABACUS_EINVAL, gt->name, "input '%s': rank %d is invalid", gt->name, ov->rank);
			if (gt->rank >= 0 && ov->rank != gt->rank)
				return ab_err(err, ABACUS_EINVAL, gt->name, "input '%s' has rank %d in the graph but %d was given",
				              gt->name, gt->rank, ov->rank);
			s->rank = ov->rank;
			for (int d = 0; d < ov->rank; d++)
				s->dims[d] = ov->dims[d];
		} else {
			if (gt->rank < 0)
				return ab_err(err, ABACUS_ESHAPE, gt->name,
				              "input '%s' has no declared shape; give one with --input %s=DIMS", gt->name, gt->name);
			s->rank = gt->rank;
			for (int d = 0; d < gt->rank; d++) {
				s->dims[d] = gt->dims[d];
				if (gt->dims[d] >= 0)
					continue;
				/* A symbolic dim: the batch when it is the first axis or named like one. */
				const char *sym = gt->sym && gt->sym[d] ? gt->sym[d] : "?";
				if (d == 0 || strstr(sym, "batch") || !strcmp(sym, "N"))
					s->dims[d] = cfg->batch;
				else
					return ab_err(err, ABACUS_ESHAPE, gt->name,
					              "input '%s' has a symbolic dim '%s' at axis %d; give it with --input %s=DIMS", gt->name,
					              sym, d, gt->name);
			}
		}
		for (int d = 0; d < s->rank; d++)
			if (s->dims[d] < 0)
				return ab_err(err, ABACUS_ESHAPE, gt->name, "input '%s' has a negative dim at axis %d", gt->name, d);
		if (ab_numel(s->dims, s->rank, &s->numel))
			return ab_err(err, ABACUS_ESHAPE, gt->name, "input '%s': the product of its dims overflows 64 bits",
			              gt->name);
		s->known = 1;
		int64_t b;
		int sz = ab_dtype_size(s->dtype);
		if (ab_mul(s->numel, sz ? sz : 4, &b) || ab_add(a->input_bytes, b, &a->input_bytes))
			return ab_err(err, ABACUS_ESHAPE, gt->name, "input '%s' is too large", gt->name);
	}
	return 0;
}

static int note_unknown(abacus_analysis *a, const char *op)
{
	for (size_t k = 0; k < a->n_unk; k++)
		if (!strcmp(a->unk_ops[k], op)) {
			a->unk_counts[k]++;
			return 0;
		}
	const char **ops = ab_realloc(a->unk_ops, (a->n_unk + 1) * sizeof *ops);
	if (!ops)
		return -1;
	a->unk_ops = ops;
	int64_t *cnt = ab_realloc(a->unk_counts, (a->n_unk + 1) * sizeof *cnt);
	if (!cnt)
		return -1;
	a->unk_counts = cnt;
	a->unk_ops[a->n_unk] = op;
	a->unk_counts[a->n_unk++] = 1;
	return 0;
}

/* An op we do not know: its outputs take the file's declared shapes (value_info), with symbolic dims on
 * the first axis bound to the batch. Without a declaration we cannot go on. */
static int unknown_shapes(abacus_analysis *a, ab_ctx *c)
{
	const ab_node *n = c->n;
	for (int o = 0; o < n->n_out; o++) {
		int t = n->out[o];
		if (t < 0)
			continue;
		const ab_tensor *gt = &a->g->tensors[t];
		if (gt->rank < 0)
			return ab_node_err(c, ABACUS_EUNSUPPORTED,
			                   "op '%s' is not in the op table and the file declares no shape for its output '%s'",
			                   n->op, gt->name);
		int64_t dims[ABACUS_MAX_RANK];
		for (int d = 0; d < gt->rank; d++) {
			dims[d] = gt->dims[d];
			if (dims[d] < 0) {
				if (d != 0)
					return ab_node_err(c, ABACUS_EUNSUPPORTED,
					                   "op '%s' is not in the op table and its output '%s' has a symbolic dim at axis %d",
					                   n->op, gt->name, d);
				dims[d] = a->cfg.batch;
			}
		}
		int rc = ab_set_out(c, o, gt->dtype ? gt->dtype : AB_DT_FLOAT, gt->rank, dims);
		if (rc)
			return rc;
	}
	return 0;
}

static int64_t shape_bytes(const ab_shape *s)
{
	int64_t b;
	int sz = ab_dtype_size(s->dtype);
	if (!s->known || ab_mul(s->numel, sz ? sz : 4, &b))
		return 0;
	return b;
}

double ab_layer_weight_bytes(const abacus_analysis *a, size_t i)
{
	const ab_node *n = &a->g->nodes[a->layer_node[i]];
	double b = 0;
	for (int k = 0; k < n->n_in; k++) {
		int t = n->in[k];
		if (t >= 0 && a->wl[t] && !a->vals[t])
			b += (double)shape_bytes(&a->shapes[t]);
	}
	/* Never more than the op's own accounting of what it reads. */
	return b < (double)a->layers[i].bytes_read ? b : (double)a->layers[i].bytes_read;
}

/* The parameters layer i reads when none of its activation inputs needs a gradient (a network's first
 * layer, an embedding): its backward writes their gradient but never reads them for an input's. Only
 * parameters themselves count: a tensor computed from parameters alone (S4D's convolution kernel, built
 * from its parameters on every step) is no gradient the step writes, and counting the 2 MB of Exp and Mul
 * that build such a kernel made the step's weight term negative (the outside set's s4d). */
static double nodx_weight_bytes(const abacus_analysis *a, size_t i)
{
	const ab_node *n = &a->g->nodes[a->layer_node[i]];
	double b = 0;
	for (int k = 0; k < n->n_in; k++) {
		int t = n->in[k];
		if (t < 0 || a->vals[t])
			continue;
		if (!a->wl[t] && a->rg[t])
			return 0;
		if (a->wl[t] && a->g->tensors[t].is_param)
			b += (double)shape_bytes(&a->shapes[t]);
	}
	return b;
}

double ab_layer_dispatch(const abacus_analysis *a, size_t i)
{
	return a->rt->dispatch_us(a, i);
}

double ab_layer_bmm_us(const abacus_analysis *a, size_t i)
{
	const ab_cost *k = &a->costs[i];
	if (a->layer_view[i] != AB_LAYER_KERNEL || k->bmm_items <= 0)
		return 0;
	return (double)k->bmm_items * a->rt->bmm_item_us[k->bmm_mkn >= a->rt->bmm_loop_mkn];
}

double ab_layer_arith(const abacus_analysis *a, size_t i)
{
	const ab_node *n = &a->g->nodes[a->layer_node[i]];
	if (a->layer_view[i] != AB_LAYER_KERNEL || a->costs[i].arith_ns <= 0 || n->n_out < 1 || n->out[0] < 0)
		return 0;
	return a->costs[i].arith_ns * (double)a->shapes[n->out[0]].numel;
}

/* An ONNX LayerNormalization's arithmetic per element, ns of one thread: its rows' fixed cost (ab_ln_arith_ns),
 * a row being the normalised last axis (ops_nn.c ab_cost_norm's groups). The exporter's decomposed LayerNorm
 * gets the same from fusion (runtime_torch_fusion.c). */
static double layernorm_arith_ns(const abacus_analysis *a, const ab_node *n)
{
	const ab_shape *x = n->n_in > 0 && n->in[0] >= 0 ? &a->shapes[n->in[0]] : NULL;
	return x && x->known && x->rank >= 1 ? ab_ln_arith_ns(a->rt, x->dims[x->rank - 1]) : 0;
}

/* A cumulative sum's arithmetic per element, ns of one thread: the runtime's scan classes by how far
 * apart the scanned elements lie (inner: the product of the dimensions after the axis) and, a page or more
 * apart, by how many steps the scan walks (runtime_torch_cpu.c says what was measured). An axis that is not
 * a known constant, or a shape not known, takes the strided class. */
static double scan_arith_ns(const abacus_analysis *a, const ab_node *n)
{
	const double *ns = a->rt->act_ns;
	const ab_shape *s = n->n_in > 0 && n->in[0] >= 0 ? &a->shapes[n->in[0]] : NULL;
	const ab_value *v = n->n_in > 1 && n->in[1] >= 0 ? a->vals[n->in[1]] : NULL;
	if (!s || !s->known || s->rank < 1 || !v || v->n < 1 || (!v->i && !v->f))
		return ns[AB_ACT_CUMSUM_STRIDED];
	int64_t axis = v->i ? v->i[0] : (int64_t)v->f[0];
	if (axis < 0)
		axis += s->rank;
	if (axis < 0 || axis >= s->rank)
		return ns[AB_ACT_CUMSUM_STRIDED];
	double inner = 1;
	for (int d = (int)axis + 1; d < s->rank; d++)
		inner *= (double)s->dims[d];
	if (inner < 128)
		return ns[AB_ACT_CUMSUM];
	double scan = (double)s->dims[axis], beyond = inner >= 1024 && scan > 256 ? (scan - 256) / 256 : 0;
	return ns[AB_ACT_CUMSUM_STRIDED] + ns[AB_ACT_CUMSUM_PAGED] * (beyond < 2 ? beyond : 2);
}

/* A windowed pooling's arithmetic per output element, ns of one thread: the runtime's fixed cost of an
 * output element and its cost per window element, average and max apart (runtime_torch_cpu.c). A global
 * pooling is a reduction that its bytes price. */
static double pool_arith_ns(const abacus_analysis *a, const ab_node *n, const ab_opdef *def)
{
	if (def->flags & AB_OP_GLOBAL)
		return 0;
	size_t nk;
	const int64_t *ks = ab_attr_ints(n, "kernel_shape", &nk);
	double win = 1;
	for (size_t i = 0; ks && i < nk; i++)
		win *= (double)ks[i];
	const double *ns = a->rt->act_ns;
	return ns[AB_ACT_POOL] + win * ns[def->flags & AB_OP_ARGMAX ? AB_ACT_POOL_MAX_WIN : AB_ACT_POOL_AVG_WIN];
}

/* What flows from a node's inputs to its outputs: requires-grad, weight-likeness, channels-last layout.
 * *any_rg: an input requires grad (and the op passes gradients); returns whether the outputs are
 * weight-like (computed from parameters and constants only). */
static int propagate(abacus_analysis *a, const ab_node *n, const abacus_layer *L, const ab_opdef *def, int *any_rg_out)
{
	/* Requires-grad flows from parameters through every differentiable op. */
	int any_rg = 0;
	for (int i = 0; i < n->n_in; i++)
		if (n->in[i] >= 0 && a->rg[n->in[i]])
			any_rg = 1;
	if (def && (def->flags & AB_OP_NOGRAD))
		any_rg = 0;
	for (int o = 0; o < n->n_out; o++)
		if (n->out[o] >= 0)
			a->rg[n->out[o]] = (unsigned char)any_rg;
	/* Weight-like: computed from parameters and constants only (e.g. a transposed weight matrix). */
	int wl = 1;
	for (int i = 0; i < n->n_in; i++)
		if (n->in[i] >= 0 && !a->wl[n->in[i]] && !a->vals[n->in[i]])
			wl = 0;
	for (int o = 0; o < n->n_out; o++)
		if (n->out[o] >= 0)
			a->wl[n->out[o]] = (unsigned char)wl;
	/* Of those, the ones PyTorch computes into a tensor of its own every iteration (an S4 kernel built
	 * from its parameters, a position-embedding lookup, a relative-position bias): an Exp, a product, a
	 * Gather, and views of them. Not a Concat: the exporter's gate-reordered LSTM/GRU weights (slices
	 * concatenated) are no tensor in PyTorch, which hands the weight to its kernel as it is. */
	int wm = 0;
	if (wl && any_rg && def && (def->flags & AB_OP_VIEW))
		wm = n->n_in > 0 && n->in[0] >= 0 && a->wm[n->in[0]];
	else if (wl && any_rg && L->category != ABACUS_CAT_CONCAT)
		wm = 1;
	for (int o = 0; o < n->n_out; o++)
		if (n->out[o] >= 0)
			a->wm[n->out[o]] = (unsigned char)wm;
	/* Channels-last activations: PyTorch keeps the strides a permute to NCHW leaves (convnext's blocks
	 * end in one), and element-wise ops, normalisations and convolutions pass them on; a depthwise
	 * convolution's backward holds far more for them (ab_cost_conv). A convolution (not a transposed one),
	 * a pooling and a resize make their output in their input's memory format whatever its shape
	 * (checked on PyTorch 1.13.1, /tmp/wt-mem2-probe/p_cl_conv.py: a 2×2/2 or 3×3 64 → 128 convolution,
	 * max and average pooling, nearest upsampling of a permuted [1, 8, 8, 64] tensor give channels-last
	 * outputs; ConvTranspose2d a contiguous one). So convnext's downsampling convolution hands its
	 * stage's first depthwise convolution a channels-last input: its backward held the 256-weight buffer
	 * (6,545,592 B for 128 channels of 7×7, 256·W = 6,422,528) that the simulation gave only to the
	 * stage's later blocks (convnext_v2 3×64×64 batch 1 peaked there, 3.2 % above the simulation). */
	int cl = 0;
	int keeps_format = ((L->category == ABACUS_CAT_CONV || L->category == ABACUS_CAT_GROUPCONV) &&
	                    !(ab_node_flags(n) & AB_OP_TRANSPOSED)) ||
	                   L->category == ABACUS_CAT_POOL || L->category == ABACUS_CAT_RESIZE;
	if (ab_node_flags(n) & AB_OP_PERMUTE) {
		size_t np;
		const int64_t *perm = ab_attr_ints(n, "perm", &np);
		cl = perm && np == 4 && perm[0] == 0 && perm[1] == 3 && perm[2] == 1 && perm[3] == 2;
	} else if (keeps_format) {
		cl = n->n_in > 0 && n->in[0] >= 0 && a->cl[n->in[0]];
	} else if (L->category == ABACUS_CAT_CONV || L->category == ABACUS_CAT_GROUPCONV ||
	           L->category == ABACUS_CAT_BATCHNORM || L->category == ABACUS_CAT_RELU ||
	           L->category == ABACUS_CAT_ACT || L->category == ABACUS_CAT_ADD || L->category == ABACUS_CAT_MUL ||
	           L->category == ABACUS_CAT_ELTWISE || L->category == ABACUS_CAT_DROPOUT) {
		const ab_shape *y = n->n_out > 0 && n->out[0] >= 0 ? &a->shapes[n->out[0]] : NULL;
		for (int i = 0; i < n->n_in && y; i++)
			if (n->in[i] >= 0 && a->cl[n->in[i]] && a->shapes[n->in[i]].numel == y->numel)
				cl = 1;
	}
	for (int o = 0; o < n->n_out; o++)
		if (n->out[o] >= 0)
			a->cl[n->out[o]] = (unsigned char)(cl && a->shapes[n->out[o]].rank == 4);
	/* Outputs that are integer or bool never require grad (indices, masks). */
	for (int o = 0; o < n->n_out; o++)
		if (n->out[o] >= 0 && !ab_dtype_is_float(a->shapes[n->out[o]].dtype))
			a->rg[n->out[o]] = 0;
	*any_rg_out = any_rg;
	return wl;
}

/* The op's cost rule, or for an op not in the table its bytes alone. */
static int layer_cost(abacus_analysis *a, ab_ctx *c, const ab_opdef *def, ab_cost *k)
{
	const ab_node *n = c->n;
	int rc;
	if (def) {
		rc = def->cost ? def->cost(c, k) : ab_cost_table(c, def, k);
		if (rc)
			return rc;
		/* What the runtime's backward keeps of this op when it differs from the table's (PyTorch's). */
		if (a->rt->saved)
			a->rt->saved(c, def, k);
	} else {
		for (int i = 0; i < n->n_in; i++)
			if (n->in[i] >= 0)
				ab_sat_add(&k->bytes_read, shape_bytes(&a->shapes[n->in[i]]));
		for (int o = 0; o < n->n_out; o++)
			if (n->out[o] >= 0)
				ab_sat_add(&k->bytes_written, shape_bytes(&a->shapes[n->out[o]]));
	}
	return 0;
}

/* Category refinements that depend on attributes or operands (the op table's flags), then the cost rule's. */
static void refine_category(const abacus_analysis *a, const ab_node *n, const ab_opdef *def, const ab_cost *k,
                            abacus_layer *L)
{
	unsigned flags = def ? def->flags : 0;
	if ((flags & AB_OP_GROUPS) && ab_attr_int(n, "group", 1) > 1)
		L->category = ABACUS_CAT_GROUPCONV;
	if ((flags & AB_OP_LOOKUP) && n->n_in > 0 && n->in[0] >= 0 && a->g->tensors[n->in[0]].is_param)
		L->category = ABACUS_CAT_EMBEDDING;
	/* A product of two activations (no parameter, no constant operand) is attention-like: Q·Kᵀ and
	 * softmax(·)·V in transformers. Products with weights stay matmul. */
	if ((flags & AB_OP_PRODUCT) && n->n_in >= 2) {
		int act = 1;
		for (int i = 0; i < n->n_in; i++)
			if (n->in[i] < 0 || a->wl[n->in[i]] || a->vals[n->in[i]] || !a->rg[n->in[i]])
				act = 0;
		if (act)
			L->category = ABACUS_CAT_ATTENTION;
	}
	if (k->category >= 0)
		L->category = k->category;
}

/* The layer's own numbers: parameters (each float initializer once, at its first consumer), output shape
 * and bytes, what it saves for backward, FLOPs and traffic. Returns 1 when it is a view, 0, or an error. */
static int fill_layer(abacus_analysis *a, ab_ctx *c, const ab_opdef *def, const ab_cost *k, int any_rg,
                      unsigned char *param_seen, abacus_layer *L)
{
	const ab_node *n = c->n;
	for (int i = 0; i < n->n_in; i++) {
		int t = n->in[i];
		if (t < 0 || !a->g->tensors[t].is_param || param_seen[t])
			continue;
		param_seen[t] = 1;
		if (ab_add(L->params, a->shapes[t].numel, &L->params))
			return ab_node_err(c, ABACUS_ESHAPE, "parameter count overflows");
	}
	const ab_shape *y = n->n_out > 0 && n->out[0] >= 0 ? &a->shapes[n->out[0]] : NULL;
	if (y && y->known) {
		L->rank = y->rank;
		memcpy(L->dims, y->dims, sizeof L->dims);
	}
	for (int o = 0; o < n->n_out; o++)
		if (n->out[o] >= 0 && ab_add(L->output_bytes, shape_bytes(&a->shapes[n->out[o]]), &L->output_bytes))
			return ab_node_err(c, ABACUS_ESHAPE, "output bytes overflow");
	/* Saved for backward: the activation tensors named by the masks (not constants, parameters, views or
	 * copies of parameters, or graph inputs, which live anyway) plus the op's extra buffers. Views count toward their producer, so a
	 * tensor saved by two layers is charged to each here; memory.c counts it once. */
	L->saved_bytes = any_rg ? k->extra_bytes : 0;
	for (int i = 0; any_rg && i < n->n_in && i < 16; i++)
		if (n->in[i] >= 0 && (k->in_mask >> i & 1) && a->g->tensors[n->in[i]].kind == AB_T_VALUE && !a->vals[n->in[i]] &&
		    !a->wl[n->in[i]])
			ab_sat_add(&L->saved_bytes, shape_bytes(&a->shapes[n->in[i]]));
	for (int o = 0; any_rg && o < n->n_out && o < 16; o++)
		if (n->out[o] >= 0 && (k->out_mask >> o & 1))
			ab_sat_add(&L->saved_bytes, shape_bytes(&a->shapes[n->out[o]]));
	L->forward_flops = k->fwd;
	L->backward_flops = any_rg ? k->bwd : 0;
	L->bytes_read = k->bytes_read;
	int view = (def && (def->flags & AB_OP_VIEW)) || k->identity;
	L->bytes_written = view ? 0 : k->bytes_written;
	return view;
}

/* The analysis-wide sums the time terms read (analysis.h), so that a prediction never walks the layers. */
static int add_to_totals(abacus_analysis *a, ab_ctx *c, const abacus_layer *L, const ab_cost *k, const ab_opdef *def,
                         int view, int wl)
{
	abacus_totals *T = &a->totals;
	if (ab_add(T->params, L->params, &T->params) || ab_add(T->forward_flops, L->forward_flops, &T->forward_flops) ||
	    ab_add(T->backward_flops, L->backward_flops, &T->backward_flops) ||
	    ab_add(T->bytes_read, L->bytes_read, &T->bytes_read) ||
	    ab_add(T->bytes_written, L->bytes_written, &T->bytes_written))
		return ab_node_err(c, ABACUS_ESHAPE, "totals overflow 64 bits");
	T->layers++;
	if (!def)
		T->unknown++;
	double f = (double)L->forward_flops + (double)L->backward_flops;
	a->cat_flops[L->category] += f;
	a->serial_steps += (double)k->serial_steps;
	a->norm_rows += (double)k->norm_rows;
	a->serial_bytes += (double)k->serial_bytes;
	if (ab_layer_thin(L))
		a->thin_flops += f;
	a->serial_flops[ab_layer_thin(L)] += k->serial_flops < f ? (double)k->serial_flops : f;
	if (L->category == ABACUS_CAT_CONV) {
		if (k->slow_path & AB_SLOW_ONE_THREAD)
			a->slow_conv_flops[0] += f;
		if (k->slow_path & AB_SLOW_THREADS)
			a->slow_conv_flops[1] += f;
		for (int th = 0; th < 2 && k->pad_weight > 1; th++)
			if (!(k->slow_path & (th ? AB_SLOW_THREADS : AB_SLOW_ONE_THREAD)))
				a->pad_extra_flops[th] += (k->pad_weight - 1) * f;
	}
	if (L->category == ABACUS_CAT_GROUPCONV && k->group_weight > 0) {
		if (k->dense_groups) {
			a->dense_group_flops += f;
			a->dense_group_weighted += k->group_weight * f;
		} else {
			a->group_extra_flops += (k->group_weight - 1) * f;
		}
	}
	if (L->category == ABACUS_CAT_GROUPCONV && k->dw_weight[0] > 0) {
		double wf = k->dw_weight[0] * (double)L->forward_flops + k->dw_weight[1] * (double)L->backward_flops;
		a->dw_flops += f;
		a->dw_weighted_flops += wf;
		a->dw_extra_flops += wf - f;
	}
	if (view) {
		int free_view = wl;
		a->layer_view[a->n_layers - 1] = free_view ? AB_LAYER_FREE : AB_LAYER_VIEW;
		*(free_view ? &a->free_layers : &a->view_layers) += 1;
		*(free_view ? &a->free_bytes : &a->view_bytes) += (double)L->bytes_read;
	}
	return 0;
}

static int add_layer(abacus_analysis *a, ab_ctx *c, int node, const ab_opdef *def, unsigned char *param_seen)
{
	const ab_node *n = c->n;
	abacus_layer *L = &a->layers[a->n_layers];
	ab_cost *k = &a->costs[a->n_layers];
	int rc;
	memset(k, 0, sizeof *k);
	k->category = -1;
	memset(L, 0, sizeof *L);
	L->name = n->name;
	L->op = n->op;
	L->known = def != NULL;
	L->category = def ? def->cat : ABACUS_CAT_OTHER;
	int any_rg, wl = propagate(a, n, L, def, &any_rg);
	if ((rc = layer_cost(a, c, def, k)))
		return rc;
	refine_category(a, n, def, k, L);
	int view = fill_layer(a, c, def, k, any_rg, param_seen, L);
	if (view < 0)
		return view;
	k->arith_ns = !def ? 0 : def->act == AB_ACT_CUMSUM ? scan_arith_ns(a, n)
	              : def->cat == ABACUS_CAT_POOL ? pool_arith_ns(a, n, def)
	              : def->act == AB_ACT_LN_ROW ? layernorm_arith_ns(a, n) : a->rt->act_ns[def->act];
	a->layer_node[a->n_layers] = node;
	a->node_layer[node] = (int)a->n_layers;
	a->n_layers++;
	return add_to_totals(a, c, L, k, def, view, wl);
}

static int run(abacus_analysis *a, abacus_error *err)
{
	const abacus_graph *g = a->g;
	int rc;
	unsigned char *param_seen = ab_calloc((size_t)g->n_tensors + 1, 1);
	if (!param_seen)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	/* Initializers and their values. */
	for (int t = 0; t < g->n_tensors; t++) {
		const ab_tensor *gt = &g->tensors[t];
		if (gt->kind != AB_T_INIT)
			continue;
		ab_shape *s = &a->shapes[t];
		s->known = 1;
		s->dtype = gt->dtype;
		s->rank = gt->rank;
		memcpy(s->dims, gt->dims, (size_t)gt->rank * sizeof *s->dims);
		if (ab_numel(s->dims, s->rank, &s->numel)) {
			rc = ab_err(err, ABACUS_ESHAPE, gt->name, "initializer '%s' has dims whose product overflows", gt->name);
			goto out;
		}
		a->vals[t] = gt->value;
		a->rg[t] = (unsigned char)gt->is_param;
		a->wl[t] = 1;
	}
	if ((rc = bind_inputs(a, err)))
		goto out;
	for (int i = 0; i < g->n_nodes; i++) {
		int node = g->order[i];
		const ab_node *n = &g->nodes[node];
		ab_ctx c = { g, n, a->shapes, a->vals, a->rg, err, &a->vals_arena, a->cl, a->rt, a->cfg.threads,
		             !ab_isa_has_avx(a->cfg.isa) };
		const ab_opdef *def = ab_node_def(n);
		if (!def) {
			if (a->cfg.strict) {
				rc = ab_node_err(&c, ABACUS_EUNSUPPORTED,
				                 "op '%s%s%s' is not in the op table (--strict); without --strict it counts as 'other'",
				                 n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op);
				goto out;
			}
			if (note_unknown(a, n->op)) {
				rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
				goto out;
			}
			if ((rc = unknown_shapes(a, &c)) || (rc = add_layer(a, &c, node, NULL, param_seen)))
				goto out;
			continue;
		}
		/* Every rule writes and costs output 0; an op without it is malformed, not a zero-cost node. */
		if (n->n_out == 0 || n->out[0] < 0) {
			rc = ab_node_err(&c, ABACUS_EGRAPH, "the node has no first output");
			goto out;
		}
		for (int k = 0; k < n->n_in; k++)
			if (n->in[k] >= 0 && !a->shapes[n->in[k]].known) {
				rc = ab_node_err(&c, ABACUS_ESHAPE, "input '%s' has no resolved shape", g->tensors[n->in[k]].name);
				goto out;
			}
		if ((rc = def->shape(&c)))
			goto out;
		int all_const = n->n_in > 0 || (def->flags & AB_OP_CONSTANT);
		for (int k = 0; k < n->n_in; k++)
			if (n->in[k] >= 0 && !a->vals[n->in[k]])
				all_const = 0;
		if (all_const && def->fold && (rc = def->fold(&c)))
			goto out;
		int folded = n->n_out > 0;
		for (int o = 0; o < n->n_out; o++)
			if (n->out[o] >= 0 && !a->vals[n->out[o]])
				folded = 0;
		/* Shape-only Constants whose data was stripped still describe no work. */
		if (def->flags & AB_OP_CONSTANT)
			folded = 1;
		for (int o = 0; o < n->n_out; o++)
			if (n->out[o] >= 0 && !a->shapes[n->out[o]].known) {
				rc = ab_node_err(&c, ABACUS_ESHAPE, "the shape rule left output %d unresolved", o);
				goto out;
			}
		if (folded) {
			a->totals.folded++;
			continue;
		}
		if ((rc = add_layer(a, &c, node, def, param_seen)))
			goto out;
	}
	/* Parameters that no layer consumed still exist in the model (e.g. only reshaped and dropped). */
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].is_param && !param_seen[t] && g->tensors[t].n_consumers > 0)
			ab_sat_add(&a->totals.params, a->shapes[t].numel);
	a->rt->mark_fused(a);
	for (size_t i = 0; i < a->n_layers; i++)
		if (a->layer_view[i] == AB_LAYER_KERNEL) {
			a->weight_bytes += ab_layer_weight_bytes(a, i);
			a->nodx_weight_bytes += nodx_weight_bytes(a, i);
			a->dispatch += ab_layer_dispatch(a, i);
			a->arith += ab_layer_arith(a, i);
			a->bmm_us += ab_layer_bmm_us(a, i);
		}
	if ((rc = ab_simulate_memory(a, err)) == 0)
		rc = ab_features_compute(&a->features, a, err);
out:
	ab_free(param_seen);
	return rc;
}

int abacus_analyze(abacus_analysis **out, const abacus_graph *g, const abacus_config *cfg, abacus_error *err)
{
	ab_err_clear(err);
	*out = NULL;
	if (!g || !cfg)
		return ab_err(err, ABACUS_EINVAL, "", "NULL graph or configuration");
	abacus_config cur;
	if (ab_config_read(&cur, cfg, err))
		return ABACUS_EINVAL;
	cfg = &cur;
	if (cfg->batch <= 0)
		return ab_err(err, ABACUS_EINVAL, "", "batch must be at least 1 (got %lld)", (long long)cfg->batch);
	if (cfg->threads < 0 || cfg->threads > 4096)
		return ab_err(err, ABACUS_EINVAL, "", "threads must be 1 to 4096 (got %d)", cfg->threads);
	if (ab_check_isa(&cur.isa, cfg->isa, err)) /* (the static name: the caller's string is not retained) */
		return ABACUS_EINVAL;
	abacus_analysis *a = ab_calloc(1, sizeof *a);
	if (!a)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	a->g = g;
	a->cfg = *cfg;
	if (a->cfg.threads < 1)
		a->cfg.threads = 1;
	a->rt = ab_runtime_find(cfg->runtime);
	if (!a->rt) {
		const char *name;
		ab_free(a);
		return abacus_parse_runtime(&name, cfg->runtime, err);
	}
	ab_arena_init(&a->vals_arena, 64 << 10);
	size_t nt = (size_t)g->n_tensors + 1, nn = (size_t)g->n_nodes + 1;
	a->shapes = ab_calloc(nt, sizeof *a->shapes);
	a->vals = ab_calloc(nt, sizeof *a->vals);
	a->rg = ab_calloc(nt, 1);
	a->wl = ab_calloc(nt, 1);
	a->wm = ab_calloc(nt, 1);
	a->cl = ab_calloc(nt, 1);
	a->layers = ab_calloc(nn, sizeof *a->layers);
	a->costs = ab_calloc(nn, sizeof *a->costs);
	a->layer_node = ab_calloc(nn, sizeof *a->layer_node);
	a->node_layer = ab_malloc(nn * sizeof *a->node_layer);
	a->layer_view = ab_calloc(nn, 1);
	a->fused_save = ab_malloc(nn * sizeof *a->fused_save);
	int rc;
	if (!a->shapes || !a->vals || !a->rg || !a->wl || !a->wm || !a->cl || !a->layers || !a->costs || !a->layer_node || !a->node_layer ||
	    !a->layer_view || !a->fused_save) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < nn; i++)
		a->node_layer[i] = a->fused_save[i] = -1;
	if ((rc = run(a, err)))
		goto fail;
	a->cfg.inputs = NULL;
	a->cfg.n_inputs = 0;
	*out = a;
	return 0;
fail:
	abacus_analysis_free(a);
	return rc;
}

void abacus_analysis_free(abacus_analysis *a)
{
	if (!a)
		return;
	ab_arena_free(&a->vals_arena); /* every value the analysis made; the others are the graph's */
	ab_free(a->shapes);
	ab_free(a->vals);
	ab_free(a->rg);
	ab_free(a->wl);
	ab_free(a->wm);
	ab_free(a->cl);
	ab_free(a->layers);
	ab_free(a->costs);
	ab_free(a->layer_node);
	ab_free(a->node_layer);
	ab_free(a->layer_view);
	ab_free(a->fused_save);
	ab_free(a->unk_ops);
	ab_free(a->unk_counts);
	ab_free(a->features);
	ab_free(a->msteps);
	ab_free(a);
}

const abacus_totals *abacus_analysis_totals(const abacus_analysis *a)
{
	return &a->totals;
}

const abacus_memory *abacus_analysis_memory(const abacus_analysis *a)
{
	return &a->mem;
}

size_t abacus_analysis_n_memory_steps(const abacus_analysis *a)
{
	return a->n_msteps;
}

const abacus_memory_step *abacus_analysis_memory_step(const abacus_analysis *a, size_t i)
{
	return i < a->n_msteps ? &a->msteps[i] : NULL;
}

static const char *const phase_names[] = { "forward", "loss", "backward", "step" };
_Static_assert(sizeof phase_names / sizeof phase_names[0] == ABACUS_PHASE_COUNT, "phase names out of step");

const char *abacus_phase_name(abacus_phase p)
{
	return (unsigned)p < ABACUS_PHASE_COUNT ? phase_names[p] : "?";
}

size_t abacus_analysis_n_layers(const abacus_analysis *a)
{
	return a->n_layers;
}

const abacus_layer *abacus_analysis_layer(const abacus_analysis *a, size_t i)
{
	return i < a->n_layers ? &a->layers[i] : NULL;
}

const abacus_layer *abacus_analysis_layers(const abacus_analysis *a, size_t *n)
{
	*n = a->n_layers;
	return a->layers;
}

size_t abacus_analysis_n_unknown(const abacus_analysis *a)
{
	return a->n_unk;
}

const char *abacus_analysis_unknown(const abacus_analysis *a, size_t i, int64_t *count)
{
	if (i >= a->n_unk)
		return NULL;
	if (count)
		*count = a->unk_counts[i];
	return a->unk_ops[i];
}

size_t abacus_analysis_n_outputs(const abacus_analysis *a)
{
	return (size_t)a->g->n_outputs;
}

int abacus_analysis_output(const char **name, int *rank, int64_t dims[ABACUS_MAX_RANK], const abacus_analysis *a,
                           size_t i)
{
	if (i >= (size_t)a->g->n_outputs)
		return ABACUS_EINVAL;
	int t = a->g->outputs[i];
	*name = a->g->tensors[t].name;
	*rank = a->shapes[t].rank;
	memcpy(dims, a->shapes[t].dims, sizeof a->shapes[t].dims);
	return 0;
}
