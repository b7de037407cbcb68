/*
 * builder.h — builds small ONNX models in memory for tests, through the same protobuf-c schema the
 * loader uses, so hand-derived costs can be checked on exact graphs.
 */
#ifndef ABACUS_TEST_BUILDER_H
#define ABACUS_TEST_BUILDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tb_model tb_model;

tb_model *tb_new(int64_t opset);
/* A float32 graph input; a dim of -1 becomes the symbolic "batch". */
void tb_input(tb_model *m, const char *name, int rank, const int64_t *dims);
void tb_input_typed(tb_model *m, const char *name, int dtype, int rank, const int64_t *dims);
/* A float32 initializer with dims and no data (graph-only). */
void tb_weight(tb_model *m, const char *name, int rank, const int64_t *dims);
/* A float32 initializer whose data lives in an external file (never read by Abacus). */
void tb_weight_external(tb_model *m, const char *name, int rank, const int64_t *dims);
/* An int64 initializer with data. */
void tb_ints(tb_model *m, const char *name, int n, const int64_t *vals);
/* A rank-0 initializer with data: float32 (dtype 1) or bool (dtype 9). */
void tb_scalar(tb_model *m, const char *name, int dtype, double v);
void tb_output(tb_model *m, const char *name);
/* A node: inputs and outputs are NULL-terminated lists of names ("" for an omitted input). */
void tb_node(tb_model *m, const char *op, const char *const *in, const char *const *out);
/* A node of a custom domain (its opset, version 1, is imported once: one custom domain per model). */
void tb_node_in(tb_model *m, const char *domain, const char *op, const char *const *in, const char *const *out);
/* The last node's name (default "<op>_<index>"), e.g. PyTorch's exporter's "/block/conv/Conv". */
void tb_name(tb_model *m, const char *name);
/* Attributes on the last node. */
void tb_attr_int(tb_model *m, const char *name, int64_t v);
void tb_attr_ints(tb_model *m, const char *name, int n, const int64_t *v);
void tb_attr_float(tb_model *m, const char *name, float v);
void tb_attr_str(tb_model *m, const char *name, const char *v);
/* A metadata_props entry of the model (the exporter's abacus.* keys). */
void tb_meta(tb_model *m, const char *key, const char *value);
/* Serialises; the caller frees *buf with free(). */
void tb_pack(tb_model *m, uint8_t **buf, size_t *len);
void tb_free(tb_model *m);

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define D(...) (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), ((const int64_t[]){ __VA_ARGS__ })

#endif
