/*
 * bench.c — `make bench`: time to load + resolve shapes + account costs and memory for the largest graph
 * in a directory (by file size), as the median of repeated runs; then, given a predictor bundle, the
 * time of one prediction on an analysed graph (median over batches of calls). Beside wall time it reports
 * the CPU time and the minor page faults of the load + analysis: where a page fault is expensive (about
 * 10 us in the sandboxed VM this was developed on, 0.1-0.3 us on bare metal), faults can dominate.
 * The first run is also reported alone: it is what a fresh process pays, before the library's cache of
 * freed large blocks (alloc.c) holds anything.
 * Usage: bench_abacus [DIR] [RUNS] [BUNDLE]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "abacus.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds (user, system) and minor page faults of this process so far. */
static void usage_now(double *user, double *sys, long *minflt)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
	*sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	*minflt = ru.ru_minflt;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "data/graphs";
	int runs = argc > 2 ? atoi(argv[2]) : 21;
	if (runs < 1 || runs > 1000)
		runs = 21;
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "bench: cannot open directory '%s'\n", dir);
		return 1;
	}
	char best[1024] = "";
	off_t best_size = -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 5, ".onnx"))
			continue;
		char path[1024];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && st.st_size > best_size) {
			best_size = st.st_size;
			snprintf(best, sizeof best, "%s", path);
		}
	}
	closedir(d);
	if (!best[0]) {
		fprintf(stderr, "bench: no .onnx file in '%s'\n", dir);
		return 1;
	}
	double *t_load = calloc((size_t)runs, sizeof *t_load), *t_an = calloc((size_t)runs, sizeof *t_an);
	size_t nodes = 0, layers = 0;
	double u0, s0, u1, s1;
	long f0, f1;
	usage_now(&u0, &s0, &f0);
	for (int r = 0; r < runs; r++) {
		abacus_error err;
		abacus_graph *g = NULL;
		abacus_analysis *a = NULL;
		double t0 = now();
		if (abacus_graph_load_file(&g, best, &err)) {
			fprintf(stderr, "bench: %s\n", err.msg);
			return 1;
		}
		double t1 = now();
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = 32;
		if (abacus_analyze(&a, g, &cfg, &err)) {
			fprintf(stderr, "bench: %s\n", err.msg);
			return 1;
		}
		double t2 = now();
		t_load[r] = t1 - t0;
		t_an[r] = t2 - t1;
		nodes = abacus_graph_n_nodes(g);
		layers = (size_t)abacus_analysis_totals(a)->layers;
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
	usage_now(&u1, &s1, &f1);
	double first = (t_load[0] + t_an[0]) * 1e3;
	qsort(t_load, (size_t)runs, sizeof *t_load, cmp);
	qsort(t_an, (size_t)runs, sizeof *t_an, cmp);
	double load = t_load[runs / 2] * 1e3, an = t_an[runs / 2] * 1e3;
	const char *bundle = argc > 3 ? argv[3] : NULL;
	if (bundle) {
		abacus_error err;
		abacus_predictor *p = NULL;
		abacus_graph *g = NULL;
		abacus_analysis *a = NULL;
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = 32;
		if (abacus_predictor_load_file(&p, bundle, &err) || abacus_graph_load_file(&g, best, &err) ||
		    abacus_analyze(&a, g, &cfg, &err)) {
			fprintf(stderr, "bench: %s\n", err.msg);
			return 1;
		}
		enum { CALLS = 200 };
		double per[31];
		volatile double sink = 0;
		for (int r = 0; r < 31; r++) {
			double t0 = now();
			for (int k = 0; k < CALLS; k++) {
				abacus_prediction pr;
				abacus_predict(&pr, p, a, NULL, 0, &err);
				sink += pr.time_s;
			}
			per[r] = (now() - t0) / CALLS;
		}
		qsort(per, 31, sizeof *per, cmp);
		printf("one prediction on an analysed graph: %.2f us (median of 31 × %d calls; target <= 20 us)\n",
		       per[15] * 1e6, CALLS);
		(void)sink;
		abacus_analysis_free(a);
		abacus_graph_free(g);
		abacus_predictor_free(p);
	}
	printf("largest graph: %s (%lld bytes, %zu nodes, %zu layers)\n", best, (long long)best_size, nodes, layers);
	printf("load %.2f ms + shapes/costs/memory %.2f ms = %.2f ms (median of %d runs; target <= 20 ms)\n", load, an,
	       load + an, runs);
	printf("first run in this process (fresh pages): %.2f ms\n", first);
	printf("per run: CPU %.2f ms user + %.2f ms system, %.0f minor page faults\n", (u1 - u0) * 1e3 / runs,
	       (s1 - s0) * 1e3 / runs, (double)(f1 - f0) / runs);
	free(t_load);
	free(t_an);
	return 0;
}
