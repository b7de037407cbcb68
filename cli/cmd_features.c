/*
 * cmd_features.c — `abacus features FILE`: the predictor's feature vector with its column names
 * (configuration, analytic totals, memory simulation, per-category aggregates, structural matrix).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "svg.h"

static const char description[] =
	"Prints the feature vector the predictor sees for this graph and configuration, one named column\n"
	"per line: the configuration, analytic totals, the simulated memory, per-category aggregates and the\n"
	"network structural matrix (log1p of edge counts between operator categories).\n";

/* The NSM columns are named nsm_<from>_to_<to>; the heat map recovers the category order from them. */
static int write_nsm_svg(const char *path, const char *graph, const double *x, size_t n)
{
	const char *labels[64];
	char names[64][32];
	int k = 0;
	size_t first = 0;
	char name[96];
	for (size_t i = 0; i < n; i++) {
		abacus_feature_name(name, sizeof name, i);
		if (!strncmp(name, "nsm_", 4)) {
			first = i;
			break;
		}
	}
	/* The first row of the matrix names every destination: nsm_<c0>_to_<cj>. */
	for (size_t i = first; i < n && k < 64; i++) {
		abacus_feature_name(name, sizeof name, i);
		const char *to = strstr(name, "_to_");
		if (!to || strncmp(name, "nsm_conv_to_", 12))
			break;
		snprintf(names[k], sizeof names[k], "%s", to + 4);
		labels[k] = names[k];
		k++;
	}
	if (k == 0 || first + (size_t)k * (size_t)k > n)
		return -1;
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	char title[512];
	snprintf(title, sizeof title, "Structural matrix of %s (log1p of edges, row: from, column: to)", graph);
	int cell = 22, w = 140 + k * cell + 40;
	svg_begin(f, w < 900 ? 900 : w, 130 + k * cell + 30, title);
	svg_heatmap(f, 140, 120, cell, labels, x + first, k);
	svg_end(f);
	return fclose(f) == 0 ? 0 : -1;
}

int cmd_features(int argc, char **argv)
{
	cli_graph_opts o;
	int nonzero = 0;
	cli_graph_opts_init(&o);
	const cli_opt_spec specs[] = {
		CLI_GRAPH_OPT_SPECS(o),
		CLI_OPT(CLI_OPT_FUNC, "--format", "table|json", &o.fmt, "table (default) or json", .func = cli_format_opt),
		CLI_OPT(CLI_OPT_SWITCH, "--nonzero", NULL, &nonzero, "print only the columns that are not zero (table format)"),
		CLI_OPT(CLI_OPT_STRING, "--svg", "FILE", &o.svg, "draw the network structural matrix as a heat map"),
		CLI_OPT_TABLE_END
	};
	int rc = cli_graph_parse(&o, specs, "features", description, argc, argv);
	if (rc >= 0)
		return rc;
	abacus_error err;
	abacus_graph *g;
	abacus_analysis *a;
	if (cli_analyze(&g, &a, &o))
		return CLI_FAIL;
	cli_format fmt = o.fmt;
	const char *svg = o.svg;
	size_t n = abacus_features_count();
	double *x = malloc(n * sizeof *x);
	rc = CLI_OK;
	if (!x || abacus_features(x, n, a, &err)) {
		rc = x ? cli_fail(&err) : CLI_FAIL;
		goto out;
	}
	if (fmt == FMT_JSON)
		printf("{");
	for (size_t i = 0, shown = 0; i < n; i++) {
		char name[96];
		abacus_feature_name(name, sizeof name, i);
		if (fmt == FMT_JSON) {
			printf("%s\n  \"%s\": %.17g", shown++ ? "," : "", name, x[i]);
		} else if (!nonzero || x[i] != 0) {
			printf("%-40s %.10g\n", name, x[i]);
		}
	}
	if (fmt == FMT_JSON)
		printf("\n}\n");
	if (svg && write_nsm_svg(svg, o.file, x, n)) {
		fprintf(stderr, "abacus: cannot write '%s'\n", svg);
		rc = CLI_FAIL;
	}
out:
	free(x);
	abacus_analysis_free(a);
	abacus_graph_free(g);
	return rc;
}
