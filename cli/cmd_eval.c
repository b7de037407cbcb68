/*
 * cmd_eval.c — `abacus eval DATA.csv... --protocol random|lomo|cross-hw|lomachine`: the predictor's error
 * against measured rows, beside the analytic and FLOPs-proportional baselines and the noise floor, per
 * hardware id and per machine.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "svg.h"


static const char description[] =
	"Scores the predictor on measured rows: random = 5-fold cross-validation over configurations;\n"
	"lomo = leave-one-model-out (each network predicted by a model that never saw it); cross-hw = train on\n"
	"one hardware id, test on the others; lomachine = leave-one-machine-out: every machine with a profile\n"
	"(--machines) is predicted from its profile by a model trained on the other machines' rows (rows of\n"
	"machines without a profile are left out). Prints MRE, median and 90th percentile relative error for\n"
	"time and memory, the analytic and FLOPs-proportional baselines, the noise floor of repeated\n"
	"measurements, per hardware id, per machine (with its own noise floor and, for lomachine, the share of\n"
	"measured times inside the 90 % interval) and per network.\n";

static void scatter(FILE *f, const abacus_eval_point *p, size_t n, int memory, double left, const char *label)
{
	double lo = INFINITY, hi = 0, x[4096], y[4096];
	size_t m = 0;
	for (size_t i = 0; i < n && m < 4096; i++) {
		x[m] = memory ? p[i].memory_bytes / 1048576.0 : p[i].time_s;
		y[m] = memory ? p[i].memory_pred_bytes / 1048576.0 : p[i].time_pred_s;
		if (!(x[m] > 0 && y[m] > 0))
			continue;
		lo = fmin(lo, fmin(x[m], y[m]));
		hi = fmax(hi, fmax(x[m], y[m]));
		m++;
	}
	if (!m)
		return;
	svg_axes a = { left, left + 380, 60, 400, lo / 1.2, hi * 1.2, lo / 1.2, hi * 1.2, 1, 1 };
	char xl[64], yl[64];
	snprintf(xl, sizeof xl, "measured %s", label);
	snprintf(yl, sizeof yl, "predicted %s", label);
	svg_axes_draw(f, &a, xl, yl);
	double d[2] = { a.x0, a.x1 };
	svg_polyline(f, &a, d, d, 2, "#999", 1);
	svg_points(f, &a, x, y, (int)m, memory ? "#009e73" : "#0072b2");
}

static int write_svg(const char *path, const abacus_eval *ev, const char *pname)
{
	size_t n, nn;
	const abacus_eval_point *p = abacus_eval_points(ev, &n);
	const abacus_eval_net *nets = abacus_eval_networks(ev, &nn);
	if (nn > 200)
		nn = 200;
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	char title[160];
	snprintf(title, sizeof title, "abacus eval, protocol %s: predicted vs measured (log-log), per-network MRE", pname);
	int h = 470 + (int)nn * 22 + 40;
	svg_begin(f, 1000, h, title);
	scatter(f, p, n, 0, 90, "time per iteration (s)");
	scatter(f, p, n, 1, 580, "peak memory (MiB)");
	const char *labels[200];
	double tv[200], mv[200];
	for (size_t i = 0; i < nn; i++) {
		labels[i] = nets[i].network;
		tv[i] = 100 * nets[i].time_mre;
		mv[i] = 100 * nets[i].memory_mre;
	}
	svg_text(f, 330, 460, "middle", "time MRE per network (%)");
	svg_text(f, 800, 460, "middle", "memory MRE per network (%)");
	svg_bars(f, 200, 470, 250, labels, tv, (int)nn, "%", "#0072b2");
	svg_bars(f, 680, 470, 250, labels, mv, (int)nn, "%", "#009e73");
	svg_end(f);
	return fclose(f) == 0 ? 0 : -1;
}

/* One line per scored row, for analysis beyond the summary (which rows, which networks, which sizes). */
static int write_rows(const char *path, const abacus_eval *ev)
{
	size_t n;
	const abacus_eval_point *p = abacus_eval_points(ev, &n);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "line,network,input_shape,batch,optimizer,hw,busy_other,time_s,time_pred_s,time_raw_pred_s,"
	           "memory_bytes,memory_pred_bytes,time_base_s,memory_base_bytes\n");
	for (size_t i = 0; i < n; i++) {
		const abacus_row *r = p[i].row;
		fprintf(f, "%zu,%s,%s,%lld,%s,%s,%.3f,%.6g,%.6g,%.6g,%.0f,%.0f,%.6g,%.0f\n", r->line, r->network, r->input_shape,
		        (long long)r->batch, r->optimizer, r->hw, r->busy_other, p[i].time_s, p[i].time_pred_s,
		        p[i].time_raw_pred_s, p[i].memory_bytes, p[i].memory_pred_bytes, p[i].time_base_s,
		        p[i].memory_base_bytes);
	}
	return fclose(f) == 0 ? 0 : -1;
}

