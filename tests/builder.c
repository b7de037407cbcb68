/*
 * builder.c — in-memory ONNX model construction for tests. Every allocation goes to a small arena owned
 * by the model, so tb_free releases everything in one place.
 */
#include "builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

struct tb_model {
	Onnx__ModelProto model;
	Onnx__GraphProto graph;
	Onnx__OperatorSetIdProto opset, custom; /* the default domain's; one custom domain's (tb_node_in) */
	Onnx__OperatorSetIdProto *opsets[2];
	void **arena;
	size_t n_arena;
};

static void *take(tb_model *m, size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if ((m->n_arena & (m->n_arena - 1)) == 0)
		m->arena = realloc(m->arena, (m->n_arena ? 2 * m->n_arena : 1) * sizeof *m->arena);
	m->arena[m->n_arena++] = p;
	return p;
}

static char *str(tb_model *m, const char *s)
{
	char *d = take(m, strlen(s) + 1);
	strcpy(d, s);
	return d;
}

/* Appends a pointer to a protobuf-c repeated field (n, array). Capacity doubles whenever n reaches a
 * power of two, so building a million-node graph stays linear. */
#define PUSH(m, n, arr, item)                                                       \
	do {                                                                            \
		if ((n) == 0 || ((n) & ((n) - 1)) == 0) {                                   \
			void **_new = take((m), ((n) ? 2 * (n) : 1) * sizeof(void *));          \
			if ((n))                                                                \
				memcpy(_new, (arr), (n) * sizeof(void *));                          \
			(arr) = (void *)_new;                                                   \
		}                                                                           \
		(arr)[(n)++] = (item);                                                      \
	} while (0)

tb_model *tb_new(int64_t opset)
{
	tb_model *m = calloc(1, sizeof *m);
	onnx__model_proto__init(&m->model);
	onnx__graph_proto__init(&m->graph);
	onnx__operator_set_id_proto__init(&m->opset);
	m->opset.domain = "";
	m->opset.has_version = 1;
	m->opset.version = opset;
	m->opsets[0] = &m->opset;
	m->model.n_opset_import = 1;
	m->model.opset_import = m->opsets;
	m->model.has_ir_version = 1;
	m->model.ir_version = 8;
	m->model.graph = &m->graph;
	m->graph.name = "test";
	return m;
}

static Onnx__ValueInfoProto *value_info(tb_model *m, const char *name, int dtype, int rank, const int64_t *dims)
{
	Onnx__ValueInfoProto *vi = take(m, sizeof *vi);
	onnx__value_info_proto__init(vi);
	vi->name = str(m, name);
	Onnx__TypeProto *tp = take(m, sizeof *tp);
	onnx__type_proto__init(tp);
	Onnx__TypeProto__Tensor *tt = take(m, sizeof *tt);
	onnx__type_proto__tensor__init(tt);
	tt->has_elem_type = 1;
	tt->elem_type = dtype;
	if (rank >= 0) {
		Onnx__TensorShapeProto *sp = take(m, sizeof *sp);
		onnx__tensor_shape_proto__init(sp);
		for (int i = 0; i < rank; i++) {
			Onnx__TensorShapeProto__Dimension *d = take(m, sizeof *d);
			onnx__tensor_shape_proto__dimension__init(d);
			if (dims[i] < 0) {
				d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
				d->dim_param = str(m, "batch");
			} else {
				d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
				d->dim_value = dims[i];
			}
			PUSH(m, sp->n_dim, sp->dim, d);
		}
		tt->shape = sp;
	}
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	vi->type = tp;
	return vi;
}

void tb_input_typed(tb_model *m, const char *name, int dtype, int rank, const int64_t *dims)
{
	PUSH(m, m->graph.n_input, m->graph.input, value_info(m, name, dtype, rank, dims));
}

void tb_input(tb_model *m, const char *name, int rank, const int64_t *dims)
{
	tb_input_typed(m, name, 1, rank, dims);
}

static Onnx__TensorProto *tensor(tb_model *m, const char *name, int dtype, int rank, const int64_t *dims)
{
	Onnx__TensorProto *t = take(m, sizeof *t);
	onnx__tensor_proto__init(t);
	t->name = str(m, name);
	t->has_data_type = 1;
	t->data_type = dtype;
	t->n_dims = (size_t)rank;
	t->dims = take(m, (size_t)rank * sizeof *t->dims);
	memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
	return t;
}

void tb_weight(tb_model *m, const char *name, int rank, const int64_t *dims)
{
	PUSH(m, m->graph.n_initializer, m->graph.initializer, tensor(m, name, 1, rank, dims));
}

