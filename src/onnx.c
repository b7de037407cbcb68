/*
 * onnx.c — ONNX bytes → abacus_graph.
 *
 * The protobuf is decoded by protobuf-c with code generated from Debian's onnx.proto. We then copy what
 * the analysis needs (names, op types, attributes, declared types and shapes, small integer constants)
 * into our own IR, so initializer data is never kept: graph-only files (dims without data) and
 * external-data references load the same way. The model is never decoded as a whole: a walk over the
 * wire format finds its nodes, initializers, inputs ..., and each is decoded alone into an arena that is
 * rewound for the next (memory stays bounded by the largest element, not the file).
 *
 * Before decoding, a wire-format pre-scan bounds the nesting depth of sub-graphs: protobuf-c recurses
 * once per nested message, and a file that nests graphs thousands deep must be an error, not a stack
 * overflow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "graph.h"
#include "names.h"
#include "ops.h"
#include "onnx.pb-c.h"

#define AB_MAX_FILE ((size_t)1 << 31)   /* 2 GiB: protobuf's own limit for one message */
#define AB_MAX_NESTING 64

/* ---- protobuf-c allocator: an arena (blocks from ab_malloc, so allocation-failure injection reaches
 * it). The decoded message lives only while the graph is built, then goes in one free per block. ---- */

typedef struct pb_heap {
	ab_arena arena;
	int failed; /* remembered so that a failed unpack reports ENOMEM, not a parse error */
} pb_heap;

static void *pb_alloc(void *data, size_t size)
{
	pb_heap *h = data;
	void *p = ab_arena_alloc(&h->arena, size);
	if (!p)
		h->failed = 1;
	return p;
}

static void pb_free(void *data, void *p)
{
	(void)data;
	(void)p; /* arena memory goes with the arena */
}

/* ---- nesting pre-scan -------------------------------------------------------------------------- */

/* Reads a varint at *p (bounded by end); returns -1 when truncated or longer than 10 bytes. */
static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

/* Reads the field at *p: its number, and for a length-delimited one (wire type 2) where its payload lies
 * (*len; *payload is NULL for other wire types). Returns -1 on a malformed or truncated field. */
static int next_field(const uint8_t **p, const uint8_t *end, uint64_t *field, const uint8_t **payload,
                      uint64_t *len)
{
	uint64_t key, v;
	*payload = NULL;
	if (read_varint(p, end, &key))
		return -1;
	*field = key >> 3;
	switch (key & 7) {
	case 0:
		return read_varint(p, end, &v);
	case 1:
		if (end - *p < 8)
			return -1;
		*p += 8;
		return 0;
	case 5:
		if (end - *p < 4)
			return -1;
		*p += 4;
		return 0;
	case 2:
		if (read_varint(p, end, len) || *len > (uint64_t)(end - *p))
			return -1;
		*payload = *p;
		*p += *len;
		return 0;
	default:
		return -1; /* groups (3, 4) are not used by onnx.proto; 6 and 7 do not exist */
	}
}

/* Which message a field of a message holds, for the messages through which graphs nest:
 * ModelProto.graph(7) → GraphProto.node(1) → NodeProto.attribute(5) → AttributeProto.g(6)/graphs(11).
 * Field numbers come from onnx.proto. */
enum { M_OTHER, M_MODEL, M_GRAPH, M_NODE, M_ATTR };
static int child_kind(int kind, uint64_t field)
{
	switch (kind) {
	case M_MODEL: return field == 7 ? M_GRAPH : M_OTHER;
	case M_GRAPH: return field == 1 ? M_NODE : M_OTHER;
	case M_NODE: return field == 5 ? M_ATTR : M_OTHER;
	case M_ATTR: return (field == 6 || field == 11) ? M_GRAPH : M_OTHER;
	default: return M_OTHER;
	}
}

/* Walks the message at [p, end) of the given kind; fails on malformed wire data or excess nesting.
 * Recursion is bounded by AB_MAX_NESTING. */
static int prescan(const uint8_t *p, const uint8_t *end, int kind, int depth, const uint8_t *base,
                   abacus_error *err)
{
	if (depth > AB_MAX_NESTING)
		return ab_err_at(err, ABACUS_ELIMIT, p - base, "",
		                 "sub-graphs nest more than %d deep (at byte %lld)", AB_MAX_NESTING, (long long)(p - base));
	while (p < end) {
		const uint8_t *at = p, *payload;
		uint64_t field, len;
		if (next_field(&p, end, &field, &payload, &len))
			return ab_err_at(err, ABACUS_EPARSE, at - base, "",
			                 "not a valid ONNX protobuf: malformed or truncated field at byte %lld",
			                 (long long)(at - base));
		if (payload && child_kind(kind, field) != M_OTHER &&
		    prescan(payload, payload + len, child_kind(kind, field), depth + 1, base, err))
			return err ? err->code : ABACUS_EPARSE;
	}
	return 0;
}

