/*
 * memory.c — simulates the memory of one steady-state PyTorch training iteration:
 *
 *   opt.zero_grad(set_to_none=True); loss = crit(model(x), y); loss.backward(); opt.step()
 *
 * Persistent: weights, buffers, optimizer state (momentum; Adam's two moments), the input batch and the
 * target. Gradients do not exist at the start of an iteration (set_to_none). The forward pass allocates
 * each layer's outputs (views share their base's storage), keeps what autograd saves for backward, and
 * frees a tensor once its last consumer ran and nobody saved it. The backward pass walks the layers in
 * reverse: it allocates input gradients, parameter gradients (kept until the step), and frees each
 * layer's saved tensors and its outputs' gradients. The step then runs with all gradients live (Adam
 * makes two parameter-sized temporaries at a time), or, for a runtime whose Adam updates a parameter as soon
 * as its gradient exists (TensorFlow's), in each layer's backward; TensorFlow's SGD also, with each parameter's
 * momentum product made before the forward (step.sgd_momentum_early), and some layers' parameter gradients
 * after the whole backward (weight_grad_late). The peak and its breakdown are recorded at the
 * moment the live total is largest.
 */
#include <stdint.h>
#include <string.h>

#include "analysis.h"
#include "runtime.h"

typedef struct sim {
	int64_t live;          /* everything not persistent */
	int64_t saved;         /* activation storage kept for backward (part of live) */
	int64_t extra;         /* extra saved buffers: indices, masks, statistics (part of live) */
	int64_t pgrad;         /* parameter gradients (part of live) */
	int64_t graph;         /* autograd records that live until the graph dies (part of extra) */
	int64_t peak;
	abacus_memory at_peak;
	int overflow;
	int *gbuf;             /* per storage with an activation gradient: the storage whose buffer holds it */
	int *gref;             /* per gradient buffer: how many storages' gradients it holds */
	int *pstamp;           /* per parameter: the last backward layer that made a gradient for it */
	int layer;             /* the layer running backward */
	int consumer;          /* it reads weights to make activations (not a view or copy of a weight) */
	int64_t accum;         /* its transient bytes of parameter-gradient accumulation */
	int eager;             /* each parameter is updated, and its gradient freed, in the backward that made it */
	int64_t pnew, pnew_max; /* eager: the parameter gradients this layer made, in all and the largest */
	int64_t pnew_data;     /* eager: their parameters' bytes (what their early momentum products hold) */
	int64_t early;         /* SGD's momentum products made at the step's start, not yet consumed by an update */
	int momentum_early;    /* the runtime's step.sgd_momentum_early applies (SGD) */
	int64_t step_peak;     /* the largest live total since the current step began */
	/* step.eager_locals: bytes the forward freed at their last use that a hand-written forward's local names
	 * may still hold (held_scopes), per forward position the bytes whose forward returns there (release), and
	 * the largest live total with them (held_peak). */
	int64_t held, held_peak, *release;
	abacus_memory_step *ev; /* the steps so far (abacus_memory_step, live beyond the persistent state) */
	size_t n_ev, cap_ev;
} sim;

static void touch(sim *s)
{
	if (s->live > s->step_peak)
		s->step_peak = s->live;
	if (s->live > s->peak) {
		s->peak = s->live;
		s->at_peak.gradients = s->pgrad;
		s->at_peak.activations = s->saved + s->extra;
		s->at_peak.workspace = s->live - s->pgrad - s->saved - s->extra;
	}
}

static void add(sim *s, int64_t *field, int64_t b)
{
	if (ab_add(s->live, b, &s->live) || (field && ab_add(*field, b, field)))
		s->overflow = 1;
	touch(s);
}

static void sub(sim *s, int64_t *field, int64_t b)
{
	s->live -= b;
	if (field)
		*field -= b;
}

/* A step of the iteration begins, and ends (its peak and what it leaves live recorded). */
static void begin_step(sim *s)
{
	s->step_peak = s->live;
}

static void end_step(sim *s, abacus_phase phase, int64_t layer)
{
	if (s->n_ev < s->cap_ev)
		s->ev[s->n_ev++] = (abacus_memory_step){ .phase = phase, .layer = layer, .peak = s->step_peak, .live = s->live };
}

static int64_t bytes(const ab_shape *sh);

/* The gradients of the parameters that tensor t is or is computed from, allocated when the first layer
 * reading t runs backward: one buffer per parameter, however many layers read it (PyTorch accumulates).
 * The accumulation is not free: a weight read by two layers (a tied embedding and output projection, an
 * embedding looked up twice, a layer applied twice) gets its second gradient while the first waits in
 * autograd's input buffer, and the two are summed out of place: for a moment three weight-sized
 * buffers live where one stays (measured here: Embedding, Linear and Conv2d weights read twice peak
 * at 3.0x the weight in backward and end at 1x; a third reader adds one more, summed in place). Those
 * transient bytes go to s->accum, charged at the reading layer with its workspace; a layer reaching
 * the same weight through several slices of it (an LSTM's gate-reordered W) counts once.
 * A weight the exporter transposed or reshaped in a node of its own (often hoisted to the graph's start)
 * gets its gradient in its consumer's backward, as the Linear that PyTorch runs does, not at the view's
 * place: convnext's were all made at the very end of backward, after the activations were freed,
 * and its backward peak (all gradients with the early stages' activations) went unseen. */
static void param_grads(const abacus_analysis *a, sim *s, unsigned char *grad, int t, int depth)
{
	const ab_tensor *gt = &a->g->tensors[t];
	if (gt->is_param) {
		if (s->pstamp[t] == s->layer)
			return;
		s->pstamp[t] = s->layer;
		if (!grad[t]) {
			grad[t] = 1;
			add(s, &s->pgrad, bytes(&a->shapes[t]) + a->rt->step.grad_tensor_bytes);
			if (s->eager) { /* freed with its bookkeeping once the update has run */
				s->pnew += bytes(&a->shapes[t]) + a->rt->step.grad_tensor_bytes;
				s->pnew_data += bytes(&a->shapes[t]);
				if (bytes(&a->shapes[t]) > s->pnew_max)
					s->pnew_max = bytes(&a->shapes[t]);
			}
		} else if (s->consumer) {
			int in_place = a->rt->step.gather_grad_in_place && s->layer >= 0 &&
			               !strcmp(a->g->nodes[a->layer_node[s->layer]].op, "Gather");
			s->accum += (grad[t] == 1 && !in_place ? 2 : 1) * bytes(&a->shapes[t]);
			grad[t] = 2;
		}
		return;
	}
	if (gt->producer < 0 || depth > 16)
		return;
	const ab_node *n = &a->g->nodes[gt->producer];
	for (int i = 0; i < n->n_in; i++)
		if (n->in[i] >= 0 && a->rg[n->in[i]])
			param_grads(a, s, grad, n->in[i], depth + 1);
}

static int64_t bytes(const ab_shape *sh)
{
	int64_t b;
	int sz = ab_dtype_size(sh->dtype);
	if (!sh->known || ab_mul(sh->numel, sz ? sz : 4, &b))
		return 0;
	return b;
}

/* Only activations count: initializers, graph inputs and folded constants are not simulated storage;
 * weight-like tensors (transposed or sliced parameters) are views of parameters in PyTorch. Those a kernel
 * computes from parameters (a->wm: an S4 kernel, a position-embedding lookup) are tensors of their own,
 * whatever the batch: s4d's four [128, 16, 256] kernels (exp, product, sum, each 2 MiB, kept for backward)
 * were 44 % of its measured peak at batch 1, and the simulation had none of them. */
static int is_activation(const abacus_analysis *a, int t)
{
	const abacus_graph *g = a->g;
	return g->tensors[t].kind == AB_T_VALUE && a->node_layer[g->tensors[t].producer] >= 0 && (!a->wl[t] || a->wm[t]);
}

/* A parameter, or a view of one, whose gradient is a parameter's (param_grads), not an activation's. */
static int weight_view(const abacus_analysis *a, int t)
{
	return a->g->tensors[t].is_param || (a->wl[t] && !a->wm[t]);
}

/* View layers (and ops that return their input, like a p = 0 Dropout) share their input's storage, unless
 * the view is a reshape PyTorch has to copy (copies: reshape_copies, NULL for none). */
