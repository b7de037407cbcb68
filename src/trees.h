/*
 * trees.h — boosted regression trees: XGBoost trains, our evaluator predicts (see trees.c).
 */
#ifndef ABACUS_TREES_H
#define ABACUS_TREES_H

#include "util.h"

typedef struct ab_tnode {
	int feature;          /* -1 for a leaf */
	float threshold;      /* go to `yes` when (float)x[feature] < threshold */
	int yes, no, missing;
	double value;         /* leaf value */
} ab_tnode;

typedef struct ab_tree {
	ab_tnode *nodes;
	int n_nodes;
} ab_tree;

typedef struct ab_ensemble {
	double base_score;
	ab_tree *trees;
	int n_trees;
} ab_ensemble;

typedef struct ab_train_params {
	int rounds, max_depth;
	double eta, subsample, colsample, min_child_weight, lambda;
	uint64_t seed;
} ab_train_params;

/* `w`: a weight per row (NULL: all 1). */
int ab_ensemble_train(ab_ensemble *out, const double *X, const double *y, const double *w, size_t n_rows,
                      int n_features, const ab_train_params *prm, abacus_error *err);
double ab_ensemble_predict(const ab_ensemble *e, const double *x, int n_features);
/* Checks feature indices and that children follow parents (so every walk ends). */
int ab_tree_validate(const ab_tree *tr, int n_features, abacus_error *err);
void ab_ensemble_free(ab_ensemble *e);

#endif
