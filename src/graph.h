/*
 * graph.h — the in-memory graph (IR) that the ONNX loader builds and the analysis reads.
 *
 * Invariants after abacus_graph_load returns 0:
 *   - every node input/output index refers to a tensor in g->tensors (-1 marks an omitted optional input);
 *   - every tensor has at most one producer (a node output, a graph input or an initializer);
 *   - g->order lists every node once, producers before consumers (the graph is acyclic).
 * The graph is immutable afterwards; per-configuration shapes and values live in the analysis.
 */
#ifndef ABACUS_GRAPH_H
#define ABACUS_GRAPH_H

#include "arena.h"
#include "util.h"

/* Bounds that keep hostile files from exhausting memory or stack (documented in docs/LIMITS.md). */
#define AB_MAX_NODES 2000000
#define AB_MAX_IO 4096                  /* inputs or outputs of one node */
#define AB_MAX_CONST_ELEMS (1 << 20)    /* constant values kept for folding */

/* ONNX TensorProto.DataType values we name. */
enum {
	AB_DT_UNDEFINED = 0, AB_DT_FLOAT = 1, AB_DT_UINT8 = 2, AB_DT_INT8 = 3, AB_DT_UINT16 = 4,
	AB_DT_INT16 = 5, AB_DT_INT32 = 6, AB_DT_INT64 = 7, AB_DT_STRING = 8, AB_DT_BOOL = 9,
	AB_DT_FLOAT16 = 10, AB_DT_DOUBLE = 11, AB_DT_UINT32 = 12, AB_DT_UINT64 = 13, AB_DT_BFLOAT16 = 16
};
int ab_dtype_size(int dtype);      /* bytes per element, 0 when unknown */
int ab_dtype_is_float(int dtype);

/* A constant tensor value used for folding shape computations. Integer and bool types are kept in
 * `i`, floating types in `f`; exactly one of them is non-NULL (both NULL when n == 0, and for a
 * shape-only value, n == -1). The struct, its dims and its data are one allocation: a traced export
 * folds tens of thousands of tiny shape values, and a fixed dims[ABACUS_MAX_RANK] plus a separate data
 * block tripled the memory they touched (swin_v2_b: 20,000 values, page faults a third of the analysis). */
typedef struct ab_value {
	int dtype;
	int rank;
	int64_t n;
	int64_t *dims;            /* rank entries */
	int64_t *i;
	double *f;
	unsigned char in_arena;   /* allocated from an arena: ab_value_free leaves it to the arena */
} ab_value;

/* A value of the given type and shape with zeroed data, from `ar` (NULL: from the heap, freed with
 * ab_value_free). ab_value_new_shape: the same with no data (n == -1), for a tensor whose data was
 * stripped. */
ab_value *ab_value_new(ab_arena *ar, int dtype, int rank, const int64_t *dims, abacus_error *err);
ab_value *ab_value_new_shape(ab_arena *ar, int dtype, int rank, const int64_t *dims, abacus_error *err);
void ab_value_free(ab_value *v);
ab_value *ab_value_copy(ab_arena *ar, const ab_value *v, abacus_error *err);
static inline double ab_value_get(const ab_value *v, int64_t k)
{
	return v->i ? (double)v->i[k] : v->f[k];
}
/* double → int64 that saturates outside int64's range and maps NaN to 0, instead of being UB. */
static inline int64_t ab_f2i(double d)
{
	if (d != d)
		return 0;
	if (d <= -AB_I64_DOUBLE_MAX)
		return INT64_MIN;
	if (d >= AB_I64_DOUBLE_MAX)
		return INT64_MAX;
	return (int64_t)d;
}
static inline int64_t ab_value_geti(const ab_value *v, int64_t k)
{
	return v->i ? v->i[k] : ab_f2i(v->f[k]);
}

typedef enum { AB_ATTR_OTHER, AB_ATTR_INT, AB_ATTR_FLOAT, AB_ATTR_STRING, AB_ATTR_INTS, AB_ATTR_FLOATS,
	       AB_ATTR_TENSOR, AB_ATTR_GRAPH } ab_attr_type;

typedef struct ab_attr {
	char *name;
	ab_attr_type type;
	int64_t i;
	double f;
	char *s;
	int64_t *ints;
	size_t n_ints;
	ab_value *t;          /* AB_ATTR_TENSOR: dims and type always, data when it was present */
} ab_attr;

typedef enum { AB_T_VALUE = 0, AB_T_INPUT, AB_T_INIT } ab_tensor_kind;

typedef struct ab_tensor {
	char *name;
	ab_tensor_kind kind;
	int dtype;
	int rank;                          /* declared rank, -1 unknown */
	int64_t *dims;                     /* rank declared dims (-1 symbolic/unknown) in the graph's arena, or
	                                    * NULL when rank < 0: most tensors of an export declare no shape,
	                                    * and an inline dims[ABACUS_MAX_RANK] doubled the table's size */
	char **sym;                        /* NULL, or ABACUS_MAX_RANK symbolic dim names (NULL: none) from the
	                                    * declaration; rare, so not kept inline in every tensor */
	int producer;                      /* node index, or -1 */
	int n_consumers;                   /* number of node input slots that read it */
	ab_value *value;                   /* known constant (initializer with data, Constant node) */
	int is_param;                      /* a float initializer that trains (see graph.c) */
	int is_buffer;                     /* named a buffer by the file's abacus.buffers metadata */
} ab_tensor;

typedef struct ab_node {
	char *name;
	char *op;
	char *domain;
	int *in;
	int n_in;
	int *out;
	int n_out;
	ab_attr *attrs;
	int n_attrs;
	int op_index;                      /* row in the op table, -1 when unknown */
	int inplace_view;                  /* runs in place on a view (the file's abacus.inplace_views metadata) */
} ab_node;

struct abacus_graph {
	ab_tensor *tensors;
	int n_tensors;
	ab_node *nodes;
	int n_nodes;
	int *order;                        /* topological order of node indices */
	int *inputs;                       /* graph inputs that are not initializers */
	int n_inputs;
	int *outputs;
	int n_outputs;
	int64_t opset;
	char *producer_name;
	ab_arena arena;                    /* names, attribute names/strings/ints, node in/out and attr arrays */
};

const ab_attr *ab_node_attr(const ab_node *n, const char *name);
int64_t ab_attr_int(const ab_node *n, const char *name, int64_t dflt);
double ab_attr_float(const ab_node *n, const char *name, double dflt);
const char *ab_attr_str(const ab_node *n, const char *name, const char *dflt);
/* The ints of a list attribute, or NULL with *n = 0 when absent. */
const int64_t *ab_attr_ints(const ab_node *n, const char *name, size_t *count);

/* Builders used by the loader and by tests that make graphs by hand. */
void ab_graph_destroy(abacus_graph *g);
/* Computes consumers, the topological order, parameter flags; rejects cycles and dangling names. */
int ab_graph_finish(abacus_graph *g, abacus_error *err);

#endif