static int is_view(const abacus_analysis *a, const unsigned char *copies, size_t L)
{
	return (a->layer_view[L] == AB_LAYER_VIEW || a->layer_view[L] == AB_LAYER_FREE) && !(copies && copies[L]);
}

/* PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): the strides `ns` that view a tensor of shape `o`
 * and strides `os` as shape `n`, or 0 where none can (reshape then copies). Old dimensions are taken in
 * chunks laid out contiguously over one another; each chunk must be covered exactly by new dimensions. */
static int compute_stride(const ab_shape *o, const int64_t *os, const ab_shape *n, int64_t *ns)
{
	if (o->numel == 0 || o->rank == 0) { /* nothing to lay out, or a scalar: any shape views it */
		for (int d = 0; d < n->rank; d++)
			ns[d] = 1;
		return 1;
	}
	int vd = n->rank - 1;
	int64_t base = os[o->rank - 1], tn = 1, vn = 1;
	for (int td = o->rank - 1; td >= 0; td--) {
		tn *= o->dims[td];
		if (td == 0 || (o->dims[td - 1] != 1 && os[td - 1] != tn * base)) {
			while (vd >= 0 && (vn < tn || n->dims[vd] == 1)) {
				ns[vd] = vn * base;
				vn *= n->dims[vd];
				vd--;
			}
			if (vn != tn)
				return 0;
			if (td > 0) {
				base = os[td - 1];
				tn = vn = 1;
			}
		}
	}
	return vd == -1;
}

/* Layouts are followed for tensors up to this many elements, so that strides and their products in
 * compute_stride stay within 64 bits. */
#define AB_STRIDES_NUMEL_MAX ((int64_t)1 << 31)

/* The strides of tensor t over its storage (elements), following its chain of views back to the kernel
 * output, graph input or copying reshape that made the storage (contiguous); 0 where the chain holds a view
 * whose layout is not followed. */
static int view_strides(const abacus_analysis *a, const unsigned char *copies, int t, int64_t *st, int depth)
{
	const ab_shape *sh = &a->shapes[t];
	int p = a->g->tensors[t].producer;
	int L = p >= 0 ? a->node_layer[p] : -1;
	if (!sh->known || sh->rank > ABACUS_MAX_RANK || sh->numel > AB_STRIDES_NUMEL_MAX)
		return 0;
	/* A recurrent layer's output is laid out by the exporter's glue (ONNX's [seq, dirs, batch, hidden],
	 * transposed and reshaped back to what PyTorch's one kernel makes directly): not followed. */
	if (L >= 0 && a->layers[L].category == ABACUS_CAT_RECURRENT)
		return 0;
	if (L < 0 || !is_view(a, copies, (size_t)L)) {
		int64_t acc = 1;
		for (int d = sh->rank - 1; d >= 0; d--) {
			st[d] = acc;
			acc *= sh->dims[d] > 0 ? sh->dims[d] : 1;
		}
		return 1;
	}
	const ab_node *n = &a->g->nodes[p];
	const ab_opdef *def = ab_node_def(n);
	int64_t in[ABACUS_MAX_RANK];
	/* A kernel the runtime folds into its producer (a Linear's bias Add, runtime_torch_fusion.c) is the
	 * storage of its activation input, laid out as it is. */
	int src = n->n_in > 0 ? n->in[0] : -1, kind = def ? def->strides : AB_STRIDES_NONE;
	if (def && !(def->flags & AB_OP_VIEW)) {
		kind = AB_STRIDES_SAME;
		for (int i = 0; i < n->n_in; i++)
			if (n->in[i] >= 0 && !a->vals[n->in[i]] && !a->wl[n->in[i]]) {
				src = n->in[i];
				break;
			}
	}
	if (kind == AB_STRIDES_NONE || depth > 16 || src < 0 || !view_strides(a, copies, src, in, depth + 1))
		return 0;
	const ab_shape *x = &a->shapes[src];
	switch (kind) {
	case AB_STRIDES_SAME:
	case AB_STRIDES_SLICE: /* a range of an axis (step 1, as the exporter's chunks and splits are) */
		if (x->rank != sh->rank)
			return 0;
		memcpy(st, in, (size_t)sh->rank * sizeof *st);
		return 1;
	case AB_STRIDES_PERMUTE: {
		size_t np = 0;
		const int64_t *perm = ab_attr_ints(n, "perm", &np);
		if (x->rank != sh->rank || (perm && np != (size_t)sh->rank))
			return 0;
		for (int d = 0; d < sh->rank; d++) {
			int64_t from = perm ? perm[d] : sh->rank - 1 - d;
			if (from < 0 || from >= x->rank)
				return 0;
			st[d] = in[from];
		}
		return 1;
	}
	case AB_STRIDES_EXPAND: {
		int off = sh->rank - x->rank;
		if (off < 0)
			return 0;
		for (int d = 0; d < sh->rank; d++)
			st[d] = d < off || (x->dims[d - off] == 1 && sh->dims[d] != 1) ? 0 : in[d - off];
		return 1;
	}
	case AB_STRIDES_RESHAPE:
		return compute_stride(x, in, sh, st);
	}
	return 0;
}

/* Tensor t is a view of storage sd holding all of its elements in another order (a transpose or permute,
 * possibly reshaped): a gradient a kernel makes for t, row-major in t's shape, is sd's gradient laid out
 * permuted. Slices (fewer elements) and expansions (more) are not: their gradients are tensors of their own. */
static int permuted_view(const abacus_analysis *a, const unsigned char *copies, int t, int sd)
{
	const ab_shape *sh = &a->shapes[t];
	int64_t st[ABACUS_MAX_RANK];
	if (t == sd || !a->shapes[sd].known || sh->numel != a->shapes[sd].numel || !view_strides(a, copies, t, st, 0))
		return 0;
	int64_t acc = 1;
	for (int d = sh->rank - 1; d >= 0; d--) {
		if (sh->dims[d] != 1 && st[d] != acc)
			return 1;
		acc *= sh->dims[d];
	}
	return 0;
}

/* Which view layers are copies (1 per layer): under a runtime whose reshape copies (reshape_copies), a
 * Reshape, Flatten, Squeeze or Unsqueeze of an activation whose strides no view of the new shape can express.
 * PyTorch's reshape is view() where computeStride finds strides, else clone() into a tensor of its own, the
 * input's storage then free once its other readers ran. nn.MultiheadAttention (1.13) splits its [L, N, 3E]
 * in-projection into q, k and v along the last axis and views each as [L, N·heads, E/heads]: three copies,
 * after which the projection dies; bmm keeps the copies of k and v. Measured 2026-12-05 with the allocator
 * tracker (/tmp/wt-mem2-probe/p_ax.py, per aten op), axial_transformer 3×32×32 at batch 4: each attention's
 * 786,432 B projection freed after the three 262,144 B clones; with the slices as views of it, the projection
 * stayed until backward, one [L, N, E] more per attention than PyTorch keeps (the forward ended 1.43 MB, two
 * such tensors per block, above the measured 16.82 MB). */
static void reshape_copies(const abacus_analysis *a, unsigned char *copies)
{
	if (!a->rt->step.reshape_copies)
		return;
	for (size_t L = 0; L < a->n_layers; L++) {
		const ab_node *n = &a->g->nodes[a->layer_node[L]];
		const ab_opdef *def = ab_node_def(n);
		int64_t in[ABACUS_MAX_RANK], out[ABACUS_MAX_RANK];
		if (a->layer_view[L] != AB_LAYER_VIEW || !def || def->strides != AB_STRIDES_RESHAPE || n->n_in < 1 ||
		    n->in[0] < 0 || n->n_out < 1 || n->out[0] < 0 || !is_activation(a, n->in[0]) ||
		    !a->shapes[n->out[0]].known || !view_strides(a, copies, n->in[0], in, 0))
			continue;
		copies[L] = !compute_stride(&a->shapes[n->in[0]], in, &a->shapes[n->out[0]], out);
	}
}

/* t is an intermediate of a decomposed operator (runtime_torch_fusion.c): the one kernel PyTorch runs never makes it. */
static int fused_internal(const abacus_analysis *a, int t)
{
	int p = a->g->tensors[t].producer;
	return p >= 0 && a->node_layer[p] >= 0 && a->layer_view[a->node_layer[p]] == AB_LAYER_FUSED;
}

