/*
 * cmd_inspect.c — `abacus inspect FILE`: the typed graph at one configuration: one row per layer, the
 * totals, the simulated training-step memory and the ops Abacus does not know.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "svg.h"

static const char description[] =
	"Loads an ONNX graph (weights may be stripped), resolves every shape at the given batch and input\n"
	"sizes, and prints one row per compute layer (name, op, category, output shape, parameters, forward\n"
	"and backward FLOPs, output bytes), the totals, the memory of one training iteration (with the step\n"
	"where it peaks), and unknown ops. A multiply-add counts as 2 FLOPs. --timeline prints the simulated\n"
	"iteration step by step instead of the layers: each layer's forward, the loss, each layer's backward and\n"
	"the optimizer step, with the live bytes at each step's peak and after it.\n";

static void csv_field(const char *s);

static void print_timeline_json(const abacus_analysis *a)
{
	FILE *f = stdout;
	size_t n = abacus_analysis_n_memory_steps(a);
	fprintf(f, "  \"timeline\": [\n");
	for (size_t i = 0; i < n; i++) {
		const abacus_memory_step *e = abacus_analysis_memory_step(a, i);
		const abacus_layer *l = cli_step_layer(a, e);
		fprintf(f, "    {\"phase\": \"%s\", \"layer\": ", abacus_phase_name(e->phase));
		if (l)
			json_str(f, l->name);
		else
			fprintf(f, "null");
		fprintf(f, ", \"peak\": %lld, \"live\": %lld}%s\n", (long long)e->peak, (long long)e->live,
		        i + 1 < n ? "," : "");
	}
	fprintf(f, "  ],\n");
}

static void print_timeline_csv(const abacus_analysis *a)
{
	printf("step,phase,layer,op,peak_bytes,live_bytes\n");
	for (size_t i = 0; i < abacus_analysis_n_memory_steps(a); i++) {
		const abacus_memory_step *e = abacus_analysis_memory_step(a, i);
		const abacus_layer *l = cli_step_layer(a, e);
		printf("%zu,%s,", i + 1, abacus_phase_name(e->phase));
		csv_field(l ? l->name : "");
		putchar(',');
		csv_field(l ? l->op : "");
		printf(",%lld,%lld\n", (long long)e->peak, (long long)e->live);
	}
}

static void print_timeline_table(const abacus_analysis *a)
{
	size_t at = 0;
	const abacus_memory_step *pk = cli_peak_step(a, &at);
	printf("%5s  %-8s %-40s %-18s %12s %12s\n", "step", "phase", "layer", "op", "peak", "live after");
	for (size_t i = 0; i < abacus_analysis_n_memory_steps(a); i++) {
		const abacus_memory_step *e = abacus_analysis_memory_step(a, i);
		const abacus_layer *l = cli_step_layer(a, e);
		char b1[32], b2[32];
		fmt_bytes(b1, sizeof b1, (double)e->peak);
		fmt_bytes(b2, sizeof b2, (double)e->live);
		printf("%5zu  %-8s %-40.40s %-18.18s %12s %12s%s\n", i + 1, abacus_phase_name(e->phase),
		       l ? l->name : (e->phase == ABACUS_PHASE_LOSS ? "(loss)" : "(optimizer)"), l ? l->op : "", b1, b2,
		       pk && i == at ? "  <- peak" : "");
	}
}

/* Bars of the 25 layers with the most forward+backward FLOPs and with the most saved activations. */
static int write_svg(const char *path, const char *file, const abacus_analysis *a, int64_t batch)
{
	enum { K = 25 };
	size_t n;
	n = abacus_analysis_n_layers(a);
	const char *lab[2][K];
	char names[2][K][48];
	double val[2][K];
	int cnt[2] = { 0, 0 };
	for (int by = 0; by < 2; by++) {
		unsigned char *used = calloc(n ? n : 1, 1);
		if (!used)
			return -1;
		for (int k = 0; k < K; k++) {
			size_t best = n;
			double bv = 0;
			for (size_t i = 0; i < n; i++) {
				double v = by ? (double)abacus_analysis_layer(a, i)->saved_bytes / 1048576.0
				              : ((double)abacus_analysis_layer(a, i)->forward_flops + (double)abacus_analysis_layer(a, i)->backward_flops) / 1e9;
				if (!used[i] && v > bv) {
					bv = v;
					best = i;
				}
			}
			if (best == n)
				break;
			used[best] = 1;
			size_t len = strlen(abacus_analysis_layer(a, best)->name);
			snprintf(names[by][k], sizeof names[by][k], "%s%s", len > 40 ? "…" : "", abacus_analysis_layer(a, best)->name + (len > 40 ? len - 40 : 0));
			lab[by][k] = names[by][k];
			val[by][k] = bv;
			cnt[by]++;
		}
		free(used);
	}
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	char title[512];
	snprintf(title, sizeof title, "Per-layer costs of %s at batch %lld", file, (long long)batch);
	svg_begin(f, 1200, 90 + K * 22, title);
	svg_text(f, 330, 55, "middle", "forward + backward GFLOPs");
	svg_text(f, 930, 55, "middle", "saved activations (MiB)");
	svg_bars(f, 310, 65, 200, lab[0], val[0], cnt[0], "", "#0072b2");
	svg_bars(f, 910, 65, 200, lab[1], val[1], cnt[1], "", "#d55e00");
	svg_end(f);
	return fclose(f) == 0 ? 0 : -1;
}

