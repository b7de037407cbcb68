/*
 * test_zoo.c — every committed graph under data/graphs loads and resolves at batch 1 and 32; the
 * analytic parameter count equals PyTorch's sum(p.numel()) recorded in tests/data/params.tsv; resnet50's
 * forward FLOPs match the published 4.09 G multiply-adds.
 */
#include <dirent.h>
#include <stdlib.h>

#include "tests.h"

#define GRAPHS "data/graphs"

static int is_graph(const char *name)
{
	size_t n = strlen(name);
	return n > 5 && !strcmp(name + n - 5, ".onnx");
}

static abacus_analysis *analyze_file(const char *path, int64_t batch, abacus_graph **g, abacus_error *err)
{
	*g = NULL;
	if (abacus_graph_load_file(g, path, err))
		return NULL;
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = batch;
	abacus_analysis *a = NULL;
	if (abacus_analyze(&a, *g, &cfg, err)) {
		abacus_graph_free(*g);
		*g = NULL;
	}
	return a;
}

void test_zoo_all_graphs_resolve(void);
void test_zoo_all_graphs_resolve(void)
{
	DIR *d = opendir(GRAPHS);
	CHECK(d != NULL);
	if (!d)
		return;
	int count = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!is_graph(e->d_name))
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", GRAPHS, e->d_name);
		for (int b = 0; b < 2; b++) {
			abacus_graph *g;
			abacus_error err;
			abacus_analysis *a = analyze_file(path, b ? 32 : 1, &g, &err);
			if (!a) {
				fprintf(stderr, "  %s batch %d: %s\n", e->d_name, b ? 32 : 1, err.msg);
				t_failed_checks++;
				continue;
			}
			const abacus_totals *t = abacus_analysis_totals(a);
			CHECK(t->forward_flops > 0);
			CHECK(t->params > 0);
			if (abacus_analysis_n_unknown(a)) {
				fprintf(stderr, "  %s: unknown op %s\n", e->d_name, abacus_analysis_unknown(a, 0, NULL));
				t_failed_checks++;
			}
			abacus_analysis_free(a);
			abacus_graph_free(g);
		}
		count++;
	}
	closedir(d);
	CHECK(count > 0);
}

void test_zoo_params_exact(void);
void test_zoo_params_exact(void)
{
	/* One row per graph file: most networks have the same count at every size, but some do not (the
	 * MLP's first layer grows with the image), so each graph is checked against its own export. */
	FILE *f = fopen("tests/data/params.tsv", "r");
	CHECK(f != NULL);
	if (!f)
		return;
	char line[512];
	int checked = 0;
	while (fgets(line, sizeof line, f)) {
		char file[256];
		long long expect;
		if (sscanf(line, "%255s %lld", file, &expect) != 2)
			continue;
		char path[600];
		snprintf(path, sizeof path, "%s/%s", GRAPHS, file);
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = analyze_file(path, 1, &g, &err);
		if (!a) {
			fprintf(stderr, "  %s: %s\n", path, err.msg);
			t_failed_checks++;
			continue;
		}
		if (abacus_analysis_totals(a)->params != expect) {
			fprintf(stderr, "  %s: %lld parameters, PyTorch says %lld\n", path,
			        (long long)abacus_analysis_totals(a)->params, expect);
			t_failed_checks++;
		}
		checked++;
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
	fclose(f);
	CHECK(checked >= 29);
}

/* resnet50 at 224×224, batch 1: 4.09 G multiply-adds in convolutions and the classifier (the figure
 * torchvision publishes), so conv + matmul forward FLOPs are 2 × 4.09 G within 2 %; the total adds the
 * element-wise work (batch norm, ReLU, adds, pooling) on top. */
void test_resnet50_flops(void);
void test_resnet50_flops(void)
{
	abacus_graph *g;
	abacus_error err;
	abacus_analysis *a = analyze_file(GRAPHS "/resnet50-224.onnx", 1, &g, &err);
	CHECK(a != NULL);
	if (!a)
		return;
	size_t n;
	const abacus_layer *Ls = abacus_analysis_layers(a, &n);
	double mm = 0;
	for (size_t i = 0; i < n; i++)
		if (Ls[i].category == ABACUS_CAT_CONV || Ls[i].category == ABACUS_CAT_GROUPCONV ||
		    Ls[i].category == ABACUS_CAT_MATMUL)
			mm += (double)Ls[i].forward_flops;
	double expect = 2 * 4.09e9;
	CHECK(mm > expect * 0.98);
	CHECK(mm < expect * 1.02);
	double total = (double)abacus_analysis_totals(a)->forward_flops;
	CHECK(total > mm);
	CHECK(total < mm * 1.05);
	CHECK_EQ_I64(abacus_analysis_totals(a)->params, 25557032);
	abacus_analysis_free(a);
	abacus_graph_free(g);
}

/* The same networks exported at opsets 11 and 17 (Squeeze/Unsqueeze axes as attributes vs inputs,
 * LayerNormalization as one op vs its decomposition) give the same parameters and nearly the same
 * FLOPs: the decomposed layer norm counts its element-wise ops one by one. */
void test_opsets_11_and_17(void);
void test_opsets_11_and_17(void)
{
	static const struct { const char *base; long long params; } nets[] = {
		{ "resnet18-64", 11689512 },
		{ "vit_b_32-224", 88224232 },
	};
	for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
		double flops[2] = { 0, 0 };
		for (int k = 0; k < 2; k++) {
			char path[256];
			snprintf(path, sizeof path, "tests/data/opsets/%s-op%d.onnx", nets[i].base, k ? 17 : 11);
			abacus_graph *g;
			abacus_error err;
			abacus_analysis *a = analyze_file(path, 2, &g, &err);
			if (!a) {
				fprintf(stderr, "  %s: %s\n", path, err.msg);
				t_failed_checks++;
				continue;
			}
			CHECK_EQ_I64(abacus_analysis_totals(a)->params, nets[i].params);
			CHECK_EQ_I64(abacus_graph_opset(g), k ? 17 : 11);
			CHECK_EQ_I64(abacus_analysis_n_unknown(a), 0);
			flops[k] = (double)abacus_analysis_totals(a)->forward_flops;
			abacus_analysis_free(a);
			abacus_graph_free(g);
		}
		CHECK(flops[0] > 0);
		CHECK(flops[1] > flops[0] * 0.99);
		CHECK(flops[1] < flops[0] * 1.01);
	}
}

