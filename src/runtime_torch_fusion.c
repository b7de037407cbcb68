/*
 * runtime_torch_fusion.c — operators that the ONNX exporter spells out as several nodes but PyTorch runs
 * as one kernel: part of the PyTorch runtime (runtime.h), whose mark_fused this is.
 *
 * At opset 14 torch.onnx decomposes three common operators:
 *
 *   LayerNorm  ReduceMean(x) → Sub(x, ·) → Pow(·, 2) → ReduceMean → Add(eps) → Sqrt → Div(x − mean, ·)
 *              [→ Mul(·, γ) → Add(·, β)]                                       (9 nodes, 1 kernel)
 *   GELU       Div(x, √2) → Erf → Add(1) → Mul(x, ·) → Mul(·, 0.5)                (5 nodes, 1 kernel)
 *   SiLU       Sigmoid(x) → Mul(x, ·)                                              (2 nodes, 1 kernel)
 *   Mish       Softplus(x) → Tanh → Mul(x, ·)                                      (3 nodes, 1 kernel)
 *   GroupNorm  Reshape(x) → InstanceNormalization → Reshape → [Mul(·, γ) → Add(·, β)]   (1 kernel)
 *   GLU        Split(x) → (a, b); Sigmoid(b) → Mul(a, ·)                           (2 nodes, 1 kernel)
 *
 * Priced node by node, a transformer block pays nine dispatches and nine passes over its activations for
 * each LayerNorm. Here every member of a recognised pattern but its last node is marked AB_LAYER_FUSED:
 * the time terms drop its dispatch and its bytes, and the last node (which reads a tensor of the input's
 * size and writes the output) stands for the kernel. For memory, the pattern keeps what PyTorch's one
 * kernel keeps for backward, its input x (fused_save of the first node, where x is still alive),
 * instead of the intermediates its members would save (GELU's decomposition keeps three x-sized
 * tensors, LayerNorm's two, SiLU's two, Mish's three, GroupNorm's affine part one more).
 * FLOPs, shapes and the feature vector's per-layer counts are untouched.
 */
#include <string.h>

#include "analysis.h"
#include "runtime.h"
#include "util.h"

/* The layer that produces tensor t, if it is a layer (not folded, not an input) running `op`. */
static int producer(const abacus_analysis *a, int t, const char *op)
{
	if (t < 0)
		return -1;
	int node = a->g->tensors[t].producer;
	if (node < 0 || a->node_layer[node] < 0 || strcmp(a->g->nodes[node].op, op))
		return -1;
	return node;
}

static const ab_node *nd(const abacus_analysis *a, int node)
{
	return &a->g->nodes[node];
}

/* A fused member's output must feed only the pattern: otherwise PyTorch would materialise it too. */
static int private_out(const abacus_analysis *a, int node)
{
	const ab_node *n = nd(a, node);
	return n->n_out >= 1 && n->out[0] >= 0 && a->g->tensors[n->out[0]].n_consumers == 1;
}

static int first_input_of(const abacus_analysis *a, int node, const char *op, int *other)
{
	const ab_node *n = nd(a, node);
	for (int i = 0; i < n->n_in && i < 2; i++) {
		int p = producer(a, n->in[i], op);
		if (p >= 0) {
			if (other)
				*other = n->n_in == 2 ? n->in[1 - i] : -1;
			return p;
		}
	}
	return -1;
}

static void fuse(abacus_analysis *a, int node)
{
	int l = a->node_layer[node];
	if (l < 0 || a->layer_view[l] != AB_LAYER_KERNEL)
		return;
	const abacus_layer *L = &a->layers[l];
	a->layer_view[l] = AB_LAYER_FUSED;
	a->fused_layers += 1;
	a->fused_bytes += (double)L->bytes_read + (double)L->bytes_written;
}

/* Whether activation t is a permuted view whose elements are not in row-major order: the output of a
 * permutation other than the identity, unless it is NCHW → NHWC of a channels-last map (row-major then). */