/* ---- TensorProto → ab_value --------------------------------------------------------------------- */

static int64_t tensor_data_count(const Onnx__TensorProto *t, int dtype)
{
	if (t->has_raw_data && t->raw_data.len) {
		int sz = ab_dtype_size(dtype);
		return sz ? (int64_t)(t->raw_data.len / (size_t)sz) : -1;
	}
	switch (dtype) {
	case AB_DT_FLOAT: return (int64_t)t->n_float_data;
	case AB_DT_DOUBLE: return (int64_t)t->n_double_data;
	case AB_DT_INT64: return (int64_t)t->n_int64_data;
	case AB_DT_UINT64: return (int64_t)t->n_int64_data; /* ONNX stores uint64 in uint64_data; rare */
	default: return (int64_t)t->n_int32_data;
	}
}

static int64_t raw_int(const uint8_t *p, int dtype)
{
	/* ONNX raw_data is little-endian; we read byte by byte to stay alignment- and endian-safe. */
	uint64_t u = 0;
	int sz = ab_dtype_size(dtype);
	for (int k = 0; k < sz; k++)
		u |= (uint64_t)p[k] << (8 * k);
	switch (dtype) {
	case AB_DT_INT8: return (int8_t)u;
	case AB_DT_INT16: return (int16_t)u;
	case AB_DT_INT32: return (int32_t)u;
	case AB_DT_INT64: return (int64_t)u;
	default: return (int64_t)u;
	}
}

static double raw_float(const uint8_t *p, int dtype)
{
	uint64_t u = 0;
	int sz = ab_dtype_size(dtype);
	for (int k = 0; k < sz; k++)
		u |= (uint64_t)p[k] << (8 * k);
	if (dtype == AB_DT_DOUBLE) {
		double d;
		memcpy(&d, &u, 8);
		return d;
	}
	if (dtype == AB_DT_FLOAT) {
		uint32_t w = (uint32_t)u;
		float f;
		memcpy(&f, &w, 4);
		return f;
	}
	return 0.0; /* half types: never needed for shape folding */
}

/* Converts the declaration of `t` (and its data when present and small enough) into a value.
 * *out stays NULL when the tensor has no usable data (a graph-only initializer). */