static void print_json(const char *file, const abacus_graph *g, const abacus_analysis *a, const abacus_config *cfg,
                       int timeline)
{
	size_t n;
	n = abacus_analysis_n_layers(a);
	const abacus_totals *t = abacus_analysis_totals(a);
	const abacus_memory *m = abacus_analysis_memory(a);
	FILE *f = stdout;
	fprintf(f, "{\n  \"graph\": ");
	json_str(f, file);
	fprintf(f, ",\n  \"opset\": %lld,\n  \"nodes\": %zu,\n", (long long)abacus_graph_opset(g), abacus_graph_n_nodes(g));
	fprintf(f, "  \"config\": {\"batch\": %lld, \"optimizer\": \"%s\"},\n", (long long)cfg->batch,
	        abacus_optimizer_name(cfg->optimizer));
	fprintf(f, "  \"outputs\": [");
	for (size_t i = 0; i < abacus_analysis_n_outputs(a); i++) {
		const char *name;
		int rank;
		int64_t dims[ABACUS_MAX_RANK];
		abacus_analysis_output(&name, &rank, dims, a, i);
		fprintf(f, "%s{\"name\": ", i ? ", " : "");
		json_str(f, name);
		fprintf(f, ", \"shape\": [");
		for (int d = 0; d < rank; d++)
			fprintf(f, "%s%lld", d ? ", " : "", (long long)dims[d]);
		fprintf(f, "]}");
	}
	fprintf(f, "],\n  \"layers\": [\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "    {\"name\": ");
		json_str(f, abacus_analysis_layer(a, i)->name);
		fprintf(f, ", \"op\": ");
		json_str(f, abacus_analysis_layer(a, i)->op);
		fprintf(f, ", \"category\": \"%s\", \"shape\": [", abacus_category_name(abacus_analysis_layer(a, i)->category));
		for (int d = 0; d < abacus_analysis_layer(a, i)->rank; d++)
			fprintf(f, "%s%lld", d ? ", " : "", (long long)abacus_analysis_layer(a, i)->dims[d]);
		fprintf(f,
		        "], \"params\": %lld, \"forward_flops\": %lld, \"backward_flops\": %lld, \"output_bytes\": %lld, "
		        "\"saved\": %lld, \"known\": %s}%s\n",
		        (long long)abacus_analysis_layer(a, i)->params, (long long)abacus_analysis_layer(a, i)->forward_flops, (long long)abacus_analysis_layer(a, i)->backward_flops,
		        (long long)abacus_analysis_layer(a, i)->output_bytes, (long long)abacus_analysis_layer(a, i)->saved_bytes, abacus_analysis_layer(a, i)->known ? "true" : "false", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ],\n");
	fprintf(f,
	        "  \"totals\": {\"params\": %lld, \"forward_flops\": %lld, \"backward_flops\": %lld, \"bytes_read\": %lld, "
	        "\"bytes_written\": %lld, \"layers\": %lld, \"folded\": %lld, \"unknown\": %lld},\n",
	        (long long)t->params, (long long)t->forward_flops, (long long)t->backward_flops, (long long)t->bytes_read,
	        (long long)t->bytes_written, (long long)t->layers, (long long)t->folded, (long long)t->unknown);
	fprintf(f,
	        "  \"memory\": {\"weights\": %lld, \"buffers\": %lld, \"optimizer\": %lld, \"inputs\": %lld, "
	        "\"gradients\": %lld, \"activations\": %lld, \"workspace\": %lld, \"peak\": %lld, \"persistent\": %lld, "
	        "\"saved\": %lld, \"held_peak\": %lld},\n",
	        (long long)m->weights, (long long)m->buffers, (long long)m->optimizer, (long long)m->inputs,
	        (long long)m->gradients, (long long)m->activations, (long long)m->workspace, (long long)m->peak,
	        (long long)m->persistent, (long long)m->saved, (long long)m->held_peak);
	if (abacus_analysis_n_memory_steps(a)) {
		fprintf(f, "  ");
		cli_json_peak_step(f, a);
		fprintf(f, ",\n");
	}
	if (timeline)
		print_timeline_json(a);
	fprintf(f, "  ");
	cli_top_layers(a, 10, 0, NULL, 0, 1);
	fprintf(f, ",\n  \"unknown_ops\": [");
	for (size_t i = 0; i < abacus_analysis_n_unknown(a); i++) {
		int64_t cnt;
		const char *op = abacus_analysis_unknown(a, i, &cnt);
		fprintf(f, "%s{\"op\": ", i ? ", " : "");
		json_str(f, op);
		fprintf(f, ", \"count\": %lld}", (long long)cnt);
	}
	fprintf(f, "]\n}\n");
}

static void csv_field(const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void print_csv(const abacus_analysis *a)
{
	size_t n;
	n = abacus_analysis_n_layers(a);
	printf("name,op,category,shape,params,forward_flops,backward_flops,output_bytes\n");
	for (size_t i = 0; i < n; i++) {
		char dims[160];
		fmt_dims(dims, sizeof dims, abacus_analysis_layer(a, i)->rank, abacus_analysis_layer(a, i)->dims);
		csv_field(abacus_analysis_layer(a, i)->name);
		putchar(',');
		csv_field(abacus_analysis_layer(a, i)->op);
		printf(",%s,%s,%lld,%lld,%lld,%lld\n", abacus_category_name(abacus_analysis_layer(a, i)->category), dims, (long long)abacus_analysis_layer(a, i)->params,
		       (long long)abacus_analysis_layer(a, i)->forward_flops, (long long)abacus_analysis_layer(a, i)->backward_flops, (long long)abacus_analysis_layer(a, i)->output_bytes);
	}
}

static void print_table(const char *file, const abacus_graph *g, const abacus_analysis *a, const abacus_config *cfg)
{
	size_t n;
	n = abacus_analysis_n_layers(a);
	const abacus_totals *t = abacus_analysis_totals(a);
	const abacus_memory *m = abacus_analysis_memory(a);
	char b1[32], b2[32], b3[32], b4[32], dims[160];
	printf("%s: opset %lld, %zu nodes (%lld folded shape nodes, %lld layers), batch %lld, %s\n\n", file,
	       (long long)abacus_graph_opset(g), abacus_graph_n_nodes(g), (long long)t->folded, (long long)t->layers,
	       (long long)cfg->batch, abacus_optimizer_name(cfg->optimizer));
	printf("%-40s %-18s %-10s %-20s %10s %10s %10s %11s\n", "layer", "op", "category", "output", "params", "fwd FLOPs",
	       "bwd FLOPs", "out bytes");
	for (size_t i = 0; i < n; i++) {
		fmt_dims(dims, sizeof dims, abacus_analysis_layer(a, i)->rank, abacus_analysis_layer(a, i)->dims);
		fmt_si(b1, sizeof b1, (double)abacus_analysis_layer(a, i)->params);
		fmt_si(b2, sizeof b2, (double)abacus_analysis_layer(a, i)->forward_flops);
		fmt_si(b3, sizeof b3, (double)abacus_analysis_layer(a, i)->backward_flops);
		fmt_bytes(b4, sizeof b4, (double)abacus_analysis_layer(a, i)->output_bytes);
		printf("%-40.40s %-18.18s %-10s %-20.20s %10s %10s %10s %11s\n", abacus_analysis_layer(a, i)->name, abacus_analysis_layer(a, i)->op,
		       abacus_category_name(abacus_analysis_layer(a, i)->category), dims, b1, b2, b3, b4);
	}
	printf("\ntotals: %lld parameters, %lld forward FLOPs, %lld backward FLOPs\n", (long long)t->params,
	       (long long)t->forward_flops, (long long)t->backward_flops);
	printf("\nmemory of one training iteration (simulated, float32):\n");
	const struct { const char *name; int64_t v; } rows[] = {
		{ "weights", m->weights }, { "buffers", m->buffers }, { "optimizer state", m->optimizer },
		{ "inputs + targets", m->inputs }, { "gradients (at peak)", m->gradients },
		{ "saved activations (at peak)", m->activations }, { "workspace (at peak)", m->workspace },
		{ "peak", m->peak }, { "persistent", m->persistent }, { "saved at end of forward", m->saved },
		{ "peak, forward locals held", m->held_peak },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		fmt_bytes(b1, sizeof b1, (double)rows[i].v);
		printf("  %-30s %14lld  (%s)\n", rows[i].name, (long long)rows[i].v, b1);
	}
	size_t at = 0;
	const abacus_memory_step *pk = cli_peak_step(a, &at);
	if (pk) {
		char where[512];
		cli_step_label(where, sizeof where, a, pk);
		printf("  %-30s %s (step %zu of %zu; --timeline lists them)\n", "peak reached in", where, at + 1,
		       abacus_analysis_n_memory_steps(a));
	}
	cli_top_layers(a, 10, 0, NULL, 0, 0);
	size_t nu = abacus_analysis_n_unknown(a);
	if (nu) {
		printf("\nunknown ops (counted as category 'other', no FLOPs):");
		for (size_t i = 0; i < nu; i++) {
			int64_t cnt;
			const char *op = abacus_analysis_unknown(a, i, &cnt);
			printf(" %s×%lld", op, (long long)cnt);
		}
		printf("\n");
	}
}

int cmd_inspect(int argc, char **argv)
{
	cli_graph_opts o;
	cli_graph_opts_init(&o);
	int timeline = 0;
	const cli_opt_spec specs[] = {
		CLI_GRAPH_OPT_SPECS(o),
		CLI_OPT(CLI_OPT_FUNC, "--format", "table|csv|json", &o.fmt, "table (default), csv (layers only) or json",
		        .func = cli_format_csv_opt),
		CLI_OPT(CLI_OPT_STRING, "--svg", "FILE", &o.svg,
		        "draw the layers with the most compute and the most saved activation memory"),
		CLI_OPT(CLI_OPT_SWITCH, "--timeline", NULL, &timeline,
		        "the simulated iteration step by step (live bytes per layer's forward and backward) instead "
		        "of the layers"),
		CLI_OPT_TABLE_END
	};
	int rc = cli_graph_parse(&o, specs, "inspect", description, argc, argv);
	if (rc >= 0)
		return rc;
	abacus_graph *g;
	abacus_analysis *a;
	if (cli_analyze(&g, &a, &o))
		return CLI_FAIL;
	cli_format fmt = o.fmt;
	const char *svg = o.svg;
	if (fmt == FMT_JSON)
		print_json(o.file, g, a, &o.cfg, timeline);
	else if (fmt == FMT_CSV && timeline)
		print_timeline_csv(a);
	else if (fmt == FMT_CSV)
		print_csv(a);
	else if (timeline)
		print_timeline_table(a);
	else
		print_table(o.file, g, a, &o.cfg);
	rc = fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
	if (svg && write_svg(svg, o.file, a, o.cfg.batch)) {
		fprintf(stderr, "abacus: cannot write '%s'\n", svg);
		rc = CLI_FAIL;
	}
	abacus_analysis_free(a);
	abacus_graph_free(g);
	return rc;
}
