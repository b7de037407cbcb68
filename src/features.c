/*
 * features.c — the network structural matrix (NSM) and the fixed-length feature vector.
 *
 * The NSM is our reconstruction of DNNAbacus' structural matrix (the paper's text is unavailable):
 * K operator categories plus two pseudo categories (graph input, graph output); NSM[i][j] counts the
 * data edges from a layer of category i to a layer of category j. Folded shape nodes, initializers and
 * constants are not nodes of the NSM. Beside the matrix, per-category aggregates (count, forward and
 * backward FLOPs, output bytes, parameters) say how heavy each kind of operator is at this batch and
 * input size, and the analytic totals and memory simulation give the physics the learner corrects.
 *
 * The schema is a fixed list of named columns; its order is part of the predictor bundle format
 * (bundles store the schema and refuse a mismatch).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "runtime.h"

#define NCAT ABACUS_CAT_COUNT
#define NSM_DIM (NCAT + 2)   /* + input, output */
#define NSM_IN NCAT
#define NSM_OUT (NCAT + 1)

static const char *const scalar_names[] = {
	"batch", "optimizer_adam", "input_elems_per_sample",
	"params", "forward_flops", "backward_flops", "bytes_read", "bytes_written", "layers",
	"mem_weights", "mem_buffers", "mem_optimizer", "mem_inputs", "mem_gradients", "mem_activations",
	"mem_workspace", "mem_peak", "mem_persistent", "mem_saved",
	"flops_per_layer", "bytes_per_flop",
};
#define N_SCALAR (sizeof scalar_names / sizeof scalar_names[0])

static const char *const agg_names[] = { "count", "fwd_flops", "bwd_flops", "out_bytes", "params" };
#define N_AGG (sizeof agg_names / sizeof agg_names[0])

#define OFF_AGG N_SCALAR
#define OFF_NSM (OFF_AGG + NCAT * N_AGG)
#define OFF_RUNTIME (OFF_NSM + NSM_DIM * NSM_DIM)
/* One column per runtime, 1 for the configuration's: the learned corrections are shared by every runtime's
 * rows, and what a runtime's simulation misses (TensorFlow's per-model state) is not PyTorch's. */
#define N_FEATURES (OFF_RUNTIME + AB_N_RUNTIMES)

size_t abacus_features_count(void)
{
	return N_FEATURES;
}

static const char *nsm_name(int i)
{
	return i == NSM_IN ? "input" : i == NSM_OUT ? "output" : abacus_category_name((abacus_category)i);
}

int abacus_feature_name(char *buf, size_t len, size_t i)
{
	if (i < N_SCALAR)
		snprintf(buf, len, "%s", scalar_names[i]);
	else if (i < OFF_NSM)
		snprintf(buf, len, "cat_%s_%s", abacus_category_name((abacus_category)((i - OFF_AGG) / N_AGG)),
		         agg_names[(i - OFF_AGG) % N_AGG]);
	else if (i < OFF_RUNTIME)
		snprintf(buf, len, "nsm_%s_to_%s", nsm_name((int)((i - OFF_NSM) / NSM_DIM)),
		         nsm_name((int)((i - OFF_NSM) % NSM_DIM)));
	else if (i < N_FEATURES)
		snprintf(buf, len, "runtime_%s", abacus_runtime_name(i - OFF_RUNTIME));
	else
		return ABACUS_EINVAL;
	return 0;
}

/* The NSM counts edges between layers; a tensor's producer layer gives the source category. */
static int source_category(const abacus_analysis *a, int tensor)
{
	const ab_tensor *t = &a->g->tensors[tensor];
	if (t->kind == AB_T_INPUT)
		return NSM_IN;
	if (t->kind != AB_T_VALUE || t->producer < 0)
		return -1;
	int L = a->node_layer[t->producer];
	return L >= 0 ? (int)a->layers[L].category : -1;
}

/* Computed once at the end of abacus_analyze (it walks every layer and edge, ~70 µs for a 2,000-layer
 * graph); abacus_features and abacus_predict copy the cached vector, so a prediction costs only trees. */
