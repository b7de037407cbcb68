/*
 * cmd_plan.c — `abacus plan GRAPH --mem SIZE`: the largest batch whose predicted peak memory, at the top
 * of its 90 % interval, fits the budget; a table of batch sizes around it with time per iteration,
 * throughput and time per epoch; a verdict per batch; optionally a picture of memory against batch.
 *
 * The search and the table's batches are the library's (abacus_max_batch, abacus_plan_batches), shared
 * with the Python package; this file prints them.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "svg.h"

static const char description[] =
	"Finds the largest batch whose predicted peak memory, at the upper end of its 90 % interval, fits in\n"
	"SIZE, and prints batch sizes around it with predicted time per iteration, throughput and time per\n"
	"epoch of N samples, and a verdict: fits (upper end within the budget), risky (the prediction fits,\n"
	"the upper end does not), does not fit.\n";

static int64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long long kb = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb > 0 ? kb * 1024 : -1;
}

typedef struct point {
	int64_t batch;
	abacus_prediction pr;
	abacus_memory analytic;
} point;

static int predict_at(point *pt, const abacus_predictor *p, const abacus_graph *g, abacus_config cfg, int64_t batch,
                      const char *hw, abacus_error *err)
{
	abacus_analysis *a = NULL;
	cfg.batch = batch;
	pt->batch = batch;
	int rc = abacus_analyze(&a, g, &cfg, err);
	if (!rc)
		rc = abacus_predict(&pt->pr, p, a, hw, 0, err);
	if (!rc)
		pt->analytic = *abacus_analysis_memory(a);
	abacus_analysis_free(a);
	return rc;
}

static const char *verdict(const point *pt, int64_t budget)
{
	return pt->pr.memory_hi_bytes <= budget ? "fits" : pt->pr.memory_bytes <= budget ? "risky" : "does not fit";
}

static int write_svg(const char *path, const char *graph, const point *pts, int n, int64_t budget, int64_t max_batch)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	double x[64], y[64], lo[64], hi[64], ymax = (double)budget;
	for (int i = 0; i < n; i++) {
		x[i] = (double)pts[i].batch;
		y[i] = (double)pts[i].pr.memory_bytes;
		lo[i] = (double)pts[i].pr.memory_lo_bytes;
		hi[i] = (double)pts[i].pr.memory_hi_bytes;
		ymax = fmax(ymax, hi[i]);
	}
	/* The file name, not its directories: the title has one line of 760 pixels. */
	const char *base = strrchr(graph, '/') ? strrchr(graph, '/') + 1 : graph;
	char title[512], lab[96];
	snprintf(title, sizeof title, "Predicted peak memory vs batch: %s (largest fitting batch %lld)", base,
	         (long long)max_batch);
	svg_begin(f, 760, 490, title);
	/* Batch on a log axis (ticks at powers of two), memory on a linear one from 0 (ticks at 1-2-5 MiB or GiB),
	 * with headroom above the budget line and the highest interval for the line's label. */
	svg_axes a = { 100, 730, 50, 390, x[0] > 0 ? x[0] : 1, x[n - 1] > x[0] ? x[n - 1] : 2 * x[0], 0, ymax * 1.1,
		       1, 0, SVG_COUNT2, SVG_BYTES };
	svg_axes_draw(f, &a, "batch size (log scale)", "peak memory");
	svg_clip_begin(f, &a);
	svg_band(f, &a, x, lo, hi, n, "#e69f00", 0.4);
	svg_polyline(f, &a, x, y, n, "#0072b2", 0);
	svg_points(f, &a, x, y, n, "#0072b2");
	svg_clip_end(f);
	svg_label(lab, sizeof lab, (double)budget, SVG_BYTES);
	char blab[128];
	snprintf(blab, sizeof blab, "budget %s", lab);
	svg_hline(f, &a, (double)budget, "#d55e00", blab);
	snprintf(lab, sizeof lab, "batch %lld", (long long)max_batch);
	svg_vline(f, &a, (double)max_batch, "#555", lab);
	const svg_key keys[] = {
		{ SVG_KEY_LINE, "#0072b2", "predicted peak memory" },
		{ SVG_KEY_BAND, "#e69f00", "90 % interval" },
		{ SVG_KEY_DASHED, "#d55e00", "memory budget" },
		{ SVG_KEY_DOTTED, "#555", "largest batch that fits" },
	};
	svg_legend(f, 380, 440, 740, keys, 4);
	svg_end(f);
	return fclose(f) == 0 ? 0 : -1;
}

/* plan chooses the batch itself: --batch is refused with a pointer to what bounds it. */
static int refuse_batch(void *target, const char *v, const char *cmd)
{
	(void)target;
	(void)v;
	return cli_usage(cmd, "plan chooses the batch; use --max-batch to bound it"), -2;
}