static int strided_input(const abacus_analysis *a, int t)
{
	int p = t >= 0 ? a->g->tensors[t].producer : -1;
	if (p < 0 || !(ab_node_flags(nd(a, p)) & AB_OP_PERMUTE) || nd(a, p)->n_in < 1 || nd(a, p)->in[0] < 0)
		return 0;
	size_t np = 0;
	const int64_t *perm = ab_attr_ints(nd(a, p), "perm", &np);
	if (!perm)
		return a->shapes[t].rank > 1; /* (no perm: the axes reversed) */
	int identity = 1;
	for (size_t i = 0; i < np; i++)
		identity &= perm[i] == (int64_t)i;
	int to_nhwc = np == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1;
	return !identity && !(to_nhwc && a->cl[nd(a, p)->in[0]]);
}

/* Div(x − mean(x), sqrt(mean((x − mean(x))²) + eps)); returns 1 when `div` ends a LayerNorm. */
static int layer_norm(abacus_analysis *a, int div)
{
	const ab_node *d = nd(a, div);
	if (d->n_in != 2)
		return 0;
	int sub = producer(a, d->in[0], "Sub"), sq = producer(a, d->in[1], "Sqrt");
	if (sub < 0 || sq < 0 || nd(a, sub)->n_in != 2)
		return 0;
	int x = nd(a, sub)->in[0], m1 = producer(a, nd(a, sub)->in[1], "ReduceMean");
	if (m1 < 0 || nd(a, m1)->in[0] != x)
		return 0;
	int add = producer(a, nd(a, sq)->in[0], "Add");
	if (add < 0)
		return 0;
	int m2 = first_input_of(a, add, "ReduceMean", NULL);
	if (m2 < 0)
		return 0;
	int centred = nd(a, sub)->out[0];
	int sqr = producer(a, nd(a, m2)->in[0], "Pow");
	if (sqr < 0)
		sqr = producer(a, nd(a, m2)->in[0], "Mul");
	if (sqr < 0 || nd(a, sqr)->in[0] != centred)
		return 0;
	if (!private_out(a, sqr) || !private_out(a, m2) || !private_out(a, add) || !private_out(a, sq))
		return 0;
	a->fused_save[a->node_layer[m1]] = x;
	a->fused_save[a->node_layer[div]] = AB_SAVE_NOTHING;
	/* native_layer_norm also keeps each row's mean and reciprocal deviation for its backward, a float each
	 * (the ONNX LayerNormalization op's two statistics, ops_nn.c ab_cost_norm): nothing beside a
	 * transformer's rows of hundreds, but a quarter to a third of the input over a LayerNorm2d's rows of a
	 * few dozen channels. Measured (collector tracker, live bytes after each module's forward, one thread):
	 * a generated CNN's LayerNorm2d over 6 and 18 channels at 128² and 64², batch 4, added its output plus
	 * 0.50 and 0.125 MiB, 8 bytes a row; without them its simulated peak was 5.4 % low. */
	/* Over a permuted view that is not row-major (a LayerNorm2d's x.permute(0, 2, 3, 1) of an NCHW map;
	 * of a channels-last one it is row-major: analysis.c a->cl), native_layer_norm and its backward each
	 * work on a row-major copy of x (X = input.contiguous()), held while the kernel runs: measured
	 * (tracker, batch 4, 112 channels at 96², conv → LayerNorm2d → ReLU) the backward peaked one input
	 * size above the simulation without it, and a generated CNN whose stem is such a LayerNorm over a
	 * 16 MiB map (gen_cnn_s000104) was simulated 38 % short. */
	if (strided_input(a, x)) {
		int64_t b = a->shapes[x].known ? a->shapes[x].numel : 0;
		ab_sat_mul(&b, ab_dtype_size(a->shapes[x].dtype));
		a->costs[a->node_layer[div]].row_major_copy = b;
	}
	const ab_shape *stats = &a->shapes[nd(a, m1)->out[0]], *y = &a->shapes[d->out[0]];
	if (stats->known && stats->numel > 0) {
		int64_t b = stats->numel;
		ab_sat_mul(&b, 8);
		ab_sat_add(&a->costs[a->node_layer[div]].extra_bytes, b);
		/* Its rows' fixed cost, per output element (runtime.h AB_TORCH_LN_ARITH): a row is the output over
		 * the statistics, one per row. */
		if (y->known)
			a->costs[a->node_layer[div]].arith_ns = ab_ln_arith_ns(a->rt, y->numel / stats->numel);
	}
	fuse(a, m1);
	fuse(a, sub);
	fuse(a, sqr);
	fuse(a, m2);
	fuse(a, add);
	fuse(a, sq);
	return 1;
}