void tb_weight_external(tb_model *m, const char *name, int rank, const int64_t *dims)
{
	Onnx__TensorProto *t = tensor(m, name, 1, rank, dims);
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	static const char *keys[] = { "location", "offset", "length" };
	static const char *vals[] = { "weights.bin", "0", "4096" };
	for (int i = 0; i < 3; i++) {
		Onnx__StringStringEntryProto *e = take(m, sizeof *e);
		onnx__string_string_entry_proto__init(e);
		e->key = str(m, keys[i]);
		e->value = str(m, vals[i]);
		PUSH(m, t->n_external_data, t->external_data, e);
	}
	PUSH(m, m->graph.n_initializer, m->graph.initializer, t);
}

void tb_ints(tb_model *m, const char *name, int n, const int64_t *vals)
{
	int64_t d = n;
	Onnx__TensorProto *t = tensor(m, name, 7, 1, &d);
	t->n_int64_data = (size_t)n;
	t->int64_data = take(m, (size_t)n * sizeof *vals);
	memcpy(t->int64_data, vals, (size_t)n * sizeof *vals);
	PUSH(m, m->graph.n_initializer, m->graph.initializer, t);
}

void tb_scalar(tb_model *m, const char *name, int dtype, double v)
{
	Onnx__TensorProto *t = tensor(m, name, dtype, 0, (const int64_t[]){ 0 });
	if (dtype == 1) {
		t->n_float_data = 1;
		t->float_data = take(m, sizeof *t->float_data);
		t->float_data[0] = (float)v;
	} else {
		t->n_int32_data = 1;
		t->int32_data = take(m, sizeof *t->int32_data);
		t->int32_data[0] = (int32_t)v;
	}
	PUSH(m, m->graph.n_initializer, m->graph.initializer, t);
}

void tb_output(tb_model *m, const char *name)
{
	PUSH(m, m->graph.n_output, m->graph.output, value_info(m, name, 1, -1, NULL));
}

void tb_node(tb_model *m, const char *op, const char *const *in, const char *const *out)
{
	Onnx__NodeProto *n = take(m, sizeof *n);
	onnx__node_proto__init(n);
	n->op_type = str(m, op);
	char nm[64];
	snprintf(nm, sizeof nm, "%s_%zu", op, m->graph.n_node);
	n->name = str(m, nm);
	for (; in && *in; in++)
		PUSH(m, n->n_input, n->input, str(m, *in));
	for (; out && *out; out++)
		PUSH(m, n->n_output, n->output, str(m, *out));
	PUSH(m, m->graph.n_node, m->graph.node, n);
}

void tb_name(tb_model *m, const char *name)
{
	m->graph.node[m->graph.n_node - 1]->name = str(m, name);
}

void tb_node_in(tb_model *m, const char *domain, const char *op, const char *const *in, const char *const *out)
{
	tb_node(m, op, in, out);
	m->graph.node[m->graph.n_node - 1]->domain = str(m, domain);
	if (m->model.n_opset_import == 1) {
		onnx__operator_set_id_proto__init(&m->custom);
		m->custom.domain = str(m, domain);
		m->custom.has_version = 1;
		m->custom.version = 1;
		m->opsets[1] = &m->custom;
		m->model.n_opset_import = 2;
	}
}

static Onnx__AttributeProto *attr(tb_model *m, const char *name, int type)
{
	Onnx__NodeProto *n = m->graph.node[m->graph.n_node - 1];
	Onnx__AttributeProto *a = take(m, sizeof *a);
	onnx__attribute_proto__init(a);
	a->name = str(m, name);
	a->has_type = 1;
	a->type = type;
	PUSH(m, n->n_attribute, n->attribute, a);
	return a;
}

void tb_attr_int(tb_model *m, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	a->has_i = 1;
	a->i = v;
}

void tb_attr_ints(tb_model *m, const char *name, int n, const int64_t *v)
{
	Onnx__AttributeProto *a = attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	a->n_ints = (size_t)n;
	a->ints = take(m, (size_t)n * sizeof *v);
	memcpy(a->ints, v, (size_t)n * sizeof *v);
}

void tb_attr_float(tb_model *m, const char *name, float v)
{
	Onnx__AttributeProto *a = attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = v;
}

void tb_attr_str(tb_model *m, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = 1;
	a->s.len = strlen(v);
	a->s.data = (uint8_t *)str(m, v);
}

void tb_meta(tb_model *m, const char *key, const char *value)
{
	Onnx__StringStringEntryProto *e = take(m, sizeof *e);
	onnx__string_string_entry_proto__init(e);
	e->key = str(m, key);
	e->value = str(m, value);
	PUSH(m, m->model.n_metadata_props, m->model.metadata_props, e);
}

void tb_pack(tb_model *m, uint8_t **buf, size_t *len)
{
	*len = onnx__model_proto__get_packed_size(&m->model);
	*buf = malloc(*len ? *len : 1);
	onnx__model_proto__pack(&m->model, *buf);
}

void tb_free(tb_model *m)
{
	for (size_t i = 0; i < m->n_arena; i++)
		free(m->arena[i]);
	free(m->arena);
	free(m);
}