static int tensor_value(ab_arena *ar, ab_value **out, int rank_out[1], int64_t dims_out[ABACUS_MAX_RANK],
                        const Onnx__TensorProto *t, const char *where, abacus_error *err)
{
	*out = NULL;
	int dtype = t->has_data_type ? t->data_type : AB_DT_UNDEFINED;
	if (t->n_dims > ABACUS_MAX_RANK)
		return ab_err(err, ABACUS_ELIMIT, where, "tensor '%s' has rank %zu; at most %d is supported",
		              where, t->n_dims, ABACUS_MAX_RANK);
	int64_t numel;
	if (ab_numel(t->dims, (int)t->n_dims, &numel))
		return ab_err(err, ABACUS_ESHAPE, where,
		              "tensor '%s' has a negative dim or dims whose product overflows 64 bits", where);
	rank_out[0] = (int)t->n_dims;
	for (size_t k = 0; k < t->n_dims; k++)
		dims_out[k] = t->dims[k];
	int64_t have = tensor_data_count(t, dtype);
	if (have <= 0 || t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return 0;
	if (have != numel)
		return ab_err(err, ABACUS_EPARSE, where, "tensor '%s' holds %lld elements but its dims say %lld", where,
		              (long long)have, (long long)numel);
	/* Only small constants matter for folding; large data (weights) is never kept. */
	if (numel > 4096 && !(dtype == AB_DT_INT64 || dtype == AB_DT_INT32))
		return 0;
	if (numel > AB_MAX_CONST_ELEMS)
		return 0;
	if (dtype == AB_DT_STRING || ab_dtype_size(dtype) == 0)
		return 0;
	ab_value *v = ab_value_new(ar, dtype, (int)t->n_dims, t->dims, err);
	if (!v)
		return err ? err->code : ABACUS_ENOMEM;
	const uint8_t *raw = t->has_raw_data && t->raw_data.len ? t->raw_data.data : NULL;
	int sz = ab_dtype_size(dtype);
	for (int64_t k = 0; k < numel; k++) {
		if (v->i) {
			if (raw)
				v->i[k] = raw_int(raw + k * sz, dtype);
			else if (dtype == AB_DT_INT64 || dtype == AB_DT_UINT64)
				v->i[k] = t->int64_data[k];
			else
				v->i[k] = t->int32_data[k];
		} else {
			if (raw)
				v->f[k] = raw_float(raw + k * sz, dtype);
			else if (dtype == AB_DT_FLOAT)
				v->f[k] = t->float_data[k];
			else if (dtype == AB_DT_DOUBLE)
				v->f[k] = t->double_data[k];
			else
				v->f[k] = 0.0;
		}
	}
	*out = v;
	return 0;
}

/* ---- model → graph ------------------------------------------------------------------------------ */

/* Where the messages of a model lie in the file. The model is decoded one element at a time (a node, an
 * initializer ...) into an arena that is rewound after each, never as a whole: a whole decoded model takes
 * about twice the file's size in small allocations, and fresh memory is what loading a big graph spends
 * most of its time on (and, for a million nodes, most of its memory). */
typedef struct slice {
	const uint8_t *p;
	size_t len;
} slice;

typedef struct slices {
	slice *v;
	size_t n, cap;
} slices;

enum { S_OPSET, S_META, S_NODE, S_INIT, S_INPUT, S_OUTPUT, S_VALUE_INFO, N_SLICES };

typedef struct wire_model {
	slices s[N_SLICES];
	int graphs;             /* ModelProto.graph fields seen (protobuf merges repeats: lists concatenate) */
	slice producer;         /* ModelProto.producer_name (the last one wins) */
} wire_model;

typedef struct loader {
	abacus_graph *g;
	ab_names names;
	ab_names ops;     /* op_type -> op table row + 1 (0: not in the table), default domain only */
	int cap_tensors;
	abacus_error *err;
	pb_heap *heap;    /* decoding arena, rewound after each element */
	const uint8_t *base;
	wire_model w;
} loader;

/* Returns the index of the tensor called `name`, creating it when `create` is set. */
static int tensor_index(loader *L, const char *name, int create, int *out)
{
	uint64_t h = ab_names_hash(name);
	int idx = ab_names_get_h(&L->names, name, h);
	if (idx >= 0 || !create) {
		*out = idx;
		return 0;
	}
	abacus_graph *g = L->g;
	if (g->n_tensors == L->cap_tensors) {
		int cap = L->cap_tensors ? L->cap_tensors * 2 : 256;
		ab_tensor *t = ab_realloc(g->tensors, (size_t)cap * sizeof *t);
		if (!t)
			return ab_err(L->err, ABACUS_ENOMEM, name, "out of memory");
		g->tensors = t;
		L->cap_tensors = cap;
	}
	ab_tensor *t = &g->tensors[g->n_tensors];
	memset(t, 0, sizeof *t);
	t->rank = -1;
	t->producer = -1;
	t->name = ab_arena_strdup(&g->arena, name);
	if (!t->name || ab_names_put_h(&L->names, t->name, h, g->n_tensors))
		return ab_err(L->err, ABACUS_ENOMEM, name, "out of memory");
	*out = g->n_tensors++;
	return 0;
}

/* Gives tensor t room for its declared dims (ABACUS_MAX_RANK: an initializer's rank is read with them). */
static int tensor_dims(loader *L, ab_tensor *t)
{
	if (!t->dims)
		t->dims = ab_arena_alloc(&L->g->arena, ABACUS_MAX_RANK * sizeof *t->dims);
	return t->dims ? 0 : ab_err(L->err, ABACUS_ENOMEM, t->name, "out of memory");
}

/* Copies a ValueInfoProto's type and shape into tensor `idx` (declared shape). */
static int declare(loader *L, int idx, const Onnx__ValueInfoProto *vi)
{
	ab_tensor *t = &L->g->tensors[idx];
	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type)
		return 0;
	const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
	if (tt->has_elem_type)
		t->dtype = tt->elem_type;
	if (!tt->shape)
		return 0;
	if (tt->shape->n_dim > ABACUS_MAX_RANK)
		return ab_err(L->err, ABACUS_ELIMIT, t->name, "tensor '%s' is declared with rank %zu; at most %d is supported",
		              t->name, tt->shape->n_dim, ABACUS_MAX_RANK);
	int rc = tensor_dims(L, t);
	if (rc)
		return rc;
	t->rank = (int)tt->shape->n_dim;
	for (int k = 0; k < t->rank; k++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
		t->dims[k] = -1;
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0)
				return ab_err(L->err, ABACUS_ESHAPE, t->name, "tensor '%s' declares a negative dim %lld at axis %d",
				              t->name, (long long)d->dim_value, k);
			t->dims[k] = d->dim_value;
		} else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param) {
			if (!t->sym)
				t->sym = ab_arena_calloc(&L->g->arena, ABACUS_MAX_RANK, sizeof *t->sym);
			if (t->sym)
				t->sym[k] = ab_arena_strdup(&L->g->arena, d->dim_param);
			if (!t->sym || !t->sym[k])
				return ab_err(L->err, ABACUS_ENOMEM, t->name, "out of memory");
		}
	}
	return 0;
}