/* Storage sd's gradient becomes a buffer of its own, the storage's size. */
static void own_grad(const abacus_analysis *a, sim *s, unsigned char *grad, int sd)
{
	grad[sd] = 1;
	s->gbuf[sd] = sd;
	s->gref[sd] = 1;
	add(s, NULL, bytes(&a->shapes[sd]));
}

/* At a decomposed operator's kernel (the pattern's last node), the gradients of the pattern's own inputs,
 * found back through its intermediates: PyTorch's one backward kernel (GELU's, LayerNorm's) makes them
 * while its output's gradient is live, and never the intermediates' (the pattern's other nodes). */
static void pattern_input_grads(const abacus_analysis *a, sim *s, unsigned char *grad, const int *sid, int t,
                                int depth)
{
	const ab_node *n = &a->g->nodes[a->g->tensors[t].producer];
	for (int i = 0; i < n->n_in && depth <= 16; i++) {
		int u = n->in[i];
		if (u < 0 || !a->rg[u])
			continue;
		if (weight_view(a, u))
			param_grads(a, s, grad, u, 0);
		else if (fused_internal(a, u))
			pattern_input_grads(a, s, grad, sid, u, depth + 1);
		else if (!grad[sid[u]] && is_activation(a, sid[u]))
			own_grad(a, s, grad, sid[u]);
	}
}

enum { MAX_SAVED = 34 };

/* The tensors layer L keeps for backward: by its op's masks (activation inputs, any output), or for a
 * fused pattern (runtime_torch_fusion.c) the pattern's input at its first node and nothing at the others. */
static int saved_list(const abacus_analysis *a, size_t L, const unsigned char *reach, int out[MAX_SAVED])
{
	const ab_node *n = &a->g->nodes[a->layer_node[L]];
	const ab_cost *k = &a->costs[L];
	int ns = 0;
	if (a->fused_save[L] == AB_SAVE_NOTHING || (reach && !reach[L]))
		return 0;
	if (a->fused_save[L] >= 0) {
		int t = a->fused_save[L];
		if (is_activation(a, t) && !a->vals[t])
			out[ns++] = t;
		return ns;
	}
	if (a->layer_view[L] == AB_LAYER_FUSED)
		return 0;
	for (int i = 0; i < n->n_in && i < 16; i++) {
		int t = n->in[i];
		if (t >= 0 && (k->in_mask >> i & 1) && is_activation(a, t) && !a->vals[t])
			out[ns++] = t;
	}
	for (int o = 0; o < n->n_out && o < 16; o++) {
		int t = n->out[o];
		if (t >= 0 && (k->out_mask >> o & 1))
			out[ns++] = t;
	}
	return ns;
}

/* Per storage (the tensor that owns a buffer; views share their base's): the simulation's bookkeeping. */
typedef struct storages {
	int *sid;                /* per tensor: its storage */
	int *uses;               /* pending forward consumers per storage */
	int *saved_refs;         /* layers that saved it and have not run backward yet */
	unsigned char *alive;    /* allocated and not yet freed */
	unsigned char *pinned;   /* graph outputs: kept for the loss */
	unsigned char *grad;     /* its gradient is allocated */
	unsigned char *gmean;    /* that gradient is a ReduceMean's, as it left it */
	unsigned char *gstrided; /* that gradient is strided, a permuted view of a bmm's output */
	unsigned char *copies;   /* per layer: a view layer that copies (reshape_copies); not owned */
	int *gbuf, *gref, *pstamp; /* see sim */
	unsigned char *reach;    /* per layer: a gradient reaches it (grad_reach); not owned */
	unsigned char *part;     /* per tensor: a part of its storage made by a Split (AB_OP_PARTS), or a view of one */
	unsigned char *tgrad;    /* per such part: its own gradient is held */
	int64_t *gpart;          /* per storage: bytes of its parts' gradients held, not yet concatenated */
	int *held_until;         /* per layer: held_scopes's forward position, -1 when none; NULL: not eager */
	int *hold;               /* per storage: the latest held_until of the layers that made it or a view of it */
} storages;

static void storages_free(storages *st)
{
	ab_free(st->sid);
	ab_free(st->uses);
	ab_free(st->saved_refs);
	ab_free(st->alive);
	ab_free(st->pinned);
	ab_free(st->grad);
	ab_free(st->gmean);
	ab_free(st->gstrided);
	ab_free(st->gbuf);
	ab_free(st->gref);
	ab_free(st->pstamp);
	ab_free(st->part);
	ab_free(st->tgrad);
	ab_free(st->gpart);
	ab_free(st->held_until);
	ab_free(st->hold);
}

static int storages_alloc(storages *st, size_t nt)
{
	st->sid = ab_malloc(nt * sizeof *st->sid);
	st->uses = ab_calloc(nt, sizeof *st->uses);
	st->saved_refs = ab_calloc(nt, sizeof *st->saved_refs);
	st->alive = ab_calloc(nt, 1);
	st->pinned = ab_calloc(nt, 1);
	st->grad = ab_calloc(nt, 1);
	st->gmean = ab_calloc(nt, 1);
	st->gstrided = ab_calloc(nt, 1);
	st->gbuf = ab_malloc(nt * sizeof *st->gbuf);
	st->gref = ab_calloc(nt, sizeof *st->gref);
	st->pstamp = ab_malloc(nt * sizeof *st->pstamp);
	st->part = ab_calloc(nt, 1);
	st->tgrad = ab_calloc(nt, 1);
	st->gpart = ab_calloc(nt, sizeof *st->gpart);
	st->hold = ab_malloc(nt * sizeof *st->hold);
	if (!st->hold || !st->sid || !st->uses || !st->saved_refs || !st->alive || !st->pinned || !st->grad || !st->gmean ||
	    !st->gstrided || !st->gbuf || !st->gref || !st->pstamp || !st->part || !st->tgrad || !st->gpart)
		return -1;
	for (size_t t = 0; t < nt; t++) {
		st->sid[t] = (int)t;
		st->gbuf[t] = (int)t;
		st->pstamp[t] = -1;
		st->hold[t] = -1;
	}
	return 0;
}

/* Weights, buffers (with the runtime's own state), optimizer state, inputs and the loss's target: live
 * through the whole iteration. Returns the largest parameter's bytes (Adam's step temporaries). */
static int64_t persistent_state(abacus_analysis *a)
{
	const abacus_graph *g = a->g;
	abacus_memory *m = &a->mem;
	int64_t max_param = 0, n_buffers = 0;
	for (int t = 0; t < g->n_tensors; t++) {
		const ab_tensor *gt = &g->tensors[t];
		if (gt->kind != AB_T_INIT || gt->n_consumers == 0)
			continue;
		int64_t b = bytes(&a->shapes[t]);
		if (gt->is_param) {
			ab_sat_add(&m->weights, b);
			a->param_tensors++;
			max_param = b > max_param ? b : max_param;
		} else if (!a->vals[t] || a->shapes[t].numel > 64) {
			ab_sat_add(&m->buffers, b); /* running statistics and other non-trainable state */
			n_buffers++;
		}
	}
	/* A batch norm trained with running statistics also keeps num_batches_tracked, which the graph lacks. */
	for (int i = 0; i < g->n_nodes; i++)
		if (!strcmp(g->nodes[i].op, "BatchNormalization") && g->nodes[i].n_in >= 5 &&
		    g->nodes[i].in[3] >= 0 && g->tensors[g->nodes[i].in[3]].kind == AB_T_INIT)
			n_buffers++;
	m->optimizer = m->weights;
	if (a->cfg.optimizer == ABACUS_OPT_ADAM)
		ab_sat_add(&m->optimizer, m->weights);
	/* The target: class labels (int64 per sample) for a 2-D output, else a zero tensor like the output. */
	const ab_shape *y = &a->shapes[g->outputs[0]];
	if (y->rank == 2) {
		a->target_bytes = 8 * y->dims[0];
		a->loss_bytes = bytes(y); /* cross-entropy keeps its log-softmax until its backward */
	} else {
		a->target_bytes = bytes(y);
		a->loss_bytes = bytes(y); /* MSE: the unreduced squared error, kept by the loss (below) */
	}
	m->inputs = a->input_bytes + a->target_bytes;
	/* The runtime's own state between steps (TensorFlow's traced step; PyTorch's: none beyond the tensors' own, below). */
	if (a->rt->state_bytes)
		ab_sat_add(&m->buffers, a->rt->state_bytes(a));
	/* Every tensor the model keeps costs host memory beyond its data (counted with the buffers). */
	const ab_step_memory *rs = &a->rt->step;
	int64_t per_param = rs->param_tensor_bytes +
	                    (a->cfg.optimizer == ABACUS_OPT_ADAM ? rs->adam_state_bytes : rs->sgd_state_bytes);
	ab_sat_add(&m->buffers, per_param * (int64_t)a->param_tensors + rs->buffer_tensor_bytes * n_buffers);
	m->persistent = m->weights + m->buffers + m->optimizer + m->inputs;
	return max_param;
}

