/*
 * graph.c — the IR's life cycle: values, attributes, consumers, topological order and which
 * initializers are trainable parameters.
 *
 * Topological order uses Kahn's algorithm over tensor edges, so a file whose nodes are listed out of
 * order still loads, and a cycle is reported with the name of a node on it.
 */
#include <string.h>

#include "graph.h"
#include "ops.h"

int ab_dtype_size(int dtype)
{
	switch (dtype) {
	case AB_DT_FLOAT: case AB_DT_INT32: case AB_DT_UINT32: return 4;
	case AB_DT_DOUBLE: case AB_DT_INT64: case AB_DT_UINT64: return 8;
	case AB_DT_UINT8: case AB_DT_INT8: case AB_DT_BOOL: return 1;
	case AB_DT_UINT16: case AB_DT_INT16: case AB_DT_FLOAT16: case AB_DT_BFLOAT16: return 2;
	default: return 0;
	}
}

int ab_dtype_is_float(int dtype)
{
	return dtype == AB_DT_FLOAT || dtype == AB_DT_DOUBLE || dtype == AB_DT_FLOAT16 || dtype == AB_DT_BFLOAT16;
}

static ab_value *value_alloc(ab_arena *ar, int dtype, int rank, const int64_t *dims, int64_t n,
                             abacus_error *err)
{
	int64_t elems = n > 0 ? n : 0;
	size_t size = sizeof(ab_value) + ((size_t)rank + (size_t)elems) * sizeof(int64_t);
	ab_value *v = ar ? ab_arena_calloc(ar, 1, size) : ab_calloc(1, size);
	if (!v) {
		ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		return NULL;
	}
	/* int64_t and double share size and alignment, and sizeof(ab_value) is a multiple of it. */
	v->dims = (int64_t *)(v + 1);
	v->dtype = dtype;
	v->rank = rank;
	v->n = n;
	v->in_arena = ar != NULL;
	for (int k = 0; k < rank; k++)
		v->dims[k] = dims[k];
	if (n > 0) {
		if (ab_dtype_is_float(dtype))
			v->f = (double *)(v->dims + rank);
		else
			v->i = v->dims + rank;
	}
	return v;
}

static int value_check(int rank, const int64_t *dims, int64_t *n, abacus_error *err)
{
	if (rank < 0 || rank > ABACUS_MAX_RANK)
		return ab_err(err, ABACUS_ELIMIT, "", "constant of rank %d: at most %d is supported", rank,
		              ABACUS_MAX_RANK);
	if (ab_numel(dims, rank, n))
		return ab_err(err, ABACUS_ELIMIT, "", "constant with negative dims or dims whose product overflows");
	return 0;
}

ab_value *ab_value_new(ab_arena *ar, int dtype, int rank, const int64_t *dims, abacus_error *err)
{
	int64_t n;
	if (value_check(rank, dims, &n, err))
		return NULL;
	if (n > AB_MAX_CONST_ELEMS) {
		ab_err(err, ABACUS_ELIMIT, "", "constant with more than %d elements", AB_MAX_CONST_ELEMS);
		return NULL;
	}
	return value_alloc(ar, dtype, rank, dims, n, err);
}

ab_value *ab_value_new_shape(ab_arena *ar, int dtype, int rank, const int64_t *dims, abacus_error *err)
{
	int64_t n;
	if (value_check(rank, dims, &n, err))
		return NULL;
	return value_alloc(ar, dtype, rank, dims, -1, err);
}

void ab_value_free(ab_value *v)
{
	if (v && !v->in_arena)
		ab_free(v);
}

ab_value *ab_value_copy(ab_arena *ar, const ab_value *v, abacus_error *err)
{
	ab_value *c = v->n < 0 ? ab_value_new_shape(ar, v->dtype, v->rank, v->dims, err)
	                       : ab_value_new(ar, v->dtype, v->rank, v->dims, err);
	if (!c)
		return NULL;
	if (v->i && c->i)
		memcpy(c->i, v->i, (size_t)v->n * sizeof *v->i);
	if (v->f && c->f)
		memcpy(c->f, v->f, (size_t)v->n * sizeof *v->f);
	return c;
}

