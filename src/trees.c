/*
 * trees.c — gradient-boosted tree ensembles: training through XGBoost's C API, and prediction by our
 * own evaluator over trees parsed from XGBoost's text dump.
 *
 * Why not predict through XGBoost: a scheduler predicts thousands of configurations a second, and a
 * DMatrix per call costs more than the trees themselves; a bundle that needs only libc to predict is also
 * easier to embed. XGBoost compares float32 features against float32 thresholds, and so do we, so the
 * evaluator routes every row exactly as XGBoost did during training. Thresholds are stored in the bundle
 * as hexadecimal floats, so save/load round-trips bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "trees.h"

void ab_ensemble_free(ab_ensemble *e)
{
	if (!e)
		return;
	for (int t = 0; t < e->n_trees; t++)
		ab_free(e->trees[t].nodes);
	ab_free(e->trees);
	e->trees = NULL;
	e->n_trees = 0;
}

double ab_ensemble_predict(const ab_ensemble *e, const double *x, int n_features)
{
	double sum = e->base_score;
	for (int t = 0; t < e->n_trees; t++) {
		const ab_tree *tr = &e->trees[t];
		int i = 0;
		/* Bounded walk: a corrupt bundle cannot loop (validated on load, checked again here). */
		for (int steps = 0; steps <= tr->n_nodes; steps++) {
			const ab_tnode *nd = &tr->nodes[i];
			if (nd->feature < 0) {
				sum += nd->value;
				break;
			}
			double v = nd->feature < n_features ? x[nd->feature] : NAN;
			if (isnan(v))
				i = nd->missing;
			else
				i = (float)v < nd->threshold ? nd->yes : nd->no;
		}
	}
	return sum;
}