/* Storage ids follow views back to their base; forward consumers are counted per storage. */
static void storage_ids(const abacus_analysis *a, storages *st)
{
	const abacus_graph *g = a->g;
	for (size_t L = 0; L < a->n_layers; L++) {
		const ab_node *n = &g->nodes[a->layer_node[L]];
		if (!is_view(a, st->copies, L))
			continue;
		/* The storage a view shares: its first input that is not a constant or a weight (a bias Add
		 * made a view, runtime_torch_fusion.c, may name the bias first), else its first. */
		int src = n->n_in > 0 ? n->in[0] : -1;
		for (int i = 0; i < n->n_in; i++)
			if (n->in[i] >= 0 && !a->vals[n->in[i]] && !a->wl[n->in[i]]) {
				src = n->in[i];
				break;
			}
		if (src >= 0)
			for (int o = 0; o < n->n_out; o++)
				if (n->out[o] >= 0) {
					st->sid[n->out[o]] = st->sid[src];
					st->part[n->out[o]] = (unsigned char)((ab_node_flags(n) & AB_OP_PARTS) || st->part[src]);
				}
	}
	for (size_t L = 0; L < a->n_layers; L++) {
		const ab_node *n = &g->nodes[a->layer_node[L]];
		for (int k = 0; k < n->n_in; k++)
			if (n->in[k] >= 0)
				st->uses[st->sid[n->in[k]]]++;
	}
	for (int k = 0; k < g->n_outputs; k++)
		st->pinned[st->sid[g->outputs[k]]] = 1;
}

/* Layer L's outputs are computed from parameters and constants alone (a->wl): a weight's view, or a
 * tensor PyTorch computes from weights (a->wm). */
static int weight_layer(const abacus_analysis *a, size_t L)
{
	const ab_node *n = &a->g->nodes[a->layer_node[L]];
	return n->n_out > 0 && n->out[0] >= 0 && a->wl[n->out[0]];
}

/* Appends layer L to the order, after the deferred weight layers it reads that are not in it yet. */
static void emit(const abacus_analysis *a, size_t L, unsigned char *done, size_t *ord, size_t *n, int depth)
{
	const ab_node *nd = &a->g->nodes[a->layer_node[L]];
	done[L] = 1;
	for (int i = 0; i < nd->n_in && depth < 64; i++) {
		int t = nd->in[i], p = t >= 0 ? a->g->tensors[t].producer : -1;
		int pl = p >= 0 ? a->node_layer[p] : -1;
		if (pl >= 0 && !done[pl])
			emit(a, (size_t)pl, done, ord, n, depth + 1);
	}
	ord[(*n)++] = L;
}

/* The order PyTorch runs the layers in: the graph's, except that what is computed from weights alone
 * runs where it is first read. The exporter hoists such nodes to the graph's start (an S4 layer's kernel,
 * exp(dt·A·lags), 2 MiB each: s4d's four were all live at once in the simulated forward, +11 % at batch
 * 1), while the module computes each inside its layer's forward, and backward runs in reverse. */
static void layer_order(const abacus_analysis *a, const size_t *base, unsigned char *done, size_t *ord)
{
	size_t n = 0;
	for (size_t j = 0; j < a->n_layers; j++)
		if (!done[base[j]] && !weight_layer(a, base[j]))
			emit(a, base[j], done, ord, &n, 0);
	for (size_t j = 0; j < a->n_layers; j++)
		if (!done[base[j]])
			emit(a, base[j], done, ord, &n, 0);
}

/* The order layer_order starts from: the analysis's (the graph's topological order, breadth first: Kahn's
 * algorithm with a queue, graph.c), or, for a runtime that runs the operations as the program made them
 * (step.program_order: PyTorch's eager step, whose exporter lists the nodes in the order the module ran
 * them), the file's order where that is a topological order of the layers. Breadth first interleaves a
 * block's branches, which PyTorch runs one after the other: resnest_d's ResNet-D shortcut (AvgPool, 1×1 Conv,
 * BatchNorm) ran beside the block's first convolution instead of after its split attention, and so, reversed,
 * the simulated backward made the shortcut's gradients (its 1×1 weight's, 131 kB, and its input's) after the
 * split attention's grouped convolution, whose backward is the peak, where PyTorch's engine, which runs the
 * nodes in the reverse of the order they were made, makes them before it (the allocator tracker, resnest_d
 * 64×64 batch 1: 165 kB more live at that convolution's backward than simulated; nerf_mlp's eight Linears
 * and neural_ode's sixteen evaluations of one function were put out of order the same way). pos is scratch. */
static void base_order(const abacus_analysis *a, size_t *base, size_t *pos)
{
	const abacus_graph *g = a->g;
	size_t n = 0;
	for (size_t L = 0; L < a->n_layers; L++) {
		base[L] = L;
		pos[L] = SIZE_MAX;
	}
	if (!a->rt->step.program_order)
		return;
	for (int i = 0; i < g->n_nodes && n < a->n_layers; i++) {
		int L = a->node_layer[i];
		if (L >= 0 && pos[L] == SIZE_MAX) {
			pos[L] = n;
			base[n++] = (size_t)L;
		}
	}
	int topological = n == a->n_layers;
	for (size_t L = 0; L < a->n_layers && topological; L++) {
		const ab_node *nd = &g->nodes[a->layer_node[L]];
		for (int k = 0; k < nd->n_in && topological; k++) {
			int p = nd->in[k] >= 0 ? g->tensors[nd->in[k]].producer : -1;
			int pl = p >= 0 ? a->node_layer[p] : -1;
			topological = pl < 0 || pos[pl] <= pos[L];
		}
	}
	if (!topological)
		for (size_t L = 0; L < a->n_layers; L++)
			base[L] = L;
}

/* Which layers a gradient reaches: those with an output on a differentiable path to the loss (reach,
 * per layer; gc, per tensor, scratch). A layer off it (a VQ codebook's distances before ArgMin, a
 * router's scores before TopK's indices) keeps nothing for a backward that never runs: PyTorch frees its
 * autograd node, and what it saved, with its outputs, and no gradient is made for its inputs (the
 * outside set's VQ autoencoder, measured with the allocator tracker, batch 4: +14 % → −8 %). */
static void grad_reach(const abacus_analysis *a, const size_t *ord, unsigned char *reach, unsigned char *gc)
{
	gc[a->g->outputs[0]] = 1;
	for (size_t j = a->n_layers; j-- > 0;) {
		size_t L = ord[j];
		const ab_node *n = &a->g->nodes[a->layer_node[L]];
		for (int o = 0; o < n->n_out && !reach[L]; o++)
			reach[L] = n->out[o] >= 0 && gc[n->out[o]];
		if (!reach[L] || (ab_node_flags(n) & AB_OP_NOGRAD))
			continue;
		for (int i = 0; i < n->n_in; i++)
			if (n->in[i] >= 0 && a->rg[n->in[i]])
				gc[n->in[i]] = 1;
	}
}