static int copy_attr(loader *L, ab_attr *a, const Onnx__AttributeProto *p, const char *node)
{
	ab_arena *ar = &L->g->arena;
	a->name = ab_arena_strdup(ar, p->name ? p->name : "");
	if (!a->name)
		return ab_err(L->err, ABACUS_ENOMEM, node, "out of memory");
	switch (p->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
		a->type = AB_ATTR_INT;
		a->i = p->i;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
		a->type = AB_ATTR_FLOAT;
		a->f = p->f;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
		a->type = AB_ATTR_STRING;
		a->s = ab_arena_strndup(ar, (const char *)p->s.data ? (const char *)p->s.data : "", p->s.len);
		if (!a->s)
			return ab_err(L->err, ABACUS_ENOMEM, node, "out of memory");
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
		a->type = AB_ATTR_INTS;
		a->n_ints = p->n_ints;
		a->ints = ab_arena_alloc(ar, p->n_ints * sizeof *a->ints);
		if (!a->ints)
			return ab_err(L->err, ABACUS_ENOMEM, node, "out of memory");
		if (p->n_ints)
			memcpy(a->ints, p->ints, p->n_ints * sizeof *a->ints);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
		/* Float lists (Resize scales come as inputs, not attributes) are kept as ints only where
		 * integral; no op in the table needs them, so we keep the type for reporting. */
		a->type = AB_ATTR_FLOATS;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
		a->type = AB_ATTR_TENSOR;
		if (!p->t)
			break;
		int rank;
		int64_t dims[ABACUS_MAX_RANK];
		int rc = tensor_value(&L->g->arena, &a->t, &rank, dims, p->t, node, L->err);
		if (rc)
			return rc;
		if (!a->t) {
			/* A tensor attribute without data still tells its type and shape. */
			int dt = p->t->has_data_type ? p->t->data_type : AB_DT_FLOAT;
			a->t = ab_value_new_shape(&L->g->arena, dt, rank, dims, L->err);
			if (!a->t)
				return L->err ? L->err->code : ABACUS_ENOMEM;
		}
		break;
	}
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
		a->type = AB_ATTR_GRAPH;
		break;
	default:
		a->type = AB_ATTR_OTHER;
		break;
	}
	return 0;
}

/* The op table row of a node's op_type (-1 when unknown). A graph has thousands of nodes but a few dozen
 * op types: the answer is cached per type. */
static int op_row(loader *L, const Onnx__NodeProto *p, int *row)
{
	const char *dom = p->domain ? p->domain : "";
	if (dom[0] && strcmp(dom, "ai.onnx")) {
		*row = ab_op_lookup(p->op_type, dom);
		return 0;
	}
	uint64_t h = ab_names_hash(p->op_type);
	int v = ab_names_get_h(&L->ops, p->op_type, h);
	if (v < 0) {
		v = ab_op_lookup(p->op_type, "") + 1;
		/* The decoded node goes away after this node: the key is copied into the graph's arena. */
		const char *key = ab_arena_strdup(&L->g->arena, p->op_type);
		if (!key || ab_names_put_h(&L->ops, key, h, v))
			return ab_err(L->err, ABACUS_ENOMEM, p->name, "out of memory");
	}
	*row = v - 1;
	return 0;
}

static int add_node(loader *L, const Onnx__NodeProto *p, int index)
{
	abacus_graph *g = L->g;
	ab_node *n = &g->nodes[index];
	char fallback[64];
	int rc;
	if (p->n_input > AB_MAX_IO || p->n_output > AB_MAX_IO)
		return ab_err(L->err, ABACUS_ELIMIT, p->name, "node '%s' has more than %d inputs or outputs",
		              p->name ? p->name : "", AB_MAX_IO);
	if (!p->op_type || !p->op_type[0])
		return ab_err(L->err, ABACUS_EGRAPH, p->name, "node %d ('%s') has no op_type", index,
		              p->name ? p->name : "");
	ab_arena *ar = &g->arena;
	if (p->name && p->name[0]) {
		n->name = ab_arena_strdup(ar, p->name);
	} else {
		snprintf(fallback, sizeof fallback, "%.40s_%d", p->op_type, index);
		n->name = ab_arena_strdup(ar, fallback);
	}
	/* Few allocations per node: a million-node graph must load in bounded time. Known op types point at
	 * the op table's name, the default domain at a literal; inputs and outputs share one array. */
	int row = -1;
	if ((rc = op_row(L, p, &row)))
		return rc;
	n->op = row >= 0 ? (char *)ab_ops[row].name : ab_arena_strdup(ar, p->op_type);
	n->op_index = row;
	n->domain = (char *)(p->domain && p->domain[0] ? p->domain : "");
	if (row < 0)
		n->domain = ab_arena_strdup(ar, n->domain);
	n->in = ab_arena_alloc(ar, (p->n_input + p->n_output + 1) * sizeof *n->in);
	n->out = n->in ? n->in + p->n_input : NULL;
	n->attrs = p->n_attribute ? ab_arena_calloc(ar, p->n_attribute, sizeof *n->attrs) : NULL;
	if (!n->name || !n->op || !n->domain || !n->in || (p->n_attribute && !n->attrs))
		return ab_err(L->err, ABACUS_ENOMEM, p->name, "out of memory");
	for (size_t k = 0; k < p->n_attribute; k++) {
		n->n_attrs = (int)k + 1;
		if ((rc = copy_attr(L, &n->attrs[k], p->attribute[k], n->name)))
			return rc;
	}
	for (size_t k = 0; k < p->n_input; k++) {
		n->n_in = (int)k + 1;
		n->in[k] = -1;
		if (!p->input[k] || !p->input[k][0])
			continue; /* an omitted optional input */
		int idx;
		if ((rc = tensor_index(L, p->input[k], 0, &idx)))
			return rc;
		if (idx < 0)
			return ab_err(L->err, ABACUS_EGRAPH, n->name,
			              "node '%s' (%s) reads tensor '%s', which no node, input or initializer defines before it",
			              n->name, n->op, p->input[k]);
		n->in[k] = idx;
	}
	for (size_t k = 0; k < p->n_output; k++) {
		n->n_out = (int)k + 1;
		n->out[k] = -1;
		if (!p->output[k] || !p->output[k][0])
			continue;
		int idx;
		if ((rc = tensor_index(L, p->output[k], 1, &idx)))
			return rc;
		ab_tensor *t = &g->tensors[idx];
		if (t->producer >= 0 || t->kind != AB_T_VALUE)
			return ab_err(L->err, ABACUS_EGRAPH, n->name, "tensor '%s' is produced twice (by node '%s' and earlier)",
			              p->output[k], n->name);
		t->producer = index;
		n->out[k] = idx;
	}
	return 0;
}