const ab_attr *ab_node_attr(const ab_node *n, const char *name)
{
	for (int k = 0; k < n->n_attrs; k++)
		if (!strcmp(n->attrs[k].name, name))
			return &n->attrs[k];
	return NULL;
}

int64_t ab_attr_int(const ab_node *n, const char *name, int64_t dflt)
{
	const ab_attr *a = ab_node_attr(n, name);
	return a && a->type == AB_ATTR_INT ? a->i : dflt;
}

double ab_attr_float(const ab_node *n, const char *name, double dflt)
{
	const ab_attr *a = ab_node_attr(n, name);
	return a && a->type == AB_ATTR_FLOAT ? a->f : dflt;
}

const char *ab_attr_str(const ab_node *n, const char *name, const char *dflt)
{
	const ab_attr *a = ab_node_attr(n, name);
	return a && a->type == AB_ATTR_STRING ? a->s : dflt;
}

const int64_t *ab_attr_ints(const ab_node *n, const char *name, size_t *count)
{
	const ab_attr *a = ab_node_attr(n, name);
	if (!a || a->type != AB_ATTR_INTS) {
		*count = 0;
		return NULL;
	}
	*count = a->n_ints;
	return a->ints;
}

void ab_graph_destroy(abacus_graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->n_tensors; i++) {
		ab_value_free(g->tensors[i].value);
	}
	/* Strings and per-node arrays live in g->arena; only tensor values are allocated one by one. */
	for (int i = 0; i < g->n_nodes; i++) {
		ab_node *n = &g->nodes[i];
		for (int k = 0; k < n->n_attrs; k++)
			ab_value_free(n->attrs[k].t);
	}
	ab_free(g->tensors);
	ab_free(g->nodes);
	ab_free(g->order);
	ab_free(g->inputs);
	ab_free(g->outputs);
	ab_arena_free(&g->arena);
	ab_free(g);
}

void abacus_graph_free(abacus_graph *g)
{
	ab_graph_destroy(g);
}

/* A float initializer is a trainable parameter unless it is a BatchNorm running statistic or an
 * argument that only steers an op's shape (Resize roi/scales, Pad value ...): the op table's state_in.
 * This mirrors PyTorch: parameters are exported as initializers, and buffers are the running statistics. */
static int consumes_as_state(const ab_node *n, int slot)
{
	const ab_opdef *d = ab_node_def(n);
	return d && slot < 32 && (d->state_in >> slot & 1);
}