/* The host memory of layer L's autograd record: every operation on a tensor that requires grad (a kernel,
 * a view, a decomposed operator's one kernel at its last node; not a weight's view, which PyTorch folds
 * into its reader, nor a layer no gradient reaches) makes a Node, which lives until the graph dies after
 * the step (node_bytes), and a handle per activation it saves, released at its backward (handle_bytes).
 * Measured 2026-12-05 with the allocator tracker, chains of 200 operations on [1, 4, 2, 2] tensors, bytes
 * per operation kept after the backward (the Node) and held until it (the saved tensors' handles): a view
 * or an Add 540 / 0, ReLU and tanh 620 / 370, x·x 740 / 600, a convolution 1,040 / 590, a Linear 1,520 /
 * 1,080, GroupNorm 1,610 / 1,240. A recurrent layer's records and handles are its own rule's (graph_bytes,
 * measured whole). A layer that returns its input itself (a p = 0 or inference Dropout, ab_cost.identity)
 * is no operation to autograd: no Node. */
static int64_t records(const abacus_analysis *a, size_t L, const unsigned char *reach)
{
	if (!reach[L] || a->layer_view[L] == AB_LAYER_FUSED || a->layer_view[L] == AB_LAYER_FREE ||
	    (weight_layer(a, L) && !a->wm[a->g->nodes[a->layer_node[L]].out[0]]) || a->costs[L].graph_bytes ||
	    a->costs[L].identity)
		return 0;
	return a->rt->step.node_bytes;
}

/* The handles of the `ns` activations layer L saves (see records), held from its forward to its backward. */
static int64_t handles(const abacus_analysis *a, size_t L, int ns)
{
	return a->costs[L].graph_bytes ? 0 : (int64_t)ns * a->rt->step.handle_bytes;
}

/* A scope of held_scopes: a node-name prefix ending before one of its '/'. */
typedef struct scope {
	const char *name;
	size_t len;
	int last;               /* the forward position of the last layer in it or below it */
	unsigned char child;    /* some layer's scope lies below it: a hand-written forward's body */
} scope;

static uint64_t scope_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return h ^ len;
}

static scope *scope_find(scope *tab, size_t mask, const char *s, size_t len)
{
	for (size_t i = scope_hash(s, len) & mask;; i = (i + 1) & mask)
		if (!tab[i].name || (tab[i].len == len && !memcmp(tab[i].name, s, len))) {
			tab[i].name = s;
			tab[i].len = len;
			return &tab[i];
		}
}

/* The scope of a PyTorch exporter's node name ("/layer1/layer1.0/Add": the module layer1.0's forward; "/Sub":
 * the model's own), as the length of its prefix before the last '/', or -1 for a name of another form. */
static long name_scope(const char *nm)
{
	if (!nm || nm[0] != '/')
		return -1;
	return (long)(strrchr(nm, '/') - nm);
}

/* What Python names in hand-written forwards may hold (step.eager_locals). PyTorch's exporter names each node
 * after the module whose forward ran it, so a scope with scopes below it is a forward written by hand (a
 * block's, the model's: "/Sub" beside "/enc/enc.0/Conv"), and a value that its own body's operations make may
 * be bound to a local name or put in a list there (`dist = ...; idx = dist.argmin(1)`), alive after its
 * last use until that forward returns; a module with no scopes below (a Conv, a decomposed norm) returns what
 * it makes. The outside set's VQ autoencoder held its 576×256 codebook distances through its decoder (the
 * allocator tracker, 96×96 batch 1: live 0.9 MB above the simulation there, peak 10 % above it) and HRNet a
 * list of upsampled branches through its head; which values have names the file cannot say, so these
 * bytes go to the interval's upper end (abacus_memory.held_peak), not to the prediction. held_until[L]: the
 * forward position of the last layer in L's scope when that scope is a hand-written body, else -1. */
static int held_scopes(const abacus_analysis *a, const size_t *ord, int *held_until)
{
	size_t n = 0, cap = 1;
	for (size_t L = 0; L < a->n_layers; L++) {
		held_until[L] = -1;
		const char *nm = a->g->nodes[a->layer_node[L]].name;
		if (name_scope(nm) >= 0)
			for (const char *c = nm; *c; c++)
				n += *c == '/';
	}
	while (cap < 2 * n + 2)
		cap *= 2;
	scope *tab = ab_calloc(cap, sizeof *tab);
	if (!tab)
		return -1;
	for (size_t p = 0; p < a->n_layers; p++) {
		const char *nm = a->g->nodes[a->layer_node[ord[p]]].name;
		long sc = name_scope(nm);
		for (long i = 0; sc >= 0 && i <= sc; i++)
			if (nm[i] == '/') {
				scope *e = scope_find(tab, cap - 1, nm, (size_t)i);
				e->last = (int)p;
				e->child |= i < sc;
			}
	}
	for (size_t L = 0; L < a->n_layers; L++) {
		const char *nm = a->g->nodes[a->layer_node[L]].name;
		long sc = name_scope(nm);
		if (sc >= 0) {
			const scope *e = scope_find(tab, cap - 1, nm, (size_t)sc);
			held_until[L] = e->child ? e->last : -1;
		}
	}
	ab_free(tab);
	return 0;
}

static void forward_pass(const abacus_analysis *a, storages *st, sim *s, const size_t *ord)
{
	const abacus_graph *g = a->g;
	int *sid = st->sid;
	for (size_t step = 0; step < a->n_layers; step++) {
		size_t L = ord[step];
		const ab_node *n = &g->nodes[a->layer_node[L]];
		const ab_cost *k = &a->costs[L];
		int sv[MAX_SAVED], ns = saved_list(a, L, st->reach, sv);
		int64_t held0 = s->held;
		begin_step(s);
		if (st->held_until)
			for (int o = 0; o < n->n_out; o++)
				if (n->out[o] >= 0 && st->held_until[L] > st->hold[sid[n->out[o]]])
					st->hold[sid[n->out[o]]] = st->held_until[L];
		/* Outputs that nobody reads and nothing saves (BatchNorm's running statistics, which PyTorch
		 * updates in place; Dropout's bool mask, which the CPU path never makes) are not allocated, nor
		 * the intermediates of a decomposed operator (fused_internal). */
		for (int o = 0; o < n->n_out; o++) {
			int t = n->out[o];
			if (t < 0 || sid[t] != t || !is_activation(a, t) || a->layer_view[L] == AB_LAYER_FUSED)
				continue;
			int kept = st->uses[t] > 0 || st->pinned[t];
			for (int j = 0; j < ns && !kept; j++)
				kept = sid[sv[j]] == t;
			if (!kept)
				continue;
			st->alive[t] = 1;
			add(s, NULL, bytes(&a->shapes[t]));
		}
		/* Saved tensors: only those that carry activations (constants and inputs live anyway). */
		for (int j = 0; j < ns; j++)
			if (st->saved_refs[sid[sv[j]]]++ == 0 && st->alive[sid[sv[j]]])
				ab_sat_add(&s->saved, bytes(&a->shapes[sid[sv[j]]]));
		if (a->layer_view[L] != AB_LAYER_FUSED && st->reach[L])
			add(s, &s->extra, k->extra_bytes);
		int64_t rec = k->graph_bytes + records(a, L, st->reach);
		add(s, &s->extra, rec);
		if (ab_add(s->graph, rec, &s->graph))
			s->overflow = 1;
		add(s, &s->extra, handles(a, L, ns));
		/* Transient buffers of the forward kernel itself, live with its outputs and saved tensors. */
		int64_t fws = k->fwd_workspace;
		ab_sat_add(&fws, k->row_major_copy); /* (only ever on a fused pattern's kernel, never a member) */
		add(s, NULL, fws);
		sub(s, NULL, fws);
		/* Free inputs whose last consumer this was, unless saved or a graph output. */
		for (int i = 0; i < n->n_in; i++) {
			int t = n->in[i];
			if (t < 0)
				continue;
			int sd = sid[t];
			if (--st->uses[sd] == 0 && st->alive[sd] && !st->saved_refs[sd] && !st->pinned[sd] &&
			    is_activation(a, sd)) {
				st->alive[sd] = 0;
				sub(s, NULL, bytes(&a->shapes[sd]));
				if (st->held_until && st->hold[sd] > (int)step) {
					s->held += bytes(&a->shapes[sd]);
					s->release[st->hold[sd]] += bytes(&a->shapes[sd]);
				}
			}
		}
		/* Outputs nobody reads (e.g. BatchNorm's running statistics, an unused mask) die at once. */
		for (int o = 0; o < n->n_out; o++) {
			int t = n->out[o];
			if (t >= 0 && sid[t] == t && st->uses[t] == 0 && !st->saved_refs[t] && !st->pinned[t] && st->alive[t]) {
				st->alive[t] = 0;
				sub(s, NULL, bytes(&a->shapes[t]));
			}
		}
		if (s->step_peak + held0 > s->held_peak)
			s->held_peak = s->step_peak + held0;
		if (st->held_until)
			s->held -= s->release[step];
		end_step(s, ABACUS_PHASE_FORWARD, (int64_t)L);
	}
}