/* JSON has no NaN: a statistic over no rows (e.g. no repeated measurements) is null. */
static void num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

static void json_fields(FILE *f, const abacus_eval_stats *s)
{
	fputs("\"mre\": ", f);
	num(f, s->mre);
	fputs(", \"median\": ", f);
	num(f, s->median);
	fputs(", \"p90\": ", f);
	num(f, s->p90);
	fprintf(f, ", \"n\": %zu", s->n);
}

static void json_stats(FILE *f, const char *name, const abacus_eval_stats *s, int last)
{
	fprintf(f, "    \"%s\": {", name);
	json_fields(f, s);
	fprintf(f, "}%s\n", last ? "" : ",");
}

/* The JSON report: per target (time, memory) mre, median, p90, n and the baselines and noise floor;
 * per hardware id; per network. */
static void write_json(FILE *f, const abacus_eval *ev, const char *pname)
{
	size_t nn;
	const abacus_eval_net *nets = abacus_eval_networks(ev, &nn);
	size_t nh;
	const abacus_eval_hw *hws = abacus_eval_hardware(ev, &nh);
	fprintf(f, "{\n  \"protocol\": \"%s\",\n  \"time\": {", pname);
	json_fields(f, abacus_eval_get(ev, ABACUS_EVAL_TIME));
	fprintf(f, ",\n");
	json_stats(f, "raw", abacus_eval_get(ev, ABACUS_EVAL_TIME_RAW), 0);
	json_stats(f, "analytic", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_TIME), 0);
	json_stats(f, "flops_proportional", abacus_eval_get(ev, ABACUS_EVAL_FLOPS_TIME), 0);
	json_stats(f, "noise_floor_raw", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME), 0);
	json_stats(f, "noise_floor", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_ADJUSTED), 1);
	fprintf(f, "  },\n  \"coverage\": ");
	num(f, abacus_eval_coverage(ev));
	fprintf(f, ",\n  \"memory\": {");
	json_fields(f, abacus_eval_get(ev, ABACUS_EVAL_MEMORY));
	fprintf(f, ",\n");
	json_stats(f, "analytic", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_MEMORY), 0);
	json_stats(f, "noise_floor", abacus_eval_get(ev, ABACUS_EVAL_NOISE_MEMORY), 1);
	fprintf(f, "  },\n  \"hardware\": [\n");
	for (size_t i = 0; i < nh; i++) {
		fprintf(f, "    {\"hw\": ");
		json_str(f, hws[i].hw);
		fprintf(f, ",\n  ");
		json_stats(f, "time", &hws[i].time, 0);
		fprintf(f, "  ");
		json_stats(f, "time_raw", &hws[i].time_raw, 0);
		fprintf(f, "  ");
		json_stats(f, "memory", &hws[i].memory, 0);
		fprintf(f, "  ");
		json_stats(f, "noise_floor_raw", &hws[i].noise_time, 0);
		fprintf(f, "  ");
		json_stats(f, "noise_floor", &hws[i].noise_time_adjusted, 1);
		fprintf(f, "    }%s\n", i + 1 < nh ? "," : "");
	}
	size_t nm;
	const abacus_eval_machine *ms = abacus_eval_machines(ev, &nm);
	fprintf(f, "  ],\n  \"machines\": [\n");
	for (size_t i = 0; i < nm; i++) {
		fprintf(f, "    {\"id\": ");
		json_str(f, ms[i].machine);
		fprintf(f, ", \"rows\": %zu, \"time_mre\": ", ms[i].time.n);
		num(f, ms[i].time.mre);
		fprintf(f, ", \"time_raw_mre\": ");
		num(f, ms[i].time_raw.mre);
		fprintf(f, ", \"noise_floor\": ");
		num(f, ms[i].noise_time_adjusted.mre);
		fprintf(f, ", \"noise_floor_raw\": ");
		num(f, ms[i].noise_time.mre);
		fprintf(f, ", \"noise_pairs\": %zu, \"coverage\": ", ms[i].noise_time.n);
		num(f, ms[i].coverage);
		fprintf(f, ", \"memory_mre\": ");
		num(f, ms[i].memory.mre);
		fprintf(f, ", \"shot_scale\": ");
		num(f, ms[i].shot_scale);
		fprintf(f, "}%s\n", i + 1 < nm ? "," : "");
	}
	fprintf(f, "  ],\n  \"networks\": [\n");
	for (size_t i = 0; i < nn; i++) {
		fprintf(f, "    {\"network\": ");
		json_str(f, nets[i].network);
		fprintf(f, ", \"time_mre\": ");
		num(f, nets[i].time_mre);
		fprintf(f, ", \"memory_mre\": ");
		num(f, nets[i].memory_mre);
		fprintf(f, ", \"n\": %zu}%s\n", nets[i].n, i + 1 < nn ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}

static void row(const char *name, const abacus_eval_stats *s)
{
	printf("  %-34s %8.2f%% %8.2f%% %8.2f%% %7zu\n", name, 100 * s->mre, 100 * s->median, 100 * s->p90, s->n);
}

/* The report as a table: overall errors beside the baselines and noise floors, per hardware id, per machine
 * and per network. */
static void print_table(const abacus_eval *ev, const char *pname)
{
	size_t nn;
	const abacus_eval_net *nets = abacus_eval_networks(ev, &nn);
	size_t nh;
	const abacus_eval_hw *hws = abacus_eval_hardware(ev, &nh);
	printf("protocol %s\n\n  %-34s %9s %9s %9s %7s\n", pname, "", "MRE", "median", "p90", "n");
	row("time (speed-adjusted)", abacus_eval_get(ev, ABACUS_EVAL_TIME));
	row("time (raw)", abacus_eval_get(ev, ABACUS_EVAL_TIME_RAW));
	row("time, analytic baseline", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_TIME));
	row("time, FLOPs-proportional baseline", abacus_eval_get(ev, ABACUS_EVAL_FLOPS_TIME));
	row("time noise floor (speed-adjusted)", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_ADJUSTED));
	row("time noise floor (raw)", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME));
	if (!isnan(abacus_eval_coverage(ev)))
		printf("  %-34s %8.1f%%\n", "time: measured inside 90 % interval", 100 * abacus_eval_coverage(ev));
	row("memory", abacus_eval_get(ev, ABACUS_EVAL_MEMORY));
	row("memory, analytic baseline", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_MEMORY));
	row("memory noise floor", abacus_eval_get(ev, ABACUS_EVAL_NOISE_MEMORY));
	for (size_t i = 0; i < nh; i++) {
		char name[80];
		printf("\n  hardware id %s\n", hws[i].hw);
		snprintf(name, sizeof name, "time (speed-adjusted), %s", hws[i].hw);
		row(name, &hws[i].time);
		snprintf(name, sizeof name, "time (raw), %s", hws[i].hw);
		row(name, &hws[i].time_raw);
		snprintf(name, sizeof name, "time noise floor (adjusted), %s", hws[i].hw);
		row(name, &hws[i].noise_time_adjusted);
		snprintf(name, sizeof name, "time noise floor (raw), %s", hws[i].hw);
		row(name, &hws[i].noise_time);
		snprintf(name, sizeof name, "memory, %s", hws[i].hw);
		row(name, &hws[i].memory);
	}
	size_t nm;
	const abacus_eval_machine *ms = abacus_eval_machines(ev, &nm);
	printf("\n  %-36s %6s %9s %9s %9s %9s %9s\n", "machine", "rows", "time MRE", "raw MRE", "noise", "coverage",
	       "mem MRE");
	for (size_t i = 0; i < nm; i++)
		printf("  %-36.36s %6zu %8.2f%% %8.2f%% %8.2f%% %8.1f%% %8.2f%%\n", ms[i].machine, ms[i].time.n,
		       100 * ms[i].time.mre, 100 * ms[i].time_raw.mre, 100 * ms[i].noise_time_adjusted.mre,
		       100 * ms[i].coverage, 100 * ms[i].memory.mre);
	printf("\n  %-34s %9s %9s %7s\n", "network", "time MRE", "mem MRE", "rows");
	for (size_t i = 0; i < nn; i++)
		printf("  %-34.34s %8.2f%% %8.2f%% %7zu\n", nets[i].network, 100 * nets[i].time_mre,
		       100 * nets[i].memory_mre, nets[i].n);
}