/* The Add(Erf(Div(x, c)), 1) of a GELU whose x is `x`, or -1. */
static int gelu_gate(const abacus_analysis *a, int t, int x)
{
	int add = producer(a, t, "Add");
	if (add < 0 || !private_out(a, add))
		return -1;
	int erf = first_input_of(a, add, "Erf", NULL);
	if (erf < 0 || !private_out(a, erf))
		return -1;
	int div = producer(a, nd(a, erf)->in[0], "Div");
	if (div < 0 || nd(a, div)->in[0] != x || !private_out(a, div))
		return -1;
	return add;
}

/* Mul(Mul(x, Add(Erf(Div(x, c)), 1)), 0.5), either operand order: returns 1 when `mul` ends a GELU. */
static int gelu(abacus_analysis *a, int mul)
{
	const ab_node *m = nd(a, mul);
	for (int i = 0; i < m->n_in && i < 2; i++) {
		int inner = producer(a, m->in[i], "Mul");
		if (inner < 0 || !private_out(a, inner) || nd(a, inner)->n_in != 2)
			continue;
		const ab_node *in = nd(a, inner);
		for (int k = 0; k < 2; k++) {
			int add = gelu_gate(a, in->in[k], in->in[1 - k]);
			if (add < 0)
				continue;
			int erf = first_input_of(a, add, "Erf", NULL);
			int div = producer(a, nd(a, erf)->in[0], "Div");
			a->fused_save[a->node_layer[div]] = in->in[1 - k];
			a->fused_save[a->node_layer[mul]] = AB_SAVE_NOTHING;
			a->costs[a->node_layer[mul]].arith_ns = a->rt->act_ns[AB_ACT_GELU];
			/* gelu_backward on a strided gradient (an Einsum's operand read batch-strided:
			 * an MoE's experts) holds two more gradient-sized buffers, 3.00× its output where
			 * a row-major gradient holds 1.00× (measured 2026-12-05 with the allocator tracker,
			 * [4, 128, 8, 256]; ReLU's, tanh's and sigmoid's backward hold 1.00× either way). */
			a->costs[a->node_layer[mul]].strided_grad_buffers = 2;
			fuse(a, div);
			fuse(a, erf);
			fuse(a, add);
			fuse(a, inner);
			return 1;
		}
	}
	return 0;
}

/* Mul(x, Tanh(Softplus(x))): returns 1 when `mul` is a Mish. */
static int mish(abacus_analysis *a, int mul)
{
	int x = -1;
	int th = first_input_of(a, mul, "Tanh", &x);
	if (th < 0 || x < 0 || !private_out(a, th))
		return 0;
	int sp = producer(a, nd(a, th)->in[0], "Softplus");
	if (sp < 0 || nd(a, sp)->in[0] != x || !private_out(a, sp))
		return 0;
	a->fused_save[a->node_layer[sp]] = x;
	a->fused_save[a->node_layer[mul]] = AB_SAVE_NOTHING;
	a->costs[a->node_layer[mul]].arith_ns = a->rt->act_ns[AB_ACT_MISH];
	fuse(a, sp);
	fuse(a, th);
	return 1;
}

/* Mul(x, Sigmoid(x)): returns 1 when `mul` is a SiLU. */
static int silu(abacus_analysis *a, int mul)
{
	int x = -1;
	int sig = first_input_of(a, mul, "Sigmoid", &x);
	if (sig < 0 || x < 0 || nd(a, sig)->in[0] != x || !private_out(a, sig))
		return 0;
	a->fused_save[a->node_layer[sig]] = x;
	a->fused_save[a->node_layer[mul]] = AB_SAVE_NOTHING;
	a->costs[a->node_layer[mul]].arith_ns = a->rt->act_ns[AB_ACT_SILU];
	fuse(a, sig);
	return 1;
}