/* ---- the wire walk ----------------------------------------------------------------------------- */

static int slices_add(loader *L, int kind, const uint8_t *p, size_t len)
{
	slices *s = &L->w.s[kind];
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		slice *v = ab_realloc(s->v, cap * sizeof *v);
		if (!v)
			return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory");
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].p = p;
	s->v[s->n].len = len;
	s->n++;
	return 0;
}

/* Calls fn(L, field, p, len) for each length-delimited field of the message at [p, end); other wire
 * types are skipped. The pre-scan has validated the wire format, so a failure here is unexpected. */
static int each_field(loader *L, const uint8_t *p, const uint8_t *end,
                      int (*fn)(loader *, uint64_t, const uint8_t *, size_t))
{
	while (p < end) {
		const uint8_t *at = p, *payload;
		uint64_t field, len;
		if (next_field(&p, end, &field, &payload, &len))
			return ab_err_at(L->err, ABACUS_EPARSE, at - L->base, "",
			                 "not a valid ONNX protobuf: malformed field at byte %lld", (long long)(at - L->base));
		int rc = payload ? fn(L, field, payload, (size_t)len) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* GraphProto fields (onnx.proto): node 1, initializer 5, input 11, output 12, value_info 13. */
static int graph_field(loader *L, uint64_t field, const uint8_t *p, size_t len)
{
	switch (field) {
	case 1: return slices_add(L, S_NODE, p, len);
	case 5: return slices_add(L, S_INIT, p, len);
	case 11: return slices_add(L, S_INPUT, p, len);
	case 12: return slices_add(L, S_OUTPUT, p, len);
	case 13: return slices_add(L, S_VALUE_INFO, p, len);
	default: return 0;
	}
}

/* ModelProto fields: producer_name 2, graph 7, opset_import 8, metadata_props 14. */
static int model_field(loader *L, uint64_t field, const uint8_t *p, size_t len)
{
	switch (field) {
	case 2:
		L->w.producer.p = p;
		L->w.producer.len = len;
		return 0;
	case 7:
		L->w.graphs++;
		return each_field(L, p, p + len, graph_field);
	case 8: return slices_add(L, S_OPSET, p, len);
	case 14: return slices_add(L, S_META, p, len);
	default: return 0;
	}
}

/* Decodes element k of a list with protobuf-c into the rewound arena. */
#define DECODE(L, type, kind, k, what) \
	((type *)decode((L), (kind), (k), (what), \
	                (void *(*)(ProtobufCAllocator *, size_t, const uint8_t *))type##_unpack_any))

static void *decode(loader *L, int kind, size_t k, const char *what,
                    void *(*unpack)(ProtobufCAllocator *, size_t, const uint8_t *))
{
	ab_arena_reset(&L->heap->arena);
	L->heap->failed = 0;
	ProtobufCAllocator alloc = { pb_alloc, pb_free, L->heap };
	const slice *s = &L->w.s[kind].v[k];
	void *m = unpack(&alloc, s->len, s->p);
	if (!m) {
		if (L->heap->failed)
			ab_err(L->err, ABACUS_ENOMEM, "", "out of memory decoding %s %zu of the graph", what, k);
		else
			/* The pre-scan accepted the wire format: a field of the wrong type, invalid UTF-8, or a
			 * missing required field. */
			ab_err_at(L->err, ABACUS_EPARSE, s->p - L->base, "",
			          "cannot decode %s %zu of the graph (bytes %lld to %lld) as an ONNX message: wrong field "
			          "types or invalid UTF-8", what, k, (long long)(s->p - L->base),
			          (long long)(s->p - L->base + (ptrdiff_t)s->len));
	}
	return m;
}

/* protobuf-c's generated unpack functions, with one signature for decode(). */
#define UNPACK_ANY(type, fn) \
	static void *type##_unpack_any(ProtobufCAllocator *a, size_t len, const uint8_t *p) { return fn(a, len, p); }
UNPACK_ANY(Onnx__NodeProto, onnx__node_proto__unpack)
UNPACK_ANY(Onnx__TensorProto, onnx__tensor_proto__unpack)
UNPACK_ANY(Onnx__ValueInfoProto, onnx__value_info_proto__unpack)
UNPACK_ANY(Onnx__OperatorSetIdProto, onnx__operator_set_id_proto__unpack)
UNPACK_ANY(Onnx__StringStringEntryProto, onnx__string_string_entry_proto__unpack)

/* NodeProto.output (field 2) strings, read from the wire without decoding the node: pass 1 of add_nodes
 * needs only them. */
static int node_output_field(loader *L, uint64_t field, const uint8_t *p, size_t len)
{
	if (field != 2 || len == 0)
		return 0;
	char buf[512];
	char *name = len < sizeof buf ? buf : ab_arena_alloc(&L->heap->arena, len + 1);
	if (!name)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory");
	memcpy(name, p, len);
	name[len] = '\0';
	if (!name[0])
		return 0; /* an embedded NUL: the decoded node reads it as empty (an omitted output) */
	int idx;
	return tensor_index(L, name, 1, &idx);
}

/* Nodes may appear in any order in a file; outputs are registered first so that inputs resolve. */
static int add_nodes(loader *L)
{
	abacus_graph *g = L->g;
	const slices *nodes = &L->w.s[S_NODE];
	int rc;
	if (nodes->n > AB_MAX_NODES)
		return ab_err(L->err, ABACUS_ELIMIT, "", "the graph has %zu nodes; the limit is %d", nodes->n, AB_MAX_NODES);
	g->nodes = ab_calloc(nodes->n, sizeof *g->nodes);
	if (!g->nodes)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory for %zu nodes", nodes->n);
	/* Pass 1: outputs. */
	for (size_t i = 0; i < nodes->n; i++) {
		ab_arena_reset(&L->heap->arena);
		if ((rc = each_field(L, nodes->v[i].p, nodes->v[i].p + nodes->v[i].len, node_output_field)))
			return rc;
	}
	/* Pass 2: the nodes themselves. */
	for (size_t i = 0; i < nodes->n; i++) {
		const Onnx__NodeProto *p = DECODE(L, Onnx__NodeProto, S_NODE, i, "node");
		if (!p)
			return L->err ? L->err->code : ABACUS_EPARSE;
		g->n_nodes = (int)i + 1;
		if ((rc = add_node(L, p, (int)i)))
			return rc;
	}
	return 0;
}

/* Calls f(L, name, ctx) for each item of a comma-separated metadata value (items of 1024 bytes and more
 * are no name this loader knows, and are skipped). */
static int each_listed(loader *L, const char *value, int (*f)(loader *, const char *, void *), void *ctx)
{
	for (const char *p = value; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char name[1024];
		if (len > 0 && len < sizeof name) {
			memcpy(name, p, len);
			name[len] = '\0';
			int rc = f(L, name, ctx);
			if (rc)
				return rc;
		}
		p = end ? end + 1 : p + len;
	}
	return 0;
}

static int mark_buffer(loader *L, const char *name, void *ctx)
{
	(void)ctx;
	int idx = ab_names_get(&L->names, name);
	if (idx >= 0 && L->g->tensors[idx].kind == AB_T_INIT)
		L->g->tensors[idx].is_buffer = 1;
	return 0;
}

static int mark_inplace_view(loader *L, const char *name, void *ctx)
{
	int idx = ab_names_get((const ab_names *)ctx, name);
	if (idx >= 0)
		L->g->nodes[idx].inplace_view = 1;
	return 0;
}

/* The exporter's facts that an ONNX graph cannot state (names that are not in the graph are ignored):
 * - abacus.buffers: floating-point initializers that are buffers, not trainable (without it, the
 *   structural rule of graph.c decides);
 * - abacus.inplace_views: nodes that compute a module run in place on a view (collector/graph_export.py
 *   inplace_view_modules; the runtime prices their backward: ab_step_memory.inplace_view_copies). */
static int read_metadata(loader *L)
{
	abacus_graph *g = L->g;
	const wire_model *w = &L->w;
	for (size_t k = 0; k < w->s[S_META].n; k++) {
		const Onnx__StringStringEntryProto *e = DECODE(L, Onnx__StringStringEntryProto, S_META, k, "metadata entry");
		if (!e)
			return L->err ? L->err->code : ABACUS_EPARSE;
		if (!e->key || !e->value || !e->value[0])
			continue;
		int rc = 0;
		if (!strcmp(e->key, "abacus.buffers")) {
			rc = each_listed(L, e->value, mark_buffer, NULL);
		} else if (!strcmp(e->key, "abacus.inplace_views")) {
			ab_names nodes;
			if (ab_names_init(&nodes, (size_t)g->n_nodes))
				return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory for the names of %d nodes", g->n_nodes);
			for (int i = 0; i < g->n_nodes && !rc; i++)
				if (g->nodes[i].name && g->nodes[i].name[0] && ab_names_put(&nodes, g->nodes[i].name, i))
					rc = ab_err(L->err, ABACUS_ENOMEM, "", "out of memory for the names of %d nodes", g->n_nodes);
			if (!rc)
				rc = each_listed(L, e->value, mark_inplace_view, &nodes);
			ab_names_free(&nodes);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* The graph inputs that are not initializers (old exporters list initializers as inputs too). */
static int add_inputs(loader *L)
{
	abacus_graph *g = L->g;
	const wire_model *w = &L->w;
	int rc;
	size_t n_in = w->s[S_INPUT].n;
	g->inputs = ab_malloc((n_in ? n_in : 1) * sizeof *g->inputs);
	if (!g->inputs)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory");
	for (size_t k = 0; k < n_in; k++) {
		const Onnx__ValueInfoProto *vi = DECODE(L, Onnx__ValueInfoProto, S_INPUT, k, "graph input");
		if (!vi)
			return L->err ? L->err->code : ABACUS_EPARSE;
		const char *name = vi->name ? vi->name : "";
		int idx;
		if ((rc = tensor_index(L, name, 0, &idx)))
			return rc;
		if (idx >= 0 && g->tensors[idx].kind == AB_T_INIT)
			continue; /* old exporters list initializers as inputs too */
		if (idx >= 0)
			return ab_err(L->err, ABACUS_EGRAPH, name, "graph input '%s' is declared twice", name);
		if ((rc = tensor_index(L, name, 1, &idx)))
			return rc;
		g->tensors[idx].kind = AB_T_INPUT;
		if ((rc = declare(L, idx, vi)))
			return rc;
		g->inputs[g->n_inputs++] = idx;
	}
	return 0;
}

static int build(loader *L)
{
	abacus_graph *g = L->g;
	const wire_model *w = &L->w;
	int rc;
	if (!w->graphs)
		return ab_err(L->err, ABACUS_EGRAPH, "", "the model has no graph (is this an ONNX model file?)");
	g->opset = -1;
	for (size_t k = 0; k < w->s[S_OPSET].n; k++) {
		const Onnx__OperatorSetIdProto *o = DECODE(L, Onnx__OperatorSetIdProto, S_OPSET, k, "opset import");
		if (!o)
			return L->err ? L->err->code : ABACUS_EPARSE;
		if ((!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) && o->has_version)
			g->opset = o->version;
	}
	if (g->opset < 0)
		return ab_err(L->err, ABACUS_EGRAPH, "", "the model imports no default-domain opset");
	if (g->opset < 7 || g->opset > 21)
		return ab_err(L->err, ABACUS_EUNSUPPORTED, "", "opset %lld is not supported (11 to 17 are tested)",
		              (long long)g->opset);
	g->producer_name = ab_arena_strndup(&g->arena, w->producer.p ? (const char *)w->producer.p : "", w->producer.len);
	if (!g->producer_name)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory");

	/* Initializers first: they are constants whether or not they are also listed as inputs. */
	for (size_t k = 0; k < w->s[S_INIT].n; k++) {
		const Onnx__TensorProto *tp = DECODE(L, Onnx__TensorProto, S_INIT, k, "initializer");
		if (!tp)
			return L->err ? L->err->code : ABACUS_EPARSE;
		const char *name = tp->name ? tp->name : "";
		int idx;
		if ((rc = tensor_index(L, name, 0, &idx)))
			return rc;
		if (idx >= 0)
			return ab_err(L->err, ABACUS_EGRAPH, name, "initializer '%s' is defined twice", name);
		if ((rc = tensor_index(L, name, 1, &idx)))
			return rc;
		ab_tensor *t = &g->tensors[idx];
		t->kind = AB_T_INIT;
		t->dtype = tp->has_data_type ? tp->data_type : AB_DT_UNDEFINED;
		if ((rc = tensor_dims(L, t)) || (rc = tensor_value(&L->g->arena, &t->value, &t->rank, t->dims, tp, name, L->err)))
			return rc;
	}
	if ((rc = add_inputs(L)) || (rc = add_nodes(L)) || (rc = read_metadata(L)))
		return rc;
	/* Declared shapes of intermediate values help only for ops we do not know. */
	for (size_t k = 0; k < w->s[S_VALUE_INFO].n; k++) {
		const Onnx__ValueInfoProto *vi = DECODE(L, Onnx__ValueInfoProto, S_VALUE_INFO, k, "value_info");
		if (!vi)
			return L->err ? L->err->code : ABACUS_EPARSE;
		int idx;
		if (!vi->name)
			continue;
		if ((rc = tensor_index(L, vi->name, 0, &idx)))
			return rc;
		if (idx >= 0 && g->tensors[idx].kind == AB_T_VALUE && (rc = declare(L, idx, vi)))
			return rc;
	}
	size_t n_out = w->s[S_OUTPUT].n;
	g->outputs = ab_malloc((n_out ? n_out : 1) * sizeof *g->outputs);
	if (!g->outputs)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory");
	for (size_t k = 0; k < n_out; k++) {
		const Onnx__ValueInfoProto *vi = DECODE(L, Onnx__ValueInfoProto, S_OUTPUT, k, "graph output");
		if (!vi)
			return L->err ? L->err->code : ABACUS_EPARSE;
		const char *name = vi->name ? vi->name : "";
		int idx;
		if ((rc = tensor_index(L, name, 0, &idx)))
			return rc;
		if (idx < 0)
			return ab_err(L->err, ABACUS_EGRAPH, name, "graph output '%s' is not produced by any node", name);
		if (g->tensors[idx].kind == AB_T_VALUE && (rc = declare(L, idx, vi)))
			return rc;
		g->outputs[g->n_outputs++] = idx;
	}
	if (g->n_outputs == 0)
		return ab_err(L->err, ABACUS_EGRAPH, "", "the graph has no outputs");
	ab_arena_free(&L->heap->arena);
	return ab_graph_finish(g, L->err);
}

int abacus_graph_load(abacus_graph **out, const void *buf, size_t len, abacus_error *err)
{
	ab_err_clear(err);
	*out = NULL;
	if (!buf && len)
		return ab_err(err, ABACUS_EINVAL, "", "NULL buffer");
	if (len == 0)
		return ab_err(err, ABACUS_EPARSE, "", "empty input: an ONNX file cannot be 0 bytes");
	if (len > AB_MAX_FILE)
		return ab_err(err, ABACUS_ELIMIT, "", "input of %zu bytes exceeds the 2 GiB protobuf limit", len);
	int rc = prescan(buf, (const uint8_t *)buf + len, M_MODEL, 0, buf, err);
	if (rc)
		return rc;
	pb_heap heap = { AB_ARENA_INIT, 0 }; /* blocks start small: one element is decoded at a time */
	loader L = { 0 };
	L.err = err;
	L.heap = &heap;
	L.base = buf;
	L.g = ab_calloc(1, sizeof *L.g);
	if (!L.g) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	ab_arena_init(&L.g->arena, len / 4);
	if ((rc = each_field(&L, buf, (const uint8_t *)buf + len, model_field)))
		goto out;
	/* Tables sized once from the element counts: growing them by doubling touched twice the memory,
	 * and fresh memory is what a load spends its time on. About one output per node. */
	size_t expect = L.w.s[S_NODE].n + (L.w.s[S_NODE].n >> 2) + L.w.s[S_INIT].n + L.w.s[S_INPUT].n + 16;
	if (expect > (size_t)AB_MAX_NODES)
		expect = (size_t)AB_MAX_NODES;
	L.g->tensors = ab_malloc(expect * sizeof *L.g->tensors);
	L.cap_tensors = (int)expect;
	if (!L.g->tensors || ab_names_init(&L.names, expect) || ab_names_init(&L.ops, 64)) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	rc = build(&L);
out:
	ab_names_free(&L.names);
	ab_names_free(&L.ops);
	for (int k = 0; k < N_SLICES; k++)
		ab_free(L.w.s[k].v);
	ab_arena_free(&heap.arena);
	if (rc) {
		ab_graph_destroy(L.g);
		return rc;
	}
	*out = L.g;
	return 0;
}

/* A regular file is mapped rather than read: its pages come from the page cache as the decoder walks
 * them, with no copy and no fresh memory (3.4 MB of swin_v2_b took a quarter of its load time to read).
 * Anything else (a pipe, /dev/stdin) is read into memory. */
int abacus_graph_load_file(abacus_graph **out, const char *path, abacus_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ab_err(err, ABACUS_EIO, path, "cannot open '%s': %s", path, strerror(errno));
	struct stat st;
	int rc;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		if ((uint64_t)st.st_size > AB_MAX_FILE) {
			close(fd);
			return ab_err(err, ABACUS_ELIMIT, path, "'%s' is larger than the %zu-byte limit", path, AB_MAX_FILE);
		}
		size_t len = (size_t)st.st_size;
		void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		close(fd);
		if (map != MAP_FAILED) {
			rc = abacus_graph_load(out, map, len, err);
			munmap(map, len);
			goto done;
		}
	} else {
		close(fd);
	}
	char *data;
	size_t len;
	rc = ab_read_file(&data, &len, path, AB_MAX_FILE, err);
	if (rc)
		return rc;
	rc = abacus_graph_load(out, data, len, err);
	ab_free(data);
done:
	if (rc && err && !err->where[0])
		snprintf(err->where, sizeof err->where, "%s", path);
	return rc;
}
