/*
 * onnx.c — ONNX bytes → abacus_graph.
 *
 * The protobuf is decoded by protobuf-c with code generated from Debian's onnx.proto. We then copy what
 * the analysis needs (names, op types, attributes, declared types and shapes, small integer constants)
 * into our own IR and drop the protobuf tree, so initializer data is never copied or kept: graph-only
 * files (dims without data) and external-data references load the same way.
 *
 * Before decoding, a wire-format pre-scan bounds the nesting depth of sub-graphs: protobuf-c recurses
 * once per nested message, and a file that nests graphs thousands deep must be an error, not a stack
 * overflow.
 */
#include <stdio.h>
#include <string.h>

#include "graph.h"
#include "names.h"
#include "ops.h"
#include "onnx.pb-c.h"

#define AB_MAX_FILE ((size_t)1 << 31)   /* 2 GiB: protobuf's own limit for one message */
#define AB_MAX_NESTING 64

/* ---- protobuf-c allocator routed through ab_malloc (so allocation-failure injection reaches it) ---- */

static void *pb_alloc(void *data, size_t size)
{
	void *p = ab_malloc(size);
	if (!p)
		*(int *)data = 1; /* remembered so that a failed unpack reports ENOMEM, not a parse error */
	return p;
}

static void pb_free(void *data, void *p)
{
	(void)data;
	ab_free(p);
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
		const uint8_t *at = p;
		uint64_t key, len, v;
		if (read_varint(&p, end, &key))
			goto bad;
		uint64_t field = key >> 3;
		switch (key & 7) {
		case 0:
			if (read_varint(&p, end, &v))
				goto bad;
			break;
		case 1:
			if (end - p < 8)
				goto bad;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				goto bad;
			p += 4;
			break;
		case 2:
			if (read_varint(&p, end, &len) || len > (uint64_t)(end - p))
				goto bad;
			if (child_kind(kind, field) != M_OTHER &&
			    prescan(p, p + len, child_kind(kind, field), depth + 1, base, err))
				return err ? err->code : ABACUS_EPARSE;
			p += len;
			break;
		default:
			p = at;
			goto bad;
		}
		continue;
	bad:
		return ab_err_at(err, ABACUS_EPARSE, at - base, "",
		                 "not a valid ONNX protobuf: malformed or truncated field at byte %lld",
		                 (long long)(at - base));
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
static int tensor_value(ab_value **out, int rank_out[1], int64_t dims_out[ABACUS_MAX_RANK],
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
	ab_value *v = ab_value_new(dtype, (int)t->n_dims, t->dims, err);
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

typedef struct loader {
	abacus_graph *g;
	ab_names names;
	int cap_tensors;
	abacus_error *err;
} loader;

/* Returns the index of the tensor called `name`, creating it when `create` is set. */
static int tensor_index(loader *L, const char *name, int create, int *out)
{
	int idx = ab_names_get(&L->names, name);
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
	t->name = ab_strdup(name);
	if (!t->name)
		return ab_err(L->err, ABACUS_ENOMEM, name, "out of memory");
	if (ab_names_put(&L->names, t->name, g->n_tensors)) {
		ab_free(t->name);
		return ab_err(L->err, ABACUS_ENOMEM, name, "out of memory");
	}
	*out = g->n_tensors++;
	return 0;
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
			ab_free(t->sym[k]);
			t->sym[k] = ab_strdup(d->dim_param);
			if (!t->sym[k])
				return ab_err(L->err, ABACUS_ENOMEM, t->name, "out of memory");
		}
	}
	return 0;
}