/* The loss's forward and the start of backward. Cross-entropy keeps its log-softmax (loss_bytes); its backward
 * holds that, the runtime's extra buffers (ce_backward_buffers) and the output's gradient at once. MSE keeps
 * its unreduced error (loss_bytes), made through the runtime's mse_forward_buffers more, until the step if
 * the runtime says so (mse_keeps_error). The output itself dies once the loss no longer needs it (unless a
 * layer saved it): after the forward for cross-entropy, which keeps its result, not its input; after its
 * backward for MSE. The numbers are the runtime's (runtime_torch_cpu.c says how PyTorch's were measured). */
static void loss_forward(abacus_analysis *a, storages *st, sim *s, int ce)
{
	const ab_step_memory *rt = &a->rt->step;
	const ab_shape *y = &a->shapes[a->g->outputs[0]];
	int out_sid = st->sid[a->g->outputs[0]];
	int free_out = st->alive[out_sid] && !st->saved_refs[out_sid] && is_activation(a, out_sid);
	add(s, NULL, a->loss_bytes);
	if (ce && free_out) {
		st->alive[out_sid] = 0;
		sub(s, NULL, bytes(&a->shapes[out_sid]));
	} else if (!ce) {
		add(s, NULL, rt->mse_forward_buffers * bytes(y));
		sub(s, NULL, rt->mse_forward_buffers * bytes(y));
	}
}

static void loss_backward(abacus_analysis *a, storages *st, sim *s, int ce)
{
	const ab_shape *y = &a->shapes[a->g->outputs[0]];
	int out_sid = st->sid[a->g->outputs[0]];
	int free_out = st->alive[out_sid] && !st->saved_refs[out_sid] && is_activation(a, out_sid);
	const ab_step_memory *rt = &a->rt->step;
	if (ce)
		add(s, NULL, rt->ce_backward_buffers * bytes(y)); /* dL/d(log-softmax) */
	add(s, NULL, bytes(y));                                 /* dL/d(output) */
	st->grad[out_sid] = 1;
	st->gref[out_sid] = 1;
	if (ce) {
		sub(s, NULL, a->loss_bytes + rt->ce_backward_buffers * bytes(y));
	} else if (free_out) {
		st->alive[out_sid] = 0;
		sub(s, NULL, bytes(&a->shapes[out_sid]));
	}
}

/* Input i of node n shares its storage with an earlier input of n. */
static int read_before(const ab_node *n, const int *sid, int i)
{
	for (int j = 0; j < i; j++)
		if (n->in[j] >= 0 && sid[n->in[j]] == sid[n->in[i]])
			return 1;
	return 0;
}

/* Layer n's input gradients: made, or shared with its output's (pass_in: the inputs that receive it, an
 * Add's, or a sum's expanded view of it). An input that already has one (an activation read by several
 * layers) gets this layer's too, a tensor of its own while this backward runs (s->accum) before
 * autograd adds it into the first: measured 2026-12-05 with the allocator tracker, a [B, 1024, 256]
 * activation read by two Linears, B 1 and 4, peaked at least one such tensor above the simulation
 * without it. An Add's or a sum's gradient is no new tensor; a layer reading one tensor twice (x·xᵀ)
 * is not counted twice, nor a member of a decomposed operator, which runs no backward of its own.
 * (PyTorch 1.13 adds the two out of place, old + new: counting that sum too, after the layer released
 * what it saved, put mlp_mixer 0.9 → 2.9 % and a generated mixer 0.1 → 11 % high: a fused LayerNorm
 * releases its input at its kernel, which the simulation does at the pattern's first node.) */
static void input_grads(const abacus_analysis *a, storages *st, sim *s, const ab_node *n, int view,
                        unsigned pass_in, int o0, int fused, unsigned strided, int no_params)
{
	const int *sid = st->sid;
	for (int i = 0; i < n->n_in; i++) {
		int t = n->in[i];
		if (t < 0 || !a->rg[t])
			continue;
		if (weight_view(a, t)) {
			if (!no_params) /* else made later (weight_grads_late) */
				param_grads(a, s, st->grad, t, 0);
			continue;
		}
		if (fused_internal(a, t)) {
			pattern_input_grads(a, s, st->grad, sid, t, 0);
			continue;
		}
		int sd = sid[t];
		/* A part of a split (k or v of one projection, unbind; a chunk): its gradient is a tensor of its own,
		 * the part's size, until the split's backward concatenates the parts (split_backward). */
		if (!view && !fused && st->part[t] && !st->grad[sd] && is_activation(a, sd)) {
			if (st->tgrad[t]) {
				s->accum += bytes(&a->shapes[t]); /* a second gradient of the part, summed out of place */
			} else {
				st->tgrad[t] = 1;
				st->gpart[sd] += bytes(&a->shapes[t]);
				add(s, NULL, bytes(&a->shapes[t]));
			}
			continue;
		}
		int passes = pass_in && i < 32 && (pass_in >> i & 1) &&
		             (a->shapes[sd].numel == a->shapes[o0].numel ||
		              (ab_node_flags(n) & (AB_OP_EXPAND_GRAD | AB_OP_NARROW_GRAD)));
		if (!view && !fused && st->grad[sd] && is_activation(a, sd) && !read_before(n, sid, i)) {
			st->gmean[sd] = 0; /* a second gradient: summed out of place into a plain tensor */
			if (!passes && !(ab_node_flags(n) & AB_OP_EXPAND_GRAD))
				s->accum += bytes(&a->shapes[t]);
		}
		if (!view && !st->grad[sd] && is_activation(a, sd)) {
			st->grad[sd] = 1;
			st->gmean[sd] = (ab_node_flags(n) & AB_OP_MEAN_GRAD) != 0;
			if (passes) {
				st->gbuf[sd] = st->gbuf[o0];
				st->gref[st->gbuf[o0]]++;
			} else {
				own_grad(a, s, st->grad, sd);
				st->gstrided[sd] = (i < 32 && (strided >> i & 1)) ||
				                   (a->rt->step.strided_view_grads && permuted_view(a, st->copies, t, sd));
			}
		}
	}
}

static void backward_release(const abacus_analysis *a, storages *st, sim *s, size_t L);

/* Output-sized buffers layer L's backward holds when its output's gradient arrives strided (a permuted
 * view's: permuted_view; an Einsum operand's): the kernels that want it row-major copy it first. Measured
 * 2026-12-06 with the allocator tracker, PyTorch 1.13.1 and 2.15.0 alike ([8, 256, 64] outputs read
 * through a transpose, peak during the backward kernel above what was live, in output sizes, strided
 * against row-major): the embedding's backward 1.50 against 0.50 (its weight's gradient is half an output
 * there), LayerNorm's 1.01 against 0.00 (no input gradient asked for), a convolution's 3.12 against 2.13,
 * softmax's 2.00 against 1.00; ReLU's, tanh's, sigmoid's and batch norm's the same either way. GELU's
 * holds two (runtime_torch_fusion.c sets its k->strided_grad_buffers, and LayerNorm's one, on the kernel
 * that ends the decomposed pattern). The outside set's conv1d_text and dense_gnn (an embedding read
 * transposed) were 1.8 and 2.1 % short at batch 4. */
static int strided_grad_copies(const abacus_analysis *a, size_t L)
{
	if (!a->rt->step.strided_view_grads) /* (a runtime without strided tensors: TensorFlow's) */
		return 0;
	if (a->costs[L].strided_grad_buffers)
		return a->costs[L].strided_grad_buffers;
	switch (a->layers[L].category) {
	case ABACUS_CAT_CONV:
	case ABACUS_CAT_GROUPCONV:
	case ABACUS_CAT_SOFTMAX:
	case ABACUS_CAT_EMBEDDING:
	case ABACUS_CAT_LAYERNORM:
		return 1;
	default:
		return 0;
	}
}