/* What plan found, for its printers. */
typedef struct plan_report {
	const char *file, *hw;
	abacus_optimizer optimizer;
	int64_t budget, samples, good;
	const point *pts;
	int n;
} plan_report;

static void print_json(const plan_report *r)
{
	printf("{\"graph\": ");
	json_str(stdout, r->file);
	printf(", \"hw\": ");
	json_str(stdout, r->hw);
	printf(", \"optimizer\": \"%s\", \"budget_bytes\": %lld, \"samples\": %lld, \"max_batch\": %lld, \"batches\": [\n",
	       abacus_optimizer_name(r->optimizer), (long long)r->budget, (long long)r->samples, (long long)r->good);
	for (int i = 0; i < r->n; i++) {
		const point *q = &r->pts[i];
		double epoch = ceil((double)r->samples / (double)q->batch) * q->pr.time_s;
		printf("  {\"batch\": %lld, \"time_s\": %.6g, \"throughput\": %.6g, \"epoch_s\": %.6g, \"memory_bytes\": %lld, "
		       "\"memory_lo_bytes\": %lld, \"memory_hi_bytes\": %lld, \"verdict\": \"%s\", \"breakdown\": "
		       "{\"weights\": %lld, \"buffers\": %lld, \"gradients\": %lld, \"optimizer\": %lld, \"inputs\": %lld, "
		       "\"activations\": %lld, \"workspace\": %lld, \"learned_correction\": %lld}}%s\n",
		       (long long)q->batch, q->pr.time_s, (double)q->batch / q->pr.time_s, epoch, (long long)q->pr.memory_bytes,
		       (long long)q->pr.memory_lo_bytes, (long long)q->pr.memory_hi_bytes, verdict(q, r->budget),
		       (long long)q->analytic.weights, (long long)q->analytic.buffers, (long long)q->analytic.gradients,
		       (long long)q->analytic.optimizer, (long long)q->analytic.inputs, (long long)q->analytic.activations,
		       (long long)q->analytic.workspace, (long long)(q->pr.memory_bytes - q->analytic.peak),
		       i + 1 < r->n ? "," : "");
	}
	printf("]}\n");
}

static void print_table(const plan_report *r)
{
	char b1[32];
	fmt_bytes(b1, sizeof b1, (double)r->budget);
	printf("%s on %s, %s, budget %s: largest batch that fits: %lld\n\n", r->file, r->hw,
	       abacus_optimizer_name(r->optimizer), b1, (long long)r->good);
	printf("  %7s %12s %14s %12s %12s %24s  %s\n", "batch", "time/iter", "samples/s", "epoch", "memory",
	       "90% interval", "verdict");
	for (int i = 0; i < r->n; i++) {
		const point *q = &r->pts[i];
		char m[32], lo[32], hi[32], iv[72];
		fmt_bytes(m, sizeof m, (double)q->pr.memory_bytes);
		fmt_bytes(lo, sizeof lo, (double)q->pr.memory_lo_bytes);
		fmt_bytes(hi, sizeof hi, (double)q->pr.memory_hi_bytes);
		snprintf(iv, sizeof iv, "%s-%s", lo, hi);
		double epoch = ceil((double)r->samples / (double)q->batch) * q->pr.time_s;
		char it[32], ep[32];
		fmt_duration(it, sizeof it, q->pr.time_s);
		fmt_duration(ep, sizeof ep, epoch);
		printf("  %7lld %*s %14.1f %*s %12s %24s  %s\n", (long long)q->batch, cli_width(it, 12), it,
		       (double)q->batch / q->pr.time_s, cli_width(ep, 12), ep, m, iv, verdict(q, r->budget));
	}
	const point *q = &r->pts[0];
	for (int i = 0; i < r->n; i++)
		if (r->pts[i].batch == r->good)
			q = &r->pts[i];
	char w[32], gr[32], op[32], in[32], ac[32], ws[32], corr[32];
	fmt_bytes(w, sizeof w, (double)(q->analytic.weights + q->analytic.buffers));
	fmt_bytes(gr, sizeof gr, (double)q->analytic.gradients);
	fmt_bytes(op, sizeof op, (double)q->analytic.optimizer);
	fmt_bytes(in, sizeof in, (double)q->analytic.inputs);
	fmt_bytes(ac, sizeof ac, (double)q->analytic.activations);
	fmt_bytes(ws, sizeof ws, (double)q->analytic.workspace);
	fmt_bytes(corr, sizeof corr, fabs((double)(q->pr.memory_bytes - q->analytic.peak)));
	printf("\nmemory at batch %lld: weights+buffers %s, gradients %s, optimizer %s, inputs %s, saved activations "
	       "%s, workspace %s, learned correction %s%s (epoch = %lld samples)\n",
	       (long long)r->good, w, gr, op, in, ac, ws, q->pr.memory_bytes < q->analytic.peak ? "-" : "+", corr,
	       (long long)r->samples);
}

