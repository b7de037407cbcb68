/* tests.h — the registry of test cases (defined in tests.c) and helpers shared by test files. */
#ifndef ABACUS_TESTS_H
#define ABACUS_TESTS_H

#include "abacus.h"
#include "builder.h"
#include "harness.h"

extern const t_case t_cases[];
extern const size_t t_n_cases;

/* Packs `m`, frees it, loads and analyses at `batch`; returns NULL (with err filled) on failure. */
abacus_analysis *t_analyze(tb_model *m, int64_t batch, abacus_graph **g, abacus_error *err);
abacus_analysis *t_analyze_cfg(tb_model *m, const abacus_config *cfg, abacus_graph **g, abacus_error *err);
/* The first layer with this op type. */
const abacus_layer *t_layer(const abacus_analysis *a, const char *op);

#endif