int ab_graph_finish(abacus_graph *g, abacus_error *err)
{
	int rc = 0;
	int *indeg = NULL, *queue = NULL, *state_uses = NULL, *start = NULL, *adj = NULL;
	for (int i = 0; i < g->n_nodes; i++) {
		ab_node *n = &g->nodes[i];
		for (int k = 0; k < n->n_in; k++) {
			if (n->in[k] < 0)
				continue;
			ab_tensor *t = &g->tensors[n->in[k]];
			if (t->kind == AB_T_VALUE && t->producer < 0)
				return ab_err(err, ABACUS_EGRAPH, n->name,
				              "node '%s' (%s) reads tensor '%s', which nothing produces", n->name, n->op, t->name);
			t->n_consumers++;
		}
	}
	for (int k = 0; k < g->n_outputs; k++) {
		const ab_tensor *t = &g->tensors[g->outputs[k]];
		if (t->kind == AB_T_VALUE && t->producer < 0)
			return ab_err(err, ABACUS_EGRAPH, t->name, "graph output '%s' is never produced", t->name);
	}
	/* Parameters. */
	state_uses = ab_calloc((size_t)g->n_tensors + 1, sizeof *state_uses);
	if (!state_uses)
		goto oom;
	for (int i = 0; i < g->n_nodes; i++) {
		const ab_node *n = &g->nodes[i];
		for (int k = 0; k < n->n_in; k++)
			if (n->in[k] >= 0 && consumes_as_state(n, k))
				state_uses[n->in[k]]++;
	}
	for (int i = 0; i < g->n_tensors; i++) {
		ab_tensor *t = &g->tensors[i];
		t->is_param = t->kind == AB_T_INIT && ab_dtype_is_float(t->dtype) && t->rank >= 0 && !t->is_buffer &&
		              !(state_uses[i] > 0 && state_uses[i] == t->n_consumers);
	}
	/* Kahn's algorithm: edges go from a tensor's producer to each consumer. */
	indeg = ab_calloc((size_t)g->n_nodes + 1, sizeof *indeg);
	queue = ab_malloc(((size_t)g->n_nodes + 1) * sizeof *queue);
	start = ab_calloc((size_t)g->n_tensors + 1, sizeof *start);
	g->order = ab_malloc(((size_t)g->n_nodes + 1) * sizeof *g->order);
	if (!indeg || !queue || !start || !g->order)
		goto oom;
	/* Consumer lists in CSR form: start[t]..start[t+1] indexes adj. */
	int64_t edges = 0;
	for (int i = 0; i < g->n_tensors; i++)
		edges += g->tensors[i].n_consumers;
	adj = ab_malloc(((size_t)edges + 1) * sizeof *adj);
	if (!adj)
		goto oom;
	{
		int64_t acc = 0;
		for (int i = 0; i < g->n_tensors; i++) {
			start[i] = (int)acc;
			acc += g->tensors[i].n_consumers;
		}
		int *fill = state_uses; /* reuse as a cursor array */
		memset(fill, 0, ((size_t)g->n_tensors + 1) * sizeof *fill);
		for (int i = 0; i < g->n_nodes; i++) {
			const ab_node *n = &g->nodes[i];
			for (int k = 0; k < n->n_in; k++) {
				int t = n->in[k];
				if (t < 0)
					continue;
				adj[start[t] + fill[t]++] = i;
				if (g->tensors[t].producer >= 0)
					indeg[i]++;
			}
		}
	}
	int head = 0, tail = 0;
	for (int i = 0; i < g->n_nodes; i++)
		if (indeg[i] == 0)
			queue[tail++] = i;
	while (head < tail) {
		int i = queue[head++];
		const ab_node *n = &g->nodes[i];
		for (int o = 0; o < n->n_out; o++) {
			int t = n->out[o];
			if (t < 0)
				continue;
			for (int e = 0; e < g->tensors[t].n_consumers; e++) {
				int c = adj[start[t] + e];
				if (--indeg[c] == 0)
					queue[tail++] = c;
			}
		}
	}
	if (tail != g->n_nodes) {
		int bad = 0;
		while (bad < g->n_nodes && indeg[bad] == 0)
			bad++;
		rc = ab_err(err, ABACUS_EGRAPH, g->nodes[bad].name,
		            "the graph has a cycle: node '%s' (%s) depends on its own output", g->nodes[bad].name,
		            g->nodes[bad].op);
		goto out;
	}
	memcpy(g->order, queue, (size_t)g->n_nodes * sizeof *queue);
	goto out;
oom:
	rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
out:
	ab_free(indeg);
	ab_free(queue);
	ab_free(state_uses);
	ab_free(start);
	ab_free(adj);
	return rc;
}

size_t abacus_graph_n_inputs(const abacus_graph *g)
{
	return (size_t)g->n_inputs;
}

int abacus_graph_input(const char **name, int *rank, int64_t dims[ABACUS_MAX_RANK], const char *sym[ABACUS_MAX_RANK],
                       const abacus_graph *g, size_t i)
{
	if (i >= (size_t)g->n_inputs)
		return ABACUS_EINVAL;
	const ab_tensor *t = &g->tensors[g->inputs[i]];
	*name = t->name;
	*rank = t->rank;
	for (int k = 0; k < ABACUS_MAX_RANK; k++) {
		dims[k] = k < t->rank ? t->dims[k] : 0;
		if (sym)
			sym[k] = k < t->rank && t->sym ? t->sym[k] : NULL;
	}
	return 0;
}

size_t abacus_graph_n_nodes(const abacus_graph *g)
{
	return (size_t)g->n_nodes;
}

int64_t abacus_graph_opset(const abacus_graph *g)
{
	return g->opset;
}