static int copy_attr(loader *L, ab_attr *a, const Onnx__AttributeProto *p, const char *node)
{
	a->name = ab_strdup(p->name ? p->name : "");
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
		a->s = ab_strndup((const char *)p->s.data ? (const char *)p->s.data : "", p->s.len);
		if (!a->s)
			return ab_err(L->err, ABACUS_ENOMEM, node, "out of memory");
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
		a->type = AB_ATTR_INTS;
		a->n_ints = p->n_ints;
		a->ints = ab_malloc(p->n_ints * sizeof *a->ints);
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
		int rc = tensor_value(&a->t, &rank, dims, p->t, node, L->err);
		if (rc)
			return rc;
		if (!a->t) {
			/* A tensor attribute without data still tells its type and shape. */
			int dt = p->t->has_data_type ? p->t->data_type : AB_DT_FLOAT;
			a->t = ab_value_new(dt, rank, dims, L->err);
			if (!a->t)
				return L->err ? L->err->code : ABACUS_ENOMEM;
			ab_free(a->t->i);
			ab_free(a->t->f);
			a->t->i = NULL;
			a->t->f = NULL;
			a->t->n = -1; /* shape only */
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
	if (p->name && p->name[0]) {
		n->name = ab_strdup(p->name);
	} else {
		snprintf(fallback, sizeof fallback, "%.40s_%d", p->op_type, index);
		n->name = ab_strdup(fallback);
	}
	/* Few allocations per node: a million-node graph must load in bounded time. Known op types point at
	 * the op table's name, the default domain at a literal; inputs and outputs share one array. */
	int row = ab_op_lookup(p->op_type, p->domain ? p->domain : "");
	n->op = row >= 0 ? (char *)ab_ops[row].name : ab_strdup(p->op_type);
	n->own_strings = row < 0;
	n->op_index = row;
	n->domain = (char *)(p->domain && p->domain[0] ? p->domain : "");
	if (n->own_strings)
		n->domain = ab_strdup(n->domain);
	n->in = ab_malloc((p->n_input + p->n_output + 1) * sizeof *n->in);
	n->out = n->in ? n->in + p->n_input : NULL;
	n->attrs = p->n_attribute ? ab_calloc(p->n_attribute, sizeof *n->attrs) : NULL;
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

/* Nodes may appear in any order in a file; outputs are registered first so that inputs resolve. */
static int add_nodes(loader *L, const Onnx__GraphProto *gp)
{
	abacus_graph *g = L->g;
	int rc;
	if (gp->n_node > AB_MAX_NODES)
		return ab_err(L->err, ABACUS_ELIMIT, "", "the graph has %zu nodes; the limit is %d", gp->n_node, AB_MAX_NODES);
	g->nodes = ab_calloc(gp->n_node, sizeof *g->nodes);
	if (!g->nodes)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory for %zu nodes", gp->n_node);
	/* Pass 1: outputs. */
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *p = gp->node[i];
		for (size_t k = 0; k < p->n_output; k++) {
			if (!p->output[k] || !p->output[k][0])
				continue;
			int idx;
			if ((rc = tensor_index(L, p->output[k], 1, &idx)))
				return rc;
		}
	}
	/* Pass 2: the nodes themselves. */
	for (size_t i = 0; i < gp->n_node; i++) {
		g->n_nodes = (int)i + 1;
		if ((rc = add_node(L, gp->node[i], (int)i)))
			return rc;
	}
	return 0;
}

static int build(loader *L, const Onnx__ModelProto *m)
{
	abacus_graph *g = L->g;
	const Onnx__GraphProto *gp = m->graph;
	int rc;
	if (!gp)
		return ab_err(L->err, ABACUS_EGRAPH, "", "the model has no graph (is this an ONNX model file?)");
	g->opset = -1;
	for (size_t k = 0; k < m->n_opset_import; k++) {
		const Onnx__OperatorSetIdProto *o = m->opset_import[k];
		if ((!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) && o->has_version)
			g->opset = o->version;
	}
	if (g->opset < 0)
		return ab_err(L->err, ABACUS_EGRAPH, "", "the model imports no default-domain opset");
	if (g->opset < 7 || g->opset > 21)
		return ab_err(L->err, ABACUS_EUNSUPPORTED, "", "opset %lld is not supported (11 to 17 are tested)",
		              (long long)g->opset);
	g->producer_name = ab_strdup(m->producer_name ? m->producer_name : "");
	if (!g->producer_name)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory");

	/* Initializers first: they are constants whether or not they are also listed as inputs. */
	for (size_t k = 0; k < gp->n_initializer; k++) {
		const Onnx__TensorProto *tp = gp->initializer[k];
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
		if ((rc = tensor_value(&t->value, &t->rank, t->dims, tp, name, L->err)))
			return rc;
	}
	/* Exporters may name floating-point buffers (not trainable) in the metadata key abacus.buffers, as a
	 * comma-separated list; without it, the structural rule of graph.c decides. */
	for (size_t k = 0; k < m->n_metadata_props; k++) {
		const Onnx__StringStringEntryProto *e = m->metadata_props[k];
		if (!e->key || strcmp(e->key, "abacus.buffers") || !e->value)
			continue;
		for (const char *p = e->value; *p;) {
			const char *end = strchr(p, ',');
			size_t len = end ? (size_t)(end - p) : strlen(p);
			char name[1024];
			if (len > 0 && len < sizeof name) {
				memcpy(name, p, len);
				name[len] = '\0';
				int idx = ab_names_get(&L->names, name);
				if (idx >= 0 && g->tensors[idx].kind == AB_T_INIT)
					g->tensors[idx].is_buffer = 1;
			}
			p = end ? end + 1 : p + len;
		}
	}
	int *inputs = ab_malloc((gp->n_input ? gp->n_input : 1) * sizeof *inputs);
	if (!inputs)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory");
	g->inputs = inputs;
	for (size_t k = 0; k < gp->n_input; k++) {
		const Onnx__ValueInfoProto *vi = gp->input[k];
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
	if ((rc = add_nodes(L, gp)))
		return rc;
	/* Declared shapes of intermediate values help only for ops we do not know. */
	for (size_t k = 0; k < gp->n_value_info; k++) {
		int idx;
		if (!gp->value_info[k]->name)
			continue;
		if ((rc = tensor_index(L, gp->value_info[k]->name, 0, &idx)))
			return rc;
		if (idx >= 0 && g->tensors[idx].kind == AB_T_VALUE && (rc = declare(L, idx, gp->value_info[k])))
			return rc;
	}
	g->outputs = ab_malloc((gp->n_output ? gp->n_output : 1) * sizeof *g->outputs);
	if (!g->outputs)
		return ab_err(L->err, ABACUS_ENOMEM, "", "out of memory");
	for (size_t k = 0; k < gp->n_output; k++) {
		const char *name = gp->output[k]->name ? gp->output[k]->name : "";
		int idx;
		if ((rc = tensor_index(L, name, 0, &idx)))
			return rc;
		if (idx < 0)
			return ab_err(L->err, ABACUS_EGRAPH, name, "graph output '%s' is not produced by any node", name);
		if (g->tensors[idx].kind == AB_T_VALUE && (rc = declare(L, idx, gp->output[k])))
			return rc;
		g->outputs[g->n_outputs++] = idx;
	}
	if (g->n_outputs == 0)
		return ab_err(L->err, ABACUS_EGRAPH, "", "the graph has no outputs");
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
	int alloc_failed = 0;
	ProtobufCAllocator alloc = { pb_alloc, pb_free, &alloc_failed };
	Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc, len, buf);
	if (!m && alloc_failed)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory decoding %zu bytes of ONNX", len);
	if (!m)
		/* protobuf-c says nothing more; the pre-scan has accepted the wire format, so the failure is a
		 * field of the wrong type, invalid UTF-8, a missing required field, or memory. */
		return ab_err(err, ABACUS_EPARSE, "",
		              "cannot decode %zu bytes as an ONNX ModelProto (wrong field types, or out of memory)", len);
	loader L = { 0 };
	L.err = err;
	L.g = ab_calloc(1, sizeof *L.g);
	if (!L.g) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	if ((rc = ab_names_init(&L.names, 1024))) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	rc = build(&L, m);
out:
	ab_names_free(&L.names);
	onnx__model_proto__free_unpacked(m, &alloc);
	if (rc) {
		ab_graph_destroy(L.g);
		return rc;
	}
	*out = L.g;
	return 0;
}

int abacus_graph_load_file(abacus_graph **out, const char *path, abacus_error *err)
{
	char *data;
	size_t len;
	*out = NULL;
	int rc = ab_read_file(&data, &len, path, AB_MAX_FILE, err);
	if (rc)
		return rc;
	rc = abacus_graph_load(out, data, len, err);
	ab_free(data);
	if (rc && err && !err->where[0])
		snprintf(err->where, sizeof err->where, "%s", path);
	return rc;
}