int cmd_eval(int argc, char **argv)
{
	const char *machines_arg = NULL;
	abacus_machine **machines = NULL;
	size_t n_machines = 0;
	int64_t shots = 0;
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	int proto_i = 0, fmt_i = 0;
	const char *svg = NULL, *rows_out = NULL, *json_out = NULL;
	cli_args files = { 0 };
	static const char *const protocols[] = { "random", "lomo", "cross-hw", "lomachine", NULL };
	static const char *const formats[] = { "table", "json", NULL };
	const cli_opt_spec specs[] = {
		CLI_OPT(CLI_OPT_ARGS, "DATA.csv", NULL, &files,
		        "measured rows (abacus profile, docs/DATASET.md)", .flags = CLI_OPT_REQUIRED),
		CLI_OPT(CLI_OPT_CHOICE, "--protocol", NULL, &proto_i,
		        "how rows are held out (above; default random)", .choices = protocols),
		CLI_OPT(CLI_OPT_CHOICE, "--format", NULL, &fmt_i,
		        "table (default) or json", .choices = formats),
		CLI_OPT(CLI_OPT_STRING, "--machines", "LIST", &machines_arg,
		        "machine profiles (abacus calibrate --out), files or directories of *.machine,\n"
		        "comma-separated (default for lomachine: data/machines)"),
		CLI_OPT(CLI_OPT_I64, "--shots", "K", &shots,
		        "lomachine few-shot: K rows of the held-out machine (one per network first) refit\n"
		        "its time factor and are not scored (default 0: zero-shot)", .min = 0, .max = 100000),
		CLI_OPT(CLI_OPT_STRING, "--svg", "FILE", &svg,
		        "draw predicted against measured time and memory, and the per-network errors"),
		CLI_OPT(CLI_OPT_STRING, "--json", "FILE", &json_out,
		        "also write the report as JSON (what --format json prints), from the same run"),
		CLI_OPT(CLI_OPT_STRING, "--rows", "FILE", &rows_out,
		        "write every scored row as CSV: its dataset line and configuration, measured and\n"
		        "predicted time (with the row's speed index, and raw) and memory, and the analytic\n"
		        "estimates alone"),
		CLI_TRAIN_OPT_SPECS(o),
		CLI_OPT_TABLE_END
	};
	int rc = cli_opt_parse(specs, "eval", description, argc, argv);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	abacus_eval_protocol proto = proto_i == 1   ? ABACUS_EVAL_LOMO
	                             : proto_i == 2 ? ABACUS_EVAL_CROSS_HW
	                             : proto_i == 3 ? ABACUS_EVAL_LOMACHINE
	                                            : ABACUS_EVAL_RANDOM;
	cli_format fmt = fmt_i ? FMT_JSON : FMT_TABLE;
	char **file_list = files.v;
	size_t n_files = files.n;
	rc = CLI_USAGE;
	if (shots && proto != ABACUS_EVAL_LOMACHINE) {
		rc = cli_usage("eval", "--shots is for --protocol lomachine");
		goto out;
	}
	if (proto == ABACUS_EVAL_LOMACHINE && !machines_arg)
		machines_arg = "data/machines";
	if (machines_arg && (rc = cli_load_machines(&machines, &n_machines, machines_arg)))
		goto out;
	o.machines = (const abacus_machine *const *)machines;
	o.n_machines = n_machines;
	o.shots = (int)shots;
	abacus_dataset **sets;
	size_t n;
	if ((rc = cli_load_datasets(&sets, &n, file_list, n_files)))
		goto out;
	abacus_error err;
	abacus_eval *ev = NULL;
	if (abacus_evaluate(&ev, sets, n, proto, &o, &err)) {
		rc = cli_fail(&err);
		goto free_sets;
	}
	const char *pname = proto == ABACUS_EVAL_RANDOM      ? "random"
	                    : proto == ABACUS_EVAL_LOMO      ? "lomo"
	                    : proto == ABACUS_EVAL_LOMACHINE ? "lomachine"
	                                                     : "cross-hw";
	if (fmt == FMT_JSON) {
		write_json(stdout, ev, pname);
	} else {
		print_table(ev, pname);
	}
	rc = CLI_OK;
	if (svg && write_svg(svg, ev, pname)) {
		fprintf(stderr, "abacus: cannot write '%s'\n", svg);
		rc = CLI_FAIL;
	}
	if (json_out) {
		FILE *f = fopen(json_out, "w");
		if (f)
			write_json(f, ev, pname);
		if (!f || fclose(f)) {
			fprintf(stderr, "abacus: cannot write '%s'\n", json_out);
			rc = CLI_FAIL;
		}
	}
	if (rows_out && write_rows(rows_out, ev)) {
		fprintf(stderr, "abacus: cannot write '%s'\n", rows_out);
		rc = CLI_FAIL;
	}
	abacus_eval_free(ev);
free_sets:
	for (size_t k = 0; k < n; k++)
		abacus_dataset_free(sets[k]);
	free(sets);
out:
	cli_free_machines(machines, n_machines);
	free(files.v);
	return rc;
}
