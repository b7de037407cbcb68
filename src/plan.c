/*
 * plan.c — planning over batch sizes: the largest batch whose predicted peak memory fits a budget, and the
 * batches a plan table shows around it. The CLI's `plan` and the Python package's max_batch/plan call
 * these, so both answer the same question the same way.
 *
 * Peak memory grows with the batch, so the largest fitting batch is found by doubling and then bisection:
 * about 2·log2(max batch) predictions, each one analysis of the loaded graph.
 */
#include <string.h>

#include "abacus.h"
#include "util.h"

/* The prediction at one batch; cfg is a copy, so the caller's batch is left alone. */
static int fits_at(int *fits, const abacus_predictor *p, const abacus_graph *g, abacus_config cfg,
                   int64_t batch, const char *hw, int64_t budget, abacus_error *err)
{
	abacus_analysis *a = NULL;
	abacus_prediction pr;
	cfg.batch = batch;
	int rc = abacus_analyze(&a, g, &cfg, err);
	if (!rc)
		rc = abacus_predict(&pr, p, a, hw, 0, err);
	abacus_analysis_free(a);
	if (!rc)
		*fits = pr.memory_hi_bytes <= budget;
	return rc;
}

int abacus_max_batch(int64_t *out, const abacus_predictor *p, const abacus_graph *g, const abacus_config *cfg,
                     const char *hw, int64_t budget, int64_t max_batch, abacus_error *err)
{
	*out = 0;
	if (!p || !g || !cfg)
		return ab_err(err, ABACUS_EINVAL, "", "abacus_max_batch: predictor, graph and config are required");
	if (budget <= 0 || max_batch < 1)
		return ab_err(err, ABACUS_EINVAL, "",
		              "abacus_max_batch: the budget (%lld bytes) and the largest batch (%lld) must be positive",
		              (long long)budget, (long long)max_batch);
	int fits;
	int rc = fits_at(&fits, p, g, *cfg, 1, hw, budget, err);
	if (rc || !fits)
		return rc;
	int64_t good = 1, bad = -1;
	while (bad < 0 && good < max_batch) {
		int64_t b = good > max_batch / 2 ? max_batch : good * 2;
		if ((rc = fits_at(&fits, p, g, *cfg, b, hw, budget, err)))
			return rc;
		if (fits)
			good = b;
		else
			bad = b;
	}
	while (bad > 0 && bad - good > 1) {
		int64_t mid = good + (bad - good) / 2;
		if ((rc = fits_at(&fits, p, g, *cfg, mid, hw, budget, err)))
			return rc;
		if (fits)
			good = mid;
		else
			bad = mid;
	}
	*out = good;
	return 0;
}

size_t abacus_plan_batches(int64_t *out, size_t cap, int64_t good, int64_t max_batch)
{
	/* Powers of two up to twice the answer, the answer itself and the next batch, ascending, once each. */
	int64_t cand[72];
	size_t nc = 0, n = 0;
	if (good < 1)
		good = 1;
	for (int64_t b = 1; b <= max_batch && nc < 64; b *= 2) {
		cand[nc++] = b;
		if (b > good) /* the first power of two past the answer ends the doubling */
			break;
	}
	cand[nc++] = good;
	if (good < max_batch)
		cand[nc++] = good + 1;
	for (size_t i = 1; i < nc; i++)
		for (size_t j = i; j > 0 && cand[j] < cand[j - 1]; j--) {
			int64_t t = cand[j];
			cand[j] = cand[j - 1];
			cand[j - 1] = t;
		}
	for (size_t i = 0; i < nc && n < cap; i++)
		if (!n || out[n - 1] != cand[i])
			out[n++] = cand[i];
	return n;
}