/* Mul(a, Sigmoid(b)) with a and b the two halves of one Split: F.glu, one kernel that keeps its input and
 * whose backward writes the input's gradient directly (measured 2026-12-05 with the allocator tracker:
 * Linear 128 -> 1024, glu, Linear 512 -> 16 on [4, 256, ·]: node by node the simulation kept the sigmoid's
 * output and made its gradient, 2x the GLU's output, +20 % over the measured peak; fused, -0.1 %).
 * Returns 1 when `mul` ends one. */
static int glu(abacus_analysis *a, int mul)
{
	int half = -1;
	int sig = first_input_of(a, mul, "Sigmoid", &half);
	if (sig < 0 || half < 0 || !private_out(a, sig))
		return 0;
	int split = producer(a, half, "Split");
	if (split < 0 || producer(a, nd(a, sig)->in[0], "Split") != split || half == nd(a, sig)->in[0] ||
	    nd(a, split)->n_out != 2 || nd(a, split)->n_in < 1)
		return 0;
	a->fused_save[a->node_layer[sig]] = nd(a, split)->in[0];
	a->fused_save[a->node_layer[mul]] = AB_SAVE_NOTHING;
	/* The kernel still computes the sigmoid, over as many elements as its output has. */
	a->costs[a->node_layer[mul]].arith_ns = a->rt->act_ns[AB_ACT_SIGMOID];
	fuse(a, sig);
	return 1;
}

/* Kernel layer l made a view: its output shares its input's storage, it keeps nothing, it costs a
 * dispatch and moves no data. */
static void as_view(abacus_analysis *a, int l)
{
	a->layer_view[l] = AB_LAYER_VIEW;
	a->view_layers += 1;
	a->view_bytes += (double)a->layers[l].bytes_read;
}

/* Add(MatMul(x, W), b) with b a 1-D weight: the exporter's spelling of a Linear on a 3-D or 4-D input,
 * which PyTorch runs as the product and then `output.add_(bias)` in place, one cheap pass with no tensor
 * of its own. Priced at the element-wise byte rate (fitted mostly on BatchNorm and ReLU passes), the
 * bias of gpt_small's or a decoder's vocabulary projection cost 4.5 ms where PyTorch spends 0.5: it is
 * made a view (its output shares the product's storage, it keeps nothing, costs a dispatch). */
static void bias_epilogue(abacus_analysis *a, int node)
{
	const ab_node *n = nd(a, node);
	int l = a->node_layer[node], bias = -1;
	if (n->n_in != 2 || l < 0 || a->layer_view[l] != AB_LAYER_KERNEL)
		return;
	int mm = first_input_of(a, node, "MatMul", &bias);
	if (mm < 0 || !private_out(a, mm) || bias < 0 || !a->wl[bias] || a->shapes[bias].rank != 1)
		return;
	as_view(a, l);
}

/* Pad(x, zeros) → AveragePool: the exporter's spelling of AvgPool2d with padding (count_include_pad), which
 * PyTorch runs as one avg_pool2d that pads as it reads and keeps x for its backward: the padded tensor never
 * exists. The Pad is made a view (its output shares x's storage, costs a dispatch). Measured 2026-12-07 with
 * the tracker (per-module live bytes, one thread): gen_cnn_s000049's stem (ReLU, then a 3×3 average pool with
 * padding 1 over a 5 MiB map, batch 4 at 192²) held its ReLU's output and the pool's, no padded copy; the
 * simulation with that copy alive until the pool's backward put the network's peak 25 % high. */
static void pool_padding(abacus_analysis *a, int node)
{
	const ab_node *n = nd(a, node);
	int pad = n->n_in >= 1 ? producer(a, n->in[0], "Pad") : -1;
	if (pad < 0 || !private_out(a, pad))
		return;
	const ab_node *p = nd(a, pad);
	if (strcmp(ab_attr_str(p, "mode", "constant"), "constant"))
		return;
	if (p->n_in >= 3 && p->in[2] >= 0) { /* a constant value other than 0 is no pool's padding */
		const ab_value *v = a->vals[p->in[2]];
		if (!v || v->n != 1 || ab_value_get(v, 0) != 0)
			return;
	}
	int l = a->node_layer[pad];
	if (l < 0 || a->layer_view[l] != AB_LAYER_KERNEL)
		return;
	as_view(a, l);
}

