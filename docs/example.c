/*
 * example.c — embedding Abacus in a scheduler: load a predictor bundle once, load a graph once, then
 * predict many configurations (here: every batch size from 1 to 64, both optimizers) and pick the
 * largest batch whose predicted peak memory, at the top of its 90 % interval, fits a budget.
 *
 * Build: cc -std=c11 example.c -labacus -lprotobuf-c -lxgboost -lm   (or: pkg-config --cflags --libs abacus)
 * Run:   ./example BUNDLE GRAPH [BUDGET_MIB]
 */
#include <stdio.h>
#include <stdlib.h>

#include <abacus.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s BUNDLE GRAPH [BUDGET_MIB]\n", argv[0]);
		return 2;
	}
	double budget = (argc > 3 ? atof(argv[3]) : 1024) * 1024 * 1024;
	abacus_error err;
	abacus_predictor *p = NULL;
	abacus_graph *g = NULL;
	if (abacus_predictor_load_file(&p, argv[1], &err) || abacus_graph_load_file(&g, argv[2], &err)) {
		fprintf(stderr, "example: %s\n", err.msg);
		abacus_predictor_free(p);
		return 1;
	}
	int rc = 0;
	for (int opt = 0; opt < 2 && rc == 0; opt++) {
		int64_t best = 0;
		double best_time = 0;
		for (int64_t batch = 1; batch <= 64; batch++) {
			abacus_config cfg = ABACUS_CONFIG_INIT;
			cfg.batch = batch;
			cfg.optimizer = opt ? ABACUS_OPT_ADAM : ABACUS_OPT_SGD;
			abacus_analysis *a = NULL;
			abacus_prediction pr;
			if (abacus_analyze(&a, g, &cfg, &err) || abacus_predict(&pr, p, a, NULL, 0, &err)) {
				fprintf(stderr, "example: %s\n", err.msg);
				abacus_analysis_free(a);
				rc = 1;
				break;
			}
			if ((double)pr.memory_hi_bytes <= budget) {
				best = batch;
				best_time = pr.time_s;
			}
			abacus_analysis_free(a);
		}
		if (rc == 0)
			printf("%s: largest batch within %.0f MiB: %lld (%.4g s per iteration)\n",
			       opt ? "adam" : "sgd", budget / 1048576, (long long)best, best_time);
	}
	abacus_graph_free(g);
	abacus_predictor_free(p);
	return rc;
}