/* A split's backward (PyTorch's SplitBackward, unbind's stack) makes its input's whole gradient from its
 * parts' (beside them: the whole and the parts are live at once), then the parts are freed; into a
 * gradient the storage already has (read whole elsewhere) it is summed out of place. Measured 2026-12-06
 * with the allocator tracker: the outside set's Perceiver (k and v, one projection unbound, each read by
 * a product) held the parts' 1 MB gradients apart, then stacked them (2 MB) and copied the stack for the
 * projection's backward; the simulation, which gave the storage its whole gradient at the first part, was
 * 1 MB (5 %) high at L512, batch 4. */
static void split_backward(const abacus_analysis *a, storages *st, sim *s, const ab_node *n)
{
	int src = n->n_in > 0 ? n->in[0] : -1;
	if (src < 0)
		return;
	int sd = st->sid[src];
	if (!st->gpart[sd])
		return;
	if (st->grad[sd])
		s->accum += bytes(&a->shapes[sd]);
	else
		own_grad(a, s, st->grad, sd); /* (from here on the storage's parts get no gradients of their own) */
	sub(s, NULL, st->gpart[sd]);
	st->gpart[sd] = 0;
}

/* Layer L's backward: its inputs' gradients made (or sharing its output's buffer), its kernel's
 * transient bytes, its output gradients consumed, what it saved released. A layer whose parameters'
 * gradients the runtime makes after the whole backward (late: runtime.h weight_grad_late) makes only its
 * inputs' gradients here and keeps its output's gradient and what it saved until weight_grads_late. */
static void backward_layer(const abacus_analysis *a, storages *st, sim *s, size_t L, int late)
{
	const abacus_graph *g = a->g;
	int *sid = st->sid;
	const ab_node *n = &g->nodes[a->layer_node[L]];
	const ab_cost *k = &a->costs[L];
	int view = is_view(a, st->copies, L);
	/* Add hands its output's gradient unchanged to every input of the output's shape (AddBackward
	 * returns the one tensor to both branches of a residual, no copy), Sub to its first: those
	 * inputs' gradients share the output's buffer, which lives until the last of them is consumed.
	 * Counting a copy per branch put groupnorm_res's backward peak one activation (+11 %) high.
	 * A sum's backward expands its output's gradient to its input's shape, a view of that buffer
	 * (AB_OP_EXPAND_GRAD): the consumer's backward reads it in place (measured 2026-12-05 with the
	 * allocator tracker: an S4 kernel (c * exp(...)).sum(1) of [128, 16, 256], 2 MiB each, B 1 and 4:
	 * the simulation was one such tensor, +12 %, high while the sum's input got a buffer of its own).
	 * PyTorch's Concat hands each input a narrowed view of its output's gradient (CatBackward's
	 * grad.narrow), so the whole gradient lives until the last input's part is consumed, and the parts
	 * are no tensors of their own (AB_OP_NARROW_GRAD): measured 2026-12-06 with the allocator tracker,
	 * scripts/outside_zoo.py's densecat (cat([x, a]) and cat([x, a, b]), batch 1, 32x32) held the
	 * second cat's 35-channel gradient until a's two gradients were summed, 0.1 MB above the
	 * simulation, which had freed it for a's and b's 16-channel parts. */
	const ab_opdef *def = ab_node_def(n);
	unsigned pass_in = a->rt->grad_pass ? a->rt->grad_pass(def) : def ? def->grad_pass : 0;
	int o0 = n->n_out > 0 ? n->out[0] : -1;
	int pass = !view && o0 >= 0 && sid[o0] == o0 && st->grad[o0] && pass_in;
	s->layer = (int)L;
	s->consumer = !view && !(o0 >= 0 && a->wl[o0]);
	s->accum = 0;
	begin_step(s);
	s->pnew = s->pnew_max = s->pnew_data = 0;
	int64_t live_before = s->live; /* to learn the bytes of gradients this layer allocates */
	if (st->reach[L])
		input_grads(a, st, s, n, view, pass ? pass_in : 0, o0, a->layer_view[L] == AB_LAYER_FUSED, k->grad_strided,
		            late);
	/* A mean's backward divides its expanded gradient into a tensor laid out like the expansion, not
	 * row-major; a matrix product reading it as its output's gradient copies it first (measured
	 * here: Linear on 2-D and 3-D inputs, bmm, then mean over any dim: backward peaks at 2x the
	 * product's output, the mean's gradient and its copy; then sum instead of mean, or an
	 * activation between, 1x). That 2x includes the product's input gradients, so the copy counts
	 * beyond them only. dlrm_small's [B, L, L] interaction was 43 % short without it. */
	int64_t fresh = s->live - live_before;
	if (o0 >= 0 && st->gmean[sid[o0]] && (ab_node_flags(n) & AB_OP_COPIES_MEAN_GRAD) &&
	    bytes(&a->shapes[sid[o0]]) > fresh)
		s->accum += bytes(&a->shapes[sid[o0]]) - fresh;
	/* A kernel whose backward copies a strided output gradient holds that many more (strided_grad_copies). */
	if (o0 >= 0 && st->gstrided[sid[o0]] && st->reach[L])
		s->accum += strided_grad_copies(a, L) * bytes(&a->shapes[sid[o0]]);
	/* Transient buffers of the backward kernel itself, live with its gradients and saved tensors (a
	 * member of a decomposed operator runs no backward of its own: LayerNorm's Mul by γ is no
	 * broadcasting product's backward in PyTorch's one kernel). */
	int64_t ws = 0;
	if (a->layer_view[L] != AB_LAYER_FUSED && st->reach[L]) {
		ws = k->bwd_workspace;
		ab_sat_add(&ws, k->row_major_copy);
	}
	/* A module run in place on a view: its backward goes through a copy of the view's base (PyTorch's
	 * CopySlices: the base-sized gradient, the view's clone and the kernel's own), whichever node of a
	 * decomposed activation computes its output. */
	if (n->inplace_view && st->reach[L] && o0 >= 0) {
		int64_t extra;
		if (!ab_mul(bytes(&a->shapes[sid[o0]]), a->rt->step.inplace_view_copies, &extra))
			ab_sat_add(&ws, extra);
	}
	if (view && (ab_node_flags(n) & AB_OP_PARTS))
		split_backward(a, st, s, n);
	add(s, NULL, ws + s->accum);
	sub(s, NULL, ws + s->accum);
	if (!late)
		backward_release(a, st, s, L);
	end_step(s, ABACUS_PHASE_BACKWARD, (int64_t)L);
}

/* The rest of layer L's backward once its parameters' gradients exist: their eager update, its output's
 * gradients consumed, what it saved released. */
static void backward_release(const abacus_analysis *a, storages *st, sim *s, size_t L)
{
	int *sid = st->sid;
	const ab_node *n = &a->g->nodes[a->layer_node[L]];
	const ab_cost *k = &a->costs[L];
	/* Eager updates (the runtime's adam_update_in_backward): the layer's parameters are updated as soon as
	 * their gradients exist, while its output's gradient and saved tensors still are, one at a time with the
	 * step's temporaries (the largest parameter's size); then their gradients are gone. (After the layer's
	 * releases instead: the same dataset MRE within 0.1 %.) */
	if (s->pnew) {
		/* SGD's update meets the momentum product made at the step's start: nothing more; it becomes the new m
		 * and the old m is freed, so the live bytes drop by the product too. */
		int64_t tmp = s->momentum_early ? 0 : (int64_t)a->rt->step.adam_temporaries * s->pnew_max;
		add(s, NULL, tmp);
		sub(s, NULL, tmp);
		sub(s, &s->pgrad, s->pnew);
		if (s->momentum_early) {
			int64_t d = s->pnew_data < s->early ? s->pnew_data : s->early;
			sub(s, NULL, d);
			s->early -= d;
		}
	}
	/* Output gradients are consumed (views pass theirs on to the base). */
	for (int o = 0; o < n->n_out; o++) {
		int t = n->out[o];
		if (t >= 0 && sid[t] == t && st->grad[t]) {
			st->grad[t] = 0;
			if (--st->gref[st->gbuf[t]] == 0)
				sub(s, NULL, bytes(&a->shapes[st->gbuf[t]]));
		}
	}
	/* Saved tensors and extra buffers are released. */
	if (a->layer_view[L] != AB_LAYER_FUSED && st->reach[L])
		sub(s, &s->extra, k->extra_bytes);
	int sv[MAX_SAVED], ns = saved_list(a, L, st->reach, sv);
	sub(s, &s->extra, handles(a, L, ns));
	for (int j = 0; j < ns; j++) {
		int sd = sid[sv[j]];
		if (--st->saved_refs[sd] == 0 && st->alive[sd]) {
			s->saved -= bytes(&a->shapes[sd]);
			st->alive[sd] = 0;
			sub(s, NULL, bytes(&a->shapes[sd]));
		}
	}
}