/* Parses one tree of XGBoost's text dump ("0:[f12<3.5] yes=1,no=2,missing=1" / "1:leaf=0.25"). */
static int parse_tree(ab_tree *tr, const char *dump, abacus_error *err)
{
	int max_id = -1;
	for (const char *p = dump; *p;) {
		while (*p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		int id = atoi(p);
		if (id > max_id)
			max_id = id;
		p = strchr(p, '\n');
		if (!p)
			break;
	}
	if (max_id < 0 || max_id > 1 << 20)
		return ab_err(err, ABACUS_ELIBRARY, "", "XGBoost returned an empty or oversized tree dump");
	tr->n_nodes = max_id + 1;
	tr->nodes = ab_calloc((size_t)tr->n_nodes, sizeof *tr->nodes);
	if (!tr->nodes)
		return ab_err(err, ABACUS_ENOMEM, "", "out of memory");
	for (int k = 0; k < tr->n_nodes; k++)
		tr->nodes[k].feature = -1;
	for (const char *p = dump; *p;) {
		while (*p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		int id, f, yes, no, miss;
		float thr;
		double leaf;
		ab_tnode *nd;
		if (sscanf(p, "%d:[f%d<%g] yes=%d,no=%d,missing=%d", &id, &f, &thr, &yes, &no, &miss) == 6) {
			nd = &tr->nodes[id];
			nd->feature = f;
			nd->threshold = thr;
			nd->yes = yes;
			nd->no = no;
			nd->missing = miss;
		} else if (sscanf(p, "%d:leaf=%lg", &id, &leaf) == 2) {
			nd = &tr->nodes[id];
			nd->feature = -1;
			nd->value = leaf;
		} else {
			return ab_err(err, ABACUS_ELIBRARY, "", "unexpected line in XGBoost's tree dump: %.60s", p);
		}
		p = strchr(p, '\n');
		if (!p)
			break;
	}
	return ab_tree_validate(tr, 1 << 30, err);
}

int ab_tree_validate(const ab_tree *tr, int n_features, abacus_error *err)
{
	for (int k = 0; k < tr->n_nodes; k++) {
		const ab_tnode *nd = &tr->nodes[k];
		if (nd->feature < 0)
			continue;
		/* Children must come after their parent: this makes every walk finite. */
		if (nd->feature >= n_features || nd->yes <= k || nd->no <= k || nd->missing <= k || nd->yes >= tr->n_nodes ||
		    nd->no >= tr->n_nodes || nd->missing >= tr->n_nodes)
			return ab_err(err, ABACUS_EPARSE, "", "tree node %d has an invalid feature or child index", k);
	}
	return 0;
}

#define XGB(call)                                                                                 \
	do {                                                                                          \
		if ((call) != 0) {                                                                        \
			rc = ab_err(err, ABACUS_ELIBRARY, "", "XGBoost: %s", XGBGetLastError());          \
			goto out;                                                                             \
		}                                                                                         \
	} while (0)

int ab_ensemble_train(ab_ensemble *out, const double *X, const double *y, const double *w, size_t n_rows,
                      int n_features, const ab_train_params *prm, abacus_error *err)
{
	memset(out, 0, sizeof *out);
	int rc = 0;
	DMatrixHandle dm = NULL;
	BoosterHandle bst = NULL;
	float *xf = NULL, *yf = NULL, *wf = NULL;
	char buf[64];
	if (n_rows < 2)
		return ab_err(err, ABACUS_EINVAL, "", "need at least 2 training rows, got %zu", n_rows);
	xf = ab_malloc(n_rows * (size_t)n_features * sizeof *xf);
	yf = ab_malloc(n_rows * sizeof *yf);
	wf = w ? ab_malloc(n_rows * sizeof *wf) : NULL;
	if (!xf || !yf || (w && !wf)) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	double mean = 0, wsum = 0;
	for (size_t i = 0; i < n_rows; i++) {
		for (int j = 0; j < n_features; j++)
			xf[i * (size_t)n_features + (size_t)j] = (float)X[i * (size_t)n_features + (size_t)j];
		yf[i] = (float)y[i];
		double wi = w ? w[i] : 1;
		if (wf)
			wf[i] = (float)wi;
		mean += wi * y[i];
		wsum += wi;
	}
	mean = wsum > 0 ? mean / wsum : 0;
	XGB(XGDMatrixCreateFromMat(xf, (bst_ulong)n_rows, (bst_ulong)n_features, NAN, &dm));
	XGB(XGDMatrixSetFloatInfo(dm, "label", yf, (bst_ulong)n_rows));
	if (wf)
		XGB(XGDMatrixSetFloatInfo(dm, "weight", wf, (bst_ulong)n_rows));
	XGB(XGBoosterCreate(&dm, 1, &bst));
	/* base_score is set explicitly so that the native evaluator can add it without reading XGBoost's
	 * JSON configuration. */
	snprintf(buf, sizeof buf, "%.17g", mean);
	XGB(XGBoosterSetParam(bst, "base_score", buf));
	XGB(XGBoosterSetParam(bst, "objective", "reg:squarederror"));
	/* Histogram splits: 3× faster than exact enumeration over ~760 features, as accurate here (random
	 * split on the dataset: time MRE 11.53 % vs 11.50 %), and what keeps leave-one-model-out affordable. */
	XGB(XGBoosterSetParam(bst, "tree_method", "hist"));
	XGB(XGBoosterSetParam(bst, "nthread", "1")); /* deterministic and quiet on a shared machine */
	XGB(XGBoosterSetParam(bst, "verbosity", "0"));
	snprintf(buf, sizeof buf, "%d", prm->max_depth);
	XGB(XGBoosterSetParam(bst, "max_depth", buf));
	snprintf(buf, sizeof buf, "%g", prm->eta);
	XGB(XGBoosterSetParam(bst, "eta", buf));
	snprintf(buf, sizeof buf, "%g", prm->subsample);
	XGB(XGBoosterSetParam(bst, "subsample", buf));
	snprintf(buf, sizeof buf, "%g", prm->colsample);
	XGB(XGBoosterSetParam(bst, "colsample_bytree", buf));
	snprintf(buf, sizeof buf, "%g", prm->min_child_weight);
	XGB(XGBoosterSetParam(bst, "min_child_weight", buf));
	snprintf(buf, sizeof buf, "%g", prm->lambda);
	XGB(XGBoosterSetParam(bst, "lambda", buf));
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)prm->seed);
	XGB(XGBoosterSetParam(bst, "seed", buf));
	for (int it = 0; it < prm->rounds; it++)
		XGB(XGBoosterUpdateOneIter(bst, it, dm));
	bst_ulong n_dump = 0;
	const char **dump = NULL;
	XGB(XGBoosterDumpModelEx(bst, "", 0, "text", &n_dump, &dump));
	out->base_score = mean;
	out->trees = ab_calloc(n_dump ? n_dump : 1, sizeof *out->trees);
	if (!out->trees) {
		rc = ab_err(err, ABACUS_ENOMEM, "", "out of memory");
		goto out;
	}
	for (bst_ulong t = 0; t < n_dump; t++) {
		out->n_trees = (int)t + 1;
		if ((rc = parse_tree(&out->trees[t], dump[t], err)))
			goto out;
	}
	/* The native evaluator must route every training row as XGBoost does: a threshold the text dump
	 * rounded would send rows down the wrong branch. XGBoost sums in float32, hence the tolerance. */
	bst_ulong n_pred = 0;
	const float *pred = NULL;
	XGB(XGBoosterPredict(bst, dm, 0, 0, 0, &n_pred, &pred));
	for (size_t i = 0; i < n_rows && i < (size_t)n_pred; i++) {
		double mine = ab_ensemble_predict(out, X + i * (size_t)n_features, n_features);
		if (fabs(mine - (double)pred[i]) > 1e-4 * (1 + fabs(mine))) {
			rc = ab_err(err, ABACUS_EINVAL, "", "the trees read back from XGBoost predict %g for training row %zu where "
			            "XGBoost predicts %g (a threshold lost in the text dump?)", mine, i, (double)pred[i]);
			goto out;
		}
	}
out:
	if (bst)
		XGBoosterFree(bst);
	if (dm)
		XGDMatrixFree(dm);
	ab_free(xf);
	ab_free(yf);
	ab_free(wf);
	if (rc)
		ab_ensemble_free(out);
	return rc;
}