int cmd_plan(int argc, char **argv)
{
	cli_graph_opts o;
	int64_t budget = -1, samples = 50000, max_batch = 65536;
	cli_graph_opts_init(&o);
	const cli_opt_spec specs[] = {
		CLI_GRAPH_FILE_SPEC(o),
		CLI_OPT(CLI_OPT_FUNC, "--batch", "N", NULL, NULL, .func = refuse_batch, .flags = CLI_OPT_NO_USAGE),
		CLI_GRAPH_CONFIG_SPECS(o),
		CLI_OPT(CLI_OPT_BYTES, "--mem", "SIZE", &budget,
		        "memory budget: bytes or with a unit (512MiB, 16GiB, 8G, 2.5GB); default: this\n"
		        "machine's available memory (MemAvailable)\n" CLI_BYTES_UNITS),
		CLI_OPT(CLI_OPT_I64, "--samples", "N", &samples, "samples per epoch (default 50000)", .min = 1, .max = 4.6e18),
		CLI_OPT(CLI_OPT_I64, "--max-batch", "N", &max_batch, "largest batch considered (default 65536)", .min = 1,
		        .max = 1073741824.0),
		CLI_OPT(CLI_OPT_STRING, "--hw", "ID", &o.hw, "hardware id the predictor was trained on (cpu1, cpu2)"),
		CLI_OPT(CLI_OPT_STRING, "--model", "FILE", &o.model, "a predictor bundle (abacus train; default: the bundled one)"),
		CLI_OPT(CLI_OPT_FUNC, "--format", "table|json", &o.fmt, "table (default) or json", .func = cli_format_opt),
		CLI_OPT(CLI_OPT_STRING, "--svg", "FILE", &o.svg, "draw memory against batch with the budget line"),
		CLI_OPT_TABLE_END
	};
	int prc = cli_graph_parse(&o, specs, "plan", description, argc, argv);
	if (prc >= 0)
		return prc;
	cli_format fmt = o.fmt;
	const char *model = o.model, *hw = o.hw, *svg = o.svg;
	if (budget < 0 && (budget = mem_available()) < 0)
		return cli_usage("plan", "cannot read MemAvailable from /proc/meminfo; give --mem SIZE");
	abacus_error err;
	abacus_predictor *p = NULL;
	abacus_graph *g = NULL;
	point pts[66];
	int n = 0, rc = CLI_FAIL;
	if (abacus_predictor_load_file(&p, model, &err) || abacus_graph_load_file(&g, o.file, &err))
		goto fail;
	point one;
	if (predict_at(&one, p, g, o.cfg, 1, hw, &err))
		goto fail;
	int64_t fixed = one.analytic.weights + one.analytic.buffers + one.analytic.optimizer;
	if (one.pr.memory_hi_bytes > budget) {
		char b1[32], b2[32], b3[32];
		fmt_bytes(b1, sizeof b1, (double)budget);
		fmt_bytes(b2, sizeof b2, (double)fixed);
		fmt_bytes(b3, sizeof b3, (double)one.pr.memory_hi_bytes);
		fprintf(stderr,
		        "abacus: the budget %s is too small: weights, buffers and %s state alone take %s, and batch 1 needs up "
		        "to %s (%s)\n",
		        b1, abacus_optimizer_name(o.cfg.optimizer), b2, b3, o.file);
		goto out;
	}
	int64_t good, cand[66];
	if (abacus_max_batch(&good, p, g, &o.cfg, hw, budget, max_batch, &err))
		goto fail;
	size_t nc = abacus_plan_batches(cand, sizeof cand / sizeof cand[0], good, max_batch);
	for (size_t i = 0; i < nc; i++) {
		if (predict_at(&pts[n], p, g, o.cfg, cand[i], hw, &err))
			goto fail;
		n++;
	}
	plan_report rep = { o.file, one.pr.hw, o.cfg.optimizer, budget, samples, good, pts, n };
	if (fmt == FMT_JSON)
		print_json(&rep);
	else
		print_table(&rep);
	if (svg && write_svg(svg, o.file, pts, n, budget, good)) {
		fprintf(stderr, "abacus: cannot write '%s'\n", svg);
		goto out;
	}
	rc = CLI_OK;
	goto out;
fail:
	rc = cli_fail(&err);
out:
	abacus_graph_free(g);
	abacus_predictor_free(p);
	return rc;
}