/* The parameter gradients the runtime makes after the whole backward (runtime.h weight_grad_late), in the
 * order the forward ran their layers: each layer's parameters' gradients, their update, then its output's
 * gradient and what it saved are released (backward_release). late[L]: backward_layer left layer L's for now.
 * The layer's backward kernel's transient bytes stay where backward_layer charged them (TensorFlow's 5×5
 * depthwise filter copies belong to the filter gradient, but charged here the dataset's TF memory MRE went
 * from 3.21 to 3.66 %: runtime_tf_cpu.c tf_weight_grad_late). */
static void weight_grads_late(const abacus_analysis *a, storages *st, sim *s, const size_t *ord,
                              const unsigned char *late)
{
	for (size_t j = 0; j < a->n_layers; j++) {
		size_t L = ord[j];
		if (!late[L])
			continue;
		const ab_node *n = &a->g->nodes[a->layer_node[L]];
		s->layer = (int)L;
		s->consumer = 1;
		s->accum = 0;
		s->pnew = s->pnew_max = s->pnew_data = 0;
		begin_step(s);
		for (int i = 0; i < n->n_in; i++)
			if (n->in[i] >= 0 && a->rg[n->in[i]] && weight_view(a, n->in[i]))
				param_grads(a, s, st->grad, n->in[i], 0);
		add(s, NULL, s->accum);
		sub(s, NULL, s->accum);
		backward_release(a, st, s, L);
		end_step(s, ABACUS_PHASE_BACKWARD, (int64_t)L);
	}
}

/* The simulation in its phases: persistent state, storage ids, forward, the loss, backward layer by layer
 * in reverse, the optimizer step. The peak of what is live beyond the persistent state, and what it is
 * made of, give the breakdown. */
int ab_simulate_memory(abacus_analysis *a, abacus_error *err)
{
	const abacus_graph *g = a->g;
	int rc = 0;
	storages st = { 0 };
	size_t *ord = ab_malloc((a->n_layers + 1) * sizeof *ord);
	size_t *base = ab_malloc((a->n_layers + 1) * sizeof *base), *pos = ab_malloc((a->n_layers + 1) * sizeof *pos);
	unsigned char *done = ab_calloc(a->n_layers + 1, 1), *reach = ab_calloc(a->n_layers + 1, 1);
	unsigned char *gc = ab_calloc((size_t)g->n_tensors + 1, 1), *copies = ab_calloc(a->n_layers + 1, 1);
	unsigned char *late = ab_calloc(a->n_layers + 1, 1);
	int eager = a->rt->step.eager_locals;
	int64_t *release = eager ? ab_calloc(a->n_layers + 1, sizeof *release) : NULL;
	st.held_until = eager ? ab_malloc((a->n_layers + 1) * sizeof *st.held_until) : NULL;
	/* Steps: each layer's forward, the loss, each layer's backward and its late weight gradients, the step. */
	size_t cap_ev = 3 * a->n_layers + 2;
	abacus_memory_step *ev = ab_malloc(cap_ev * sizeof *ev);
	if (storages_alloc(&st, (size_t)g->n_tensors + 1) || !ord || !base || !pos || !done || !reach || !gc || !copies ||
	    !late || !ev || (eager && (!release || !st.held_until))) {
		ab_free(ev);
		ab_free(release);
		storages_free(&st);
		ab_free(ord);
		ab_free(base);
		ab_free(pos);
		ab_free(done);
		ab_free(reach);
		ab_free(gc);
		ab_free(copies);
		ab_free(late);
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	}
	st.reach = reach;
	st.copies = copies;
	abacus_memory *m = &a->mem;
	memset(m, 0, sizeof *m);
	int64_t max_param = persistent_state(a);
	int ce = a->shapes[g->outputs[0]].rank == 2;
	reshape_copies(a, copies);
	storage_ids(a, &st);
	sim s = { 0 };
	s.ev = ev;
	s.cap_ev = cap_ev;
	s.gbuf = st.gbuf;
	s.gref = st.gref;
	s.pstamp = st.pstamp;
	s.release = release;
	s.layer = -1;
	s.eager = a->cfg.optimizer == ABACUS_OPT_ADAM && a->rt->step.adam_update_in_backward;
	s.momentum_early = a->cfg.optimizer == ABACUS_OPT_SGD && a->rt->step.sgd_momentum_early;
	s.eager |= s.momentum_early;
	base_order(a, base, pos);
	layer_order(a, base, done, ord);
	grad_reach(a, ord, reach, gc);
	if (eager && held_scopes(a, ord, st.held_until)) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	/* SGD's momentum products (step.sgd_momentum_early): one per parameter, from before the forward. */
	if (s.momentum_early) {
		s.early = m->weights;
		add(&s, NULL, s.early);
	}
	/* (The momentum products belong to the first layer's forward step: begin_step there sees them live.) */
	forward_pass(a, &st, &s, ord);
	begin_step(&s);
	/* What the runtime holds once the forward has run, with its saved tensors live (runtime.h forward_end_bytes). */
	if (a->rt->forward_end_bytes) {
		int64_t x = a->rt->forward_end_bytes(a);
		add(&s, NULL, x);
		sub(&s, NULL, x);
	}
	loss_forward(a, &st, &s, ce);
	m->saved = s.saved + s.extra;
	loss_backward(a, &st, &s, ce);
	end_step(&s, ABACUS_PHASE_LOSS, -1);
	for (size_t j = a->n_layers; j-- > 0;) {
		size_t L = ord[j];
		late[L] = a->rt->weight_grad_late && reach[L] && a->rt->weight_grad_late(a, L);
		backward_layer(a, &st, &s, L, late[L]);
	}
	weight_grads_late(a, &st, &s, ord, late);
	/* ---- optimizer step: all gradients live, plus the runtime's temporaries (Adam's; TF's SGD's too) ---- */
	const ab_step_memory *rt = &a->rt->step;
	int64_t step_live = s.pgrad + (a->cfg.optimizer == ABACUS_OPT_ADAM ? rt->adam_temporaries : rt->sgd_temporaries) * max_param;
	/* Updated in backward: only the parameters no layer's backward reached are left (none, as a rule). */
	if (s.eager)
		step_live = s.pgrad ? s.pgrad + (s.momentum_early ? 0 : rt->adam_temporaries * max_param) : 0;
	step_live += s.early; /* the momentum products of parameters no backward updated */
	/* The loss tensor, and with it the graph's records (graph_bytes), lives until the step returns. */
	s.live = step_live + (ce || !rt->mse_keeps_error ? 0 : a->loss_bytes) + s.graph;
	s.saved = 0;
	s.extra = s.graph;
	begin_step(&s);
	touch(&s);
	end_step(&s, ABACUS_PHASE_STEP, -1);
	if (s.overflow) {
		rc = ab_err(err, ABACUS_ESHAPE, "", "memory totals overflow 64 bits");
		goto out;
	}
	m->gradients = s.at_peak.gradients;
	m->activations = s.at_peak.activations;
	m->workspace = s.at_peak.workspace;
	m->peak = m->persistent + s.peak;
	m->held_peak = m->persistent + (s.held_peak > s.peak ? s.held_peak : s.peak);
	for (size_t i = 0; i < s.n_ev; i++) {
		ev[i].peak += m->persistent;
		ev[i].live += m->persistent;
	}
	ab_free(a->msteps);
	a->msteps = ev;
	a->n_msteps = s.n_ev;
	ev = NULL;
out:
	ab_free(ev);
	ab_free(release);
	storages_free(&st);
	ab_free(ord);
	ab_free(base);
	ab_free(pos);
	ab_free(done);
	ab_free(reach);
	ab_free(gc);
	ab_free(copies);
	ab_free(late);
	return rc;
}