void ab_torch_mark_fused(abacus_analysis *a)
{
	const abacus_graph *g = a->g;
	/* Layer index of the node that currently ends a LayerNorm, per node: its affine Mul/Add join it. */
	for (int i = 0; i < g->n_nodes; i++) {
		int node = g->order[i];
		int l = a->node_layer[node];
		if (l < 0 || a->layer_view[l] != AB_LAYER_KERNEL)
			continue;
		const char *op = g->nodes[node].op;
		if (!strcmp(op, "Div")) {
			/* native_layer_norm_backward copies a strided output gradient row-major first (memory.c
			 * strided_grad_copies says where it was measured). */
			if (layer_norm(a, node)) {
				a->layer_view[l] = AB_LAYER_NORM_END;
				a->costs[l].strided_grad_buffers = 1;
			}
		} else if (!strcmp(op, "InstanceNormalization")) {
			/* GroupNorm: Reshape → InstanceNormalization → Reshape → Mul γ → Add β, one kernel that
			 * keeps its input; the affine part joins below, through the Reshape. */
			a->layer_view[l] = AB_LAYER_NORM_END;
			a->fused_save[l] = g->nodes[node].in[0];
		} else if (!strcmp(op, "Mul")) {
			if (gelu(a, node) || silu(a, node) || mish(a, node) || glu(a, node))
				continue;
		} else if (!strcmp(op, "AveragePool")) {
			pool_padding(a, node);
		} else if (!strcmp(op, "Add")) {
			bias_epilogue(a, node);
			if (a->layer_view[l] == AB_LAYER_VIEW)
				continue;
		}
		/* The affine part of a LayerNorm: Mul by γ, then Add β, each a weight-like second operand. */
		if (!strcmp(op, "Mul") || !strcmp(op, "Add")) {
			const ab_node *n = &g->nodes[node];
			for (int k = 0; k < n->n_in && k < 2; k++) {
				int t = n->in[k], other = n->n_in == 2 ? n->in[1 - k] : -1;
				int p = t >= 0 ? g->tensors[t].producer : -1;
				/* Through one view (GroupNorm's Reshape back to the input's shape). */
				if (p >= 0 && a->node_layer[p] >= 0 && a->layer_view[a->node_layer[p]] == AB_LAYER_VIEW &&
				    g->tensors[t].n_consumers == 1 && g->nodes[p].n_in >= 1) {
					t = g->nodes[p].in[0];
					p = t >= 0 ? g->tensors[t].producer : -1;
				}
				if (p < 0 || a->node_layer[p] < 0 || a->layer_view[a->node_layer[p]] != AB_LAYER_NORM_END)
					continue;
				if (other < 0 || !a->wl[other] || g->tensors[t].n_consumers != 1)
					break;
				a->layer_view[a->node_layer[p]] = AB_LAYER_KERNEL;
				fuse(a, p);
				a->layer_view[l] = AB_LAYER_NORM_END;
				a->costs[l].strided_grad_buffers = a->costs[a->node_layer[p]].strided_grad_buffers;
				a->costs[a->node_layer[p]].strided_grad_buffers = 0;
				/* (and the statistics, copies and rows' arithmetic the kernel keeps: a fused layer's are not
				 * counted; the affine ops' outputs have the normalised one's shape, so the arithmetic per
				 * element carries over) */
				ab_cost *from = &a->costs[a->node_layer[p]], *to = &a->costs[l];
				ab_sat_add(&to->extra_bytes, from->extra_bytes);
				ab_sat_add(&to->row_major_copy, from->row_major_copy);
				to->arith_ns += from->arith_ns;
				from->extra_bytes = from->row_major_copy = 0;
				from->arith_ns = 0;
				/* The pattern's input is kept where it is still alive: at a GroupNorm's kernel, which
				 * names it; a LayerNorm names it at its first node and passes the end mark along. */
				int pl = a->node_layer[p];
				if (a->fused_save[pl] >= 0) {
					a->fused_save[l] = AB_SAVE_NOTHING;
				} else {
					a->fused_save[l] = a->fused_save[pl];
					a->fused_save[pl] = -1;
				}
				break;
			}
		}
	}
	for (size_t l = 0; l < a->n_layers; l++)
		if (a->layer_view[l] == AB_LAYER_NORM_END)
			a->layer_view[l] = AB_LAYER_KERNEL;
}
