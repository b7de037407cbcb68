/*
 * test_plan.c — planning over batch sizes (src/plan.c): the largest batch that fits a budget, and the batches
 * a plan table shows, with a predictor trained on tests/data/small.csv.
 */
#include "tests.h"

#define GRAPH "tests/data/graphs/resnet18-64.onnx"

static int64_t memory_hi(const abacus_predictor *p, const abacus_graph *g, int64_t batch)
{
	abacus_config cfg = ABACUS_CONFIG_INIT;
	abacus_analysis *a = NULL;
	abacus_prediction pr = { 0 };
	cfg.batch = batch;
	if (abacus_analyze(&a, g, &cfg, NULL) || abacus_predict(&pr, p, a, "cpu1", 0, NULL))
		pr.memory_hi_bytes = -1;
	abacus_analysis_free(a);
	return pr.memory_hi_bytes;
}

void test_plan_batches(void);
void test_plan_batches(void)
{
	int64_t b[66];
	/* Powers of two to the first past the answer, the answer and the next batch, ascending, once each. */
	size_t n = abacus_plan_batches(b, 66, 5, 65536);
	CHECK(n == 6 && b[0] == 1 && b[1] == 2 && b[2] == 4 && b[3] == 5 && b[4] == 6 && b[5] == 8);
	n = abacus_plan_batches(b, 66, 8, 65536);
	CHECK(n == 6 && b[2] == 4 && b[3] == 8 && b[4] == 9 && b[5] == 16);
	n = abacus_plan_batches(b, 66, 16, 65536);
	CHECK(n == 7 && b[4] == 16 && b[5] == 17 && b[6] == 32);
	/* Bounded by max_batch: nothing past it, and no next batch when the answer is the bound. */
	n = abacus_plan_batches(b, 66, 3, 3);
	CHECK(n == 3 && b[0] == 1 && b[1] == 2 && b[2] == 3);
	n = abacus_plan_batches(b, 66, 1, 1);
	CHECK(n == 1 && b[0] == 1);
	/* The largest bound the CLI accepts: 31 powers, the answer and the next. */
	n = abacus_plan_batches(b, 66, 1073741823, 1073741824);
	CHECK(n == 32 && b[30] == 1073741823 && b[31] == 1073741824);
	/* cap is respected. */
	CHECK(abacus_plan_batches(b, 2, 5, 65536) == 2 && b[1] == 2);
}

void test_max_batch(void);
void test_max_batch(void)
{
	abacus_error err;
	abacus_dataset *d = NULL;
	abacus_predictor *p = NULL;
	abacus_graph *g = NULL;
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	o.rounds = 40;
	CHECK(abacus_dataset_load_file(&d, "tests/data/small.csv", &err) == 0);
	CHECK(d && abacus_train(&p, &d, 1, &o, &err) == 0);
	CHECK(abacus_graph_load_file(&g, GRAPH, &err) == 0);
	if (!p || !g)
		goto out;
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = 999; /* ignored */
	int64_t got = -1, hi37 = memory_hi(p, g, 37), hi38 = memory_hi(p, g, 38), hi1 = memory_hi(p, g, 1);
	CHECK(hi1 > 0 && hi37 > hi1 && hi38 > hi37);
	/* A budget of exactly batch 37's upper end: 37 fits, 38 does not. */
	CHECK(abacus_max_batch(&got, p, g, &cfg, "cpu1", hi37, 65536, &err) == 0 && got == 37);
	CHECK(abacus_max_batch(&got, p, g, &cfg, "cpu1", hi38 - 1, 65536, &err) == 0 && got == 37);
	/* The bound wins over a budget that would allow more. */
	CHECK(abacus_max_batch(&got, p, g, &cfg, NULL, hi37, 20, &err) == 0 && got == 20);
	/* Below batch 1: 0, not an error. */
	CHECK(abacus_max_batch(&got, p, g, &cfg, "cpu1", hi1 - 1, 65536, &err) == 0 && got == 0);
	/* Bad arguments name themselves. */
	CHECK(abacus_max_batch(&got, p, g, &cfg, "cpu1", 0, 65536, &err) == ABACUS_EINVAL && strstr(err.msg, "budget"));
	CHECK(abacus_max_batch(&got, p, g, &cfg, "gpu7", hi37, 65536, &err) == ABACUS_EINVAL && strstr(err.msg, "gpu7"));
out:
	abacus_graph_free(g);
	abacus_predictor_free(p);
	abacus_dataset_free(d);
}