int ab_features_compute(double **out, const abacus_analysis *a, abacus_error *err)
{
	size_t n = N_FEATURES;
	*out = ab_malloc(n * sizeof **out);
	if (!*out)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	double *feat = *out;
	memset(feat, 0, n * sizeof *feat);
	const abacus_totals *t = &a->totals;
	const abacus_memory *m = &a->mem;
	double batch = (double)a->cfg.batch;
	double in_elems = 0;
	for (int i = 0; i < a->g->n_inputs; i++)
		in_elems += (double)a->shapes[a->g->inputs[i]].numel;
	double s[N_SCALAR] = {
		batch, a->cfg.optimizer == ABACUS_OPT_ADAM, in_elems / batch,
		(double)t->params, (double)t->forward_flops, (double)t->backward_flops, (double)t->bytes_read,
		(double)t->bytes_written, (double)t->layers,
		(double)m->weights, (double)m->buffers, (double)m->optimizer, (double)m->inputs, (double)m->gradients,
		(double)m->activations, (double)m->workspace, (double)m->peak, (double)m->persistent, (double)m->saved,
		t->layers ? (double)t->forward_flops / (double)t->layers : 0,
		t->forward_flops ? (double)(t->bytes_read + t->bytes_written) / (double)t->forward_flops : 0,
	};
	memcpy(feat, s, sizeof s);
	for (size_t i = 0; i < a->n_layers; i++) {
		const abacus_layer *L = &a->layers[i];
		double *agg = feat + OFF_AGG + (size_t)L->category * N_AGG;
		agg[0] += 1;
		agg[1] += (double)L->forward_flops;
		agg[2] += (double)L->backward_flops;
		agg[3] += (double)L->output_bytes;
		agg[4] += (double)L->params;
		const ab_node *nd = &a->g->nodes[a->layer_node[i]];
		for (int k = 0; k < nd->n_in; k++) {
			if (nd->in[k] < 0)
				continue;
			int src = source_category(a, nd->in[k]);
			if (src >= 0)
				feat[OFF_NSM + (size_t)src * NSM_DIM + (size_t)L->category] += 1;
		}
	}
	for (int k = 0; k < a->g->n_outputs; k++) {
		int src = source_category(a, a->g->outputs[k]);
		if (src >= 0)
			feat[OFF_NSM + (size_t)src * NSM_DIM + NSM_OUT] += 1;
	}
	/* Entries are log1p-scaled: edge counts span 1 to thousands. */
	for (size_t i = OFF_NSM; i < OFF_RUNTIME; i++)
		if (feat[i] != 0)
			feat[i] = log1p(feat[i]);
	int rt = ab_runtime_index(a->rt);
	if (rt >= 0)
		feat[OFF_RUNTIME + (size_t)rt] = 1;
	return 0;
}

int abacus_features(double *out, size_t n, const abacus_analysis *a, abacus_error *err)
{
	if (n != N_FEATURES)
		return ab_err(err, ABACUS_EINVAL, "", "feature buffer has %zu slots; the schema has %zu", n,
		              (size_t)N_FEATURES);
	memcpy(out, a->features, n * sizeof *out);
	return 0;
}

/* The composition of a configuration, read off its feature vector: per operator category the share of the
 * layers, of the forward FLOPs and of the output bytes, then the FLOPs per layer and sample (log10 / 10) and
 * the layer count (log10 / 4). Shares do not change with the batch size and hardly with the input size, so
 * two configurations of one network lie close together, and a network built of other operators, or of the
 * same ones in other proportions, lies far from them: novelty.c measures how far a configuration is from a
 * model's training graphs by this vector (the "Unseen networks" issue, intervals that widen off the data). */
void ab_composition(double c[AB_COMP_DIM], const double *x)
{
	_Static_assert(AB_COMP_DIM == 3 * NCAT + 2, "AB_COMP_DIM is three shares per category and two sizes");
	enum { S_BATCH = 0, S_FWD = 4, S_LAYERS = 8 }; /* positions in scalar_names (test_composition checks) */
	double layers = x[S_LAYERS], fwd = x[S_FWD], batch = x[S_BATCH] > 0 ? x[S_BATCH] : 1, out = 0;
	for (int k = 0; k < NCAT; k++)
		out += x[OFF_AGG + (size_t)k * N_AGG + 3];
	for (int k = 0; k < NCAT; k++) {
		const double *agg = x + OFF_AGG + (size_t)k * N_AGG;
		c[3 * k] = layers > 0 ? agg[0] / layers : 0;
		c[3 * k + 1] = fwd > 0 ? agg[1] / fwd : 0;
		c[3 * k + 2] = out > 0 ? agg[3] / out : 0;
	}
	double per = layers > 0 ? fwd / layers / batch : 0;
	c[3 * NCAT] = per > 1 ? log10(per) / 10 : 0;
	c[3 * NCAT + 1] = layers > 1 ? log10(layers) / 4 : 0;
}