/* Every ok row of one dataset file names a graph that loads and whose parameter count is the row's; returns
 * how many rows it checked. */
static size_t check_rows_match_graphs(const char *path)
{
	abacus_dataset *d = NULL;
	abacus_error err;
	CHECK(abacus_dataset_load_file(&d, path, &err) == 0);
	if (!d) {
		fprintf(stderr, "  %s\n", err.msg);
		return 0;
	}
	const char *last = "";
	int64_t last_params = -1;
	size_t checked = 0;
	for (size_t i = 0; i < abacus_dataset_n_rows(d); i++) {
		const abacus_row *r = abacus_dataset_row(d, i);
		if (strcmp(r->status, "ok"))
			continue;
		if (!r->graph[0]) {
			fprintf(stderr, "  %s line %zu (%s): an ok row without a graph\n", path, r->line, r->network);
			t_failed_checks++;
			continue;
		}
		if (strcmp(r->graph, last)) {
			abacus_graph *g;
			abacus_analysis *a = analyze_file(r->graph, 1, &g, &err);
			if (!a) {
				fprintf(stderr, "  %s line %zu: %s: %s\n", path, r->line, r->graph, err.msg);
				t_failed_checks++;
				continue;
			}
			last_params = abacus_analysis_totals(a)->params;
			last = r->graph;
			abacus_analysis_free(a);
			abacus_graph_free(g);
		}
		if (r->params != last_params) {
			fprintf(stderr, "  %s line %zu: %s has %lld parameters, the row measured %lld\n", path, r->line,
			        r->graph, (long long)last_params, (long long)r->params);
			t_failed_checks++;
		}
		checked++;
	}
	abacus_dataset_free(d);
	return checked;
}

/* The committed datasets: data/dataset.csv (PyTorch 1.13.1) and each other runtime's data/<runtime>/dataset.csv.
 * Every measured row names a graph that exists and loads, and the analytic parameter count of that graph
 * equals the parameter count the framework reported when the row was measured. Another runtime measures
 * against torch 1.13's graphs (it never exports its own), so this is also the check that the network it
 * built is the one the graph describes. */
void test_dataset_rows_match_graphs(void);
void test_dataset_rows_match_graphs(void)
{
	CHECK(check_rows_match_graphs("data/dataset.csv") > 0);
	DIR *dir = opendir("data");
	struct dirent *e;
	while (dir && (e = readdir(dir))) {
		char path[512];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "data/%s/dataset.csv", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		fclose(f);
		check_rows_match_graphs(path);
	}
	if (dir)
		closedir(dir);
}
