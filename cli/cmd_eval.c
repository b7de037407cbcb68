/*
 * cmd_eval.c — `abacus eval DATA.csv... --protocol random|lomo|lofo|cross-hw|lomachine|loruntime`: the error
 * against measured rows, beside the analytic and FLOPs-proportional baselines and the noise floor, per
 * hardware id and per machine.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "svg.h"


static const char description[] =
	"Scores the predictor on measured rows: random = 5-fold cross-validation over configurations;\n"
	"lomo = leave-one-model-out (each network predicted by a model that never saw it); lofo =\n"
	"leave-one-family-out (a family of networks at a time: --families FILE); cross-hw = train on\n"
	"one hardware id, test on the others; lomachine = leave-one-machine-out: every machine with a profile\n"
	"(--machines) is predicted from its profile by a model trained on the other machines' rows (rows of\n"
	"machines without a profile are left out); loruntime = leave-one-runtime-out: each runtime's rows\n"
	"(give every runtime's dataset) predicted by a model trained on the other runtimes' rows (--shots K:\n"
	"and K of its own). Prints MRE, median and 90th percentile relative error for\n"
	"time and memory, the analytic and FLOPs-proportional baselines, the noise floor of repeated\n"
	"measurements (and, where repeats were measured an hour or more apart, their own \"late\" floor: the\n"
	"drift a predictor of rows measured at another time is up against), per hardware id, per machine (with\n"
	"its own noise floor and, for lomachine, the share of measured times inside the 90 % interval) and per\n"
	"network.\n";

/* Point colours (Okabe–Ito: told apart by colour-blind readers too); groups past the last share grey. */
static const char *const palette[] = { "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000" };
#define N_COLOURS (int)(sizeof palette / sizeof palette[0])
#define OTHER_COLOUR "#999999"

/* The groups the points are coloured by: the machine ids when the rows come from several machines (the
 * protocols that compare machines), else the hardware ids. */
typedef struct point_groups {
	const char *name[N_COLOURS];
	int n, by_machine, other; /* other: some points are in no named group (grey) */
} point_groups;

static const char *group_key(const point_groups *g, const abacus_eval_point *p)
{
	return g->by_machine ? p->row->machine : p->row->hw;
}

/* Each point's group index into grp[] (N_COLOURS for "other"). */
static void find_groups(point_groups *g, int *grp, const abacus_eval_point *p, size_t n)
{
	memset(g, 0, sizeof *g);
	for (size_t i = 1; i < n && !g->by_machine; i++)
		g->by_machine = strcmp(p[i].row->machine, p[0].row->machine) != 0;
	for (size_t i = 0; i < n; i++) {
		const char *k = group_key(g, &p[i]);
		int j = 0;
		while (j < g->n && strcmp(g->name[j], k))
			j++;
		if (j == g->n && g->n < N_COLOURS)
			g->name[g->n++] = k;
		grp[i] = j < g->n ? j : N_COLOURS;
		g->other |= grp[i] == N_COLOURS;
	}
}

/* Predicted against measured on log–log axes (seconds or bytes), the y = x line and the ±noise band around
 * it (none when `noise` is NaN: no repeated measurements). -1 when out of memory. */
static int scatter(FILE *f, const abacus_eval_point *p, size_t n, const int *grp, const point_groups *g, int memory,
                   double left, double noise, const char *what)
{
	double lo = INFINITY, hi = 0, *x = malloc((n ? n : 1) * sizeof *x), *y = malloc((n ? n : 1) * sizeof *y);
	if (!x || !y) {
		free(x);
		free(y);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		double mx = memory ? p[i].memory_bytes : p[i].time_s, my = memory ? p[i].memory_pred_bytes : p[i].time_pred_s;
		if (mx > 0 && my > 0) {
			lo = fmin(lo, fmin(mx, my));
			hi = fmax(hi, fmax(mx, my));
		}
	}
	if (!(hi > 0)) {
		free(x);
		free(y);
		return 0;
	}
	svg_unit u = memory ? SVG_BYTES : SVG_SECONDS;
	svg_axes a = { left, left + 380, 60, 400, lo / 1.25, hi * 1.25, lo / 1.25, hi * 1.25, 1, 1, u, u };
	char xl[64], yl[64];
	snprintf(xl, sizeof xl, "measured %s", what);
	snprintf(yl, sizeof yl, "predicted %s", what);
	svg_axes_draw(f, &a, xl, yl);
	svg_clip_begin(f, &a);
	double d[2] = { a.x0, a.x1 };
	if (isfinite(noise) && noise > 0) {
		double r = fmin(noise, 0.95), blo[2] = { a.x0 * (1 - r), a.x1 * (1 - r) }, bhi[2] = { a.x0 * (1 + r), a.x1 * (1 + r) };
		svg_band(f, &a, d, blo, bhi, 2, "#777777", 0.25);
	}
	svg_polyline(f, &a, d, d, 2, "#555", 1);
	/* Grey ("other") first, so that the named groups are drawn over it. */
	for (int j = -1; j < g->n; j++) {
		int k = j < 0 ? N_COLOURS : j, m = 0;
		for (size_t i = 0; i < n; i++) {
			double mx = memory ? p[i].memory_bytes : p[i].time_s, my = memory ? p[i].memory_pred_bytes : p[i].time_pred_s;
			if (grp[i] == k && mx > 0 && my > 0) {
				x[m] = mx;
				y[m++] = my;
			}
		}
		svg_points(f, &a, x, y, m, k == N_COLOURS ? OTHER_COLOUR : palette[k]);
	}
	svg_clip_end(f);
	free(x);
	free(y);
	return 0;
}

/* The caption's words for a noise floor: "±3.1 %", or that there were no repeated measurements. */
static void noise_words(char *buf, size_t len, double noise)
{
	if (noise == 0)
		snprintf(buf, len, "0 (repeats agree exactly)");
	else if (isfinite(noise))
		snprintf(buf, len, "±%.*f %%", noise < 0.01 ? 2 : 1, 100 * noise);
	else
		snprintf(buf, len, "unknown (no repeated measurements)");
}

static int write_svg(const char *path, const abacus_eval *ev, const char *pname)
{
	size_t n, nn;
	const abacus_eval_point *p = abacus_eval_points(ev, &n);
	const abacus_eval_net *nets = abacus_eval_networks(ev, &nn);
	if (nn > 200)
		nn = 200;
	int *grp = malloc((n ? n : 1) * sizeof *grp);
	if (!grp)
		return -1;
	point_groups g;
	find_groups(&g, grp, p, n);
	/* The legend: one key per colour, the y = x line and the noise band. */
	svg_key keys[N_COLOURS + 3];
	char names[N_COLOURS][48];
	int nk = 0;
	for (int k = 0; k < g.n; k++) {
		snprintf(names[k], sizeof names[k], "%s", g.name[k]);
		keys[nk++] = (svg_key){ SVG_KEY_POINT, palette[k], names[k] };
	}
	if (g.other)
		keys[nk++] = (svg_key){ SVG_KEY_POINT, OTHER_COLOUR, g.by_machine ? "other machines" : "other hardware ids" };
	keys[nk++] = (svg_key){ SVG_KEY_DASHED, "#555", "y = x (prediction exact)" };
	double noise_t = abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME)->median;
	double noise_m = abacus_eval_get(ev, ABACUS_EVAL_NOISE_MEMORY)->median;
	int band = isfinite(noise_t) || isfinite(noise_m);
	if (band)
		keys[nk++] = (svg_key){ SVG_KEY_BAND, "#777777", "± noise floor" };
	/* The caption says what the colours and the band are, and which noise floor: the overall one. */
	char nt[48], nm[48], cap[3][200];
	noise_words(nt, sizeof nt, noise_t);
	noise_words(nm, sizeof nm, noise_m);
	snprintf(cap[0], sizeof cap[0], "Colours: the %s of each measured row; predictions use the row's speed index.",
	         g.by_machine ? "machine id" : "hardware id");
	if (band) {
		snprintf(cap[1], sizeof cap[1], "Grey band: the noise floor of all rows together (not per %s), the median "
		         "relative difference", g.by_machine ? "machine" : "hardware id");
		snprintf(cap[2], sizeof cap[2], "between repeated measurements of one configuration: time %s, memory %s.", nt,
		         nm);
	} else {
		snprintf(cap[1], sizeof cap[1], "No noise band: these rows have no repeated measurements of one "
		         "configuration to measure the noise floor with.");
		cap[2][0] = '\0';
	}
	/* Layout from the top: title, the two plots (60-400), axis titles, legend, caption, then the bars. */
	double legend_y = 452, legend_h = svg_legend(NULL, 500, legend_y, 940, keys, nk);
	double cap_y = legend_y + legend_h + 20, bars_y = cap_y + 3 * 18 + 20;
	int h = (int)bars_y + 20 + (int)nn * 22 + 20;
	FILE *f = fopen(path, "w");
	if (!f) {
		free(grp);
		return -1;
	}
	char title[160];
	snprintf(title, sizeof title, "abacus eval, protocol %s: predicted against measured, and the error per network",
	         pname);
	svg_begin(f, 1000, h, title);
	svg_text(f, 285, 50, "middle", "time per iteration (log–log)");
	svg_text(f, 785, 50, "middle", "peak memory (log–log)");
	int rc = scatter(f, p, n, grp, &g, 0, 95, noise_t, "time per iteration");
	if (!rc)
		rc = scatter(f, p, n, grp, &g, 1, 595, noise_m, "peak memory");
	svg_legend(f, 500, legend_y, 940, keys, nk);
	for (int i = 0; i < 3; i++)
		svg_text(f, 500, cap_y + 18 * i, "middle", cap[i]);
	const char *labels[200];
	double tv[200], mv[200];
	for (size_t i = 0; i < nn; i++) {
		labels[i] = nets[i].network;
		tv[i] = 100 * nets[i].time_mre;
		mv[i] = 100 * nets[i].memory_mre;
	}
	svg_text(f, 285, bars_y, "middle", "time: mean relative error per network");
	svg_text(f, 785, bars_y, "middle", "memory: mean relative error per network");
	svg_bars(f, 215, (int)bars_y + 10, 210, labels, tv, (int)nn, "%", "#0072b2");
	svg_bars(f, 715, (int)bars_y + 10, 210, labels, mv, (int)nn, "%", "#009e73");
	svg_end(f);
	free(grp);
	return fclose(f) == 0 && !rc ? 0 : -1;
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
	           "memory_bytes,memory_pred_bytes,time_base_s,memory_base_bytes,time_lo_s,time_hi_s,memory_lo_bytes,"
	           "memory_hi_bytes,machine,runtime,novelty\n");
	for (size_t i = 0; i < n; i++) {
		const abacus_row *r = p[i].row;
		fprintf(f, "%zu,%s,%s,%lld,%s,%s,%.3f,%.6g,%.6g,%.6g,%.0f,%.0f,%.6g,%.0f,%.6g,%.6g,%.0f,%.0f,%s,%s,%.4g\n", r->line,
		        r->network, r->input_shape, (long long)r->batch, r->optimizer, r->hw, r->busy_other, p[i].time_s,
		        p[i].time_pred_s, p[i].time_raw_pred_s, p[i].memory_bytes, p[i].memory_pred_bytes, p[i].time_base_s,
		        p[i].memory_base_bytes, p[i].time_lo_s, p[i].time_hi_s, p[i].memory_lo_bytes, p[i].memory_hi_bytes,
		        r->machine, r->runtime, p[i].novelty);
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

/* The scored rows split by where their network comes from: the zoo, or the architecture generator (names
 * beginning gen_, collector/generator.py). Errors are the speed-adjusted time's and memory's; coverage the
 * time interval's (NaN without intervals). */
typedef struct origin_scores {
	const char *name;
	size_t n, with;
	double time_err, mem_err, in;
} origin_scores;

static void origin_split(origin_scores o[2], const abacus_eval *ev)
{
	size_t np;
	const abacus_eval_point *pts = abacus_eval_points(ev, &np);
	memset(o, 0, 2 * sizeof *o);
	o[0].name = "zoo";
	o[1].name = "generated";
	for (size_t i = 0; i < np; i++) {
		origin_scores *g = &o[!strncmp(pts[i].network, "gen_", 4)];
		g->n++;
		g->time_err += fabs(pts[i].time_pred_s - pts[i].time_s) / pts[i].time_s;
		g->mem_err += fabs(pts[i].memory_pred_bytes - pts[i].memory_bytes) / pts[i].memory_bytes;
		if (pts[i].time_hi_s > 0) {
			g->with++;
			g->in += pts[i].time_s >= pts[i].time_lo_s && pts[i].time_s <= pts[i].time_hi_s;
		}
	}
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
	json_stats(f, "quiet_rows", abacus_eval_get(ev, ABACUS_EVAL_TIME_QUIET), 0);
	json_stats(f, "analytic", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_TIME), 0);
	json_stats(f, "flops_proportional", abacus_eval_get(ev, ABACUS_EVAL_FLOPS_TIME), 0);
	json_stats(f, "noise_floor_raw", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME), 0);
	json_stats(f, "noise_floor", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_ADJUSTED), 0);
	json_stats(f, "noise_floor_late_raw", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_LATE), 0);
	json_stats(f, "noise_floor_late", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_LATE_ADJUSTED), 1);
	fprintf(f, "  },\n  \"coverage\": ");
	num(f, abacus_eval_coverage(ev));
	fprintf(f, ",\n  \"memory_underestimate\": ");
	num(f, abacus_eval_memory_underestimate(ev));
	origin_scores og[2];
	origin_split(og, ev);
	fprintf(f, ",\n  \"origins\": [");
	for (int i = 0; i < 2; i++) {
		fprintf(f, "%s{\"origin\": \"%s\", \"rows\": %zu, \"time_mre\": ", i ? ", " : "", og[i].name, og[i].n);
		num(f, og[i].n ? og[i].time_err / (double)og[i].n : NAN);
		fprintf(f, ", \"memory_mre\": ");
		num(f, og[i].n ? og[i].mem_err / (double)og[i].n : NAN);
		fprintf(f, ", \"coverage\": ");
		num(f, og[i].with ? og[i].in / (double)og[i].with : NAN);
		fprintf(f, "}");
	}
	fprintf(f, "]");
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
		json_stats(f, "noise_floor", &hws[i].noise_time_adjusted, 0);
		fprintf(f, "  ");
		json_stats(f, "noise_floor_late_raw", &hws[i].noise_time_late, 0);
		fprintf(f, "  ");
		json_stats(f, "noise_floor_late", &hws[i].noise_time_late_adjusted, 1);
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
		fprintf(f, ", \"noise_pairs\": %zu, \"noise_floor_late\": ", ms[i].noise_time.n);
		num(f, ms[i].noise_time_late_adjusted.mre);
		fprintf(f, ", \"noise_floor_late_raw\": ");
		num(f, ms[i].noise_time_late.mre);
		fprintf(f, ", \"noise_pairs_late\": %zu, \"coverage\": ", ms[i].noise_time_late.n);
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

/* The noise floor of the repeats measured an hour or more apart (ABACUS_LATE_REPEAT_S), speed-adjusted and raw,
 * of hardware id `hw` ("": all rows); nothing where no such pair exists (most repeats run back to back). */
static void late_floor_rows(const char *hw, const abacus_eval_stats *adjusted, const abacus_eval_stats *raw)
{
	char name[96];
	if (!adjusted->n)
		return;
	if (*hw)
		snprintf(name, sizeof name, "late noise floor (adjusted), %s", hw);
	else
		snprintf(name, sizeof name, "late noise floor (speed-adjusted)");
	row(name, adjusted);
	snprintf(name, sizeof name, "late noise floor (raw)%s%s", *hw ? ", " : "", hw);
	row(name, raw);
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
	/* Only where some scored rows were timed on a busy machine: otherwise it is the first line again. */
	const abacus_eval_stats *quiet = abacus_eval_get(ev, ABACUS_EVAL_TIME_QUIET);
	if (quiet->n && quiet->n < abacus_eval_get(ev, ABACUS_EVAL_TIME)->n)
		row("time, quiet-machine rows", quiet);
	else if (!quiet->n && abacus_eval_get(ev, ABACUS_EVAL_TIME)->n)
		printf("  %-34s none: every row shared the machine while timed (busy_other > 0.1)\n",
		       "time, quiet-machine rows");
	row("time, analytic baseline", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_TIME));
	row("time, FLOPs-proportional baseline", abacus_eval_get(ev, ABACUS_EVAL_FLOPS_TIME));
	row("time noise floor (speed-adjusted)", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_ADJUSTED));
	row("time noise floor (raw)", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME));
	late_floor_rows("", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_LATE_ADJUSTED), abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_LATE));
	if (!isnan(abacus_eval_coverage(ev)))
		printf("  %-34s %8.1f%%\n", "time: measured inside 90 % interval", 100 * abacus_eval_coverage(ev));
	row("memory", abacus_eval_get(ev, ABACUS_EVAL_MEMORY));
	row("memory, analytic baseline", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_MEMORY));
	row("memory noise floor", abacus_eval_get(ev, ABACUS_EVAL_NOISE_MEMORY));
	if (!isnan(abacus_eval_memory_underestimate(ev)))
		printf("  %-34s %8.1f%%\n", "memory: above 90 % upper end", 100 * abacus_eval_memory_underestimate(ev));
	origin_scores og[2];
	origin_split(og, ev);
	if (og[1].n) {
		printf("\n  %-34s %6s %9s %9s %9s\n", "networks", "rows", "time MRE", "mem MRE", "coverage");
		for (int i = 0; i < 2; i++) {
			if (!og[i].n)
				continue;
			printf("  %-34s %6zu %8.2f%% %8.2f%% ", og[i].name, og[i].n, 100 * og[i].time_err / (double)og[i].n,
			       100 * og[i].mem_err / (double)og[i].n);
			/* (a protocol without intervals, random: no coverage to print) */
			if (og[i].with)
				printf("%8.1f%%\n", 100 * og[i].in / (double)og[i].with);
			else
				printf("%9s\n", "-");
		}
	}
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
		late_floor_rows(hws[i].hw, &hws[i].noise_time_late_adjusted, &hws[i].noise_time_late);
		snprintf(name, sizeof name, "memory, %s", hws[i].hw);
		row(name, &hws[i].memory);
	}
	size_t nm;
	const abacus_eval_machine *ms = abacus_eval_machines(ev, &nm);
	printf("\n  %-36s %6s %9s %9s %9s %9s %9s\n", "machine", "rows", "time MRE", "raw MRE", "noise", "coverage",
	       "mem MRE");
	for (size_t i = 0; i < nm; i++) {
		char cov[16] = "-"; /* (no intervals in this protocol: random) */
		if (!isnan(ms[i].coverage))
			snprintf(cov, sizeof cov, "%.1f%%", 100 * ms[i].coverage);
		printf("  %-36.36s %6zu %8.2f%% %8.2f%% %8.2f%% %9s %8.2f%%\n", ms[i].machine, ms[i].time.n,
		       100 * ms[i].time.mre, 100 * ms[i].time_raw.mre, 100 * ms[i].noise_time_adjusted.mre, cov,
		       100 * ms[i].memory.mre);
	}
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
	static const char *const protocols[] = { "random", "lomo", "cross-hw", "lomachine", "lofo", "loruntime", NULL };
	static const abacus_eval_protocol proto_of[] = { ABACUS_EVAL_RANDOM, ABACUS_EVAL_LOMO, ABACUS_EVAL_CROSS_HW,
		                                         ABACUS_EVAL_LOMACHINE, ABACUS_EVAL_LOFO, ABACUS_EVAL_LORUNTIME };
	const char *families_arg = NULL;
	cli_families fams = { 0 };
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
		        "comma-separated (default for lomachine: data/machines); the other protocols scale a\n"
		        "recurrent rate a hardware id borrows by its machine's (as abacus train does)"),
		CLI_OPT(CLI_OPT_STRING, "--families", "FILE", &families_arg,
		        "lofo: each network's family, one 'network<TAB>family' line each ('#' comments);\n"
		        "a network not listed is a family of its own (scripts/families.py writes\n"
		        "data/families.tsv from the zoo and the generator; default for lofo)"),
		CLI_OPT(CLI_OPT_I64, "--shots", "K", &shots,
		        "few-shot, lomachine: K rows of the held-out machine (one per network first) refit\n"
		        "its time factor; loruntime: K rows of the held-out runtime (one per network first)\n"
		        "join the training rows; neither kind is scored (default 0: zero-shot)",
		        .min = 0, .max = 100000),
		CLI_OPT(CLI_OPT_FUNC, "--runtime", "NAME", &o.score_runtime,
		        "score only the rows of this runtime (torch-1.13.1, torch-2.15.0, tf-2.21.0); every\n"
		        "row still trains as the protocol says, and folds without its rows are skipped",
		        .func = cli_runtime_opt),
		CLI_OPT(CLI_OPT_STRING, "--svg", "FILE", &svg,
		        "draw predicted against measured time and memory, and the per-network errors"),
		CLI_OPT(CLI_OPT_STRING, "--json", "FILE", &json_out,
		        "also write the report as JSON (what --format json prints), from the same run"),
		CLI_OPT(CLI_OPT_STRING, "--rows", "FILE", &rows_out,
		        "write every scored row as CSV: its dataset line and configuration, measured and\n"
		        "predicted time (with the row's speed index, and raw) and memory, the analytic\n"
		        "estimates alone, the 90 % intervals (0 where the protocol has none), machine, runtime, the "
		        "distance from the fold's training graphs"),
		CLI_TRAIN_OPT_SPECS(o),
		CLI_OPT_TABLE_END
	};
	int rc = cli_opt_parse(specs, "eval", description, argc, argv);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	abacus_eval_protocol proto = proto_of[proto_i];
	const char *pname = protocols[proto_i];
	cli_format fmt = fmt_i ? FMT_JSON : FMT_TABLE;
	char **file_list = files.v;
	size_t n_files = files.n;
	rc = CLI_USAGE;
	if (shots && proto != ABACUS_EVAL_LOMACHINE && proto != ABACUS_EVAL_LORUNTIME) {
		rc = cli_usage("eval", "--shots is for --protocol lomachine or loruntime");
		goto out;
	}
	if (proto == ABACUS_EVAL_LOMACHINE && !machines_arg)
		machines_arg = "data/machines";
	if (proto == ABACUS_EVAL_LOFO && !families_arg)
		families_arg = "data/families.tsv";
	if (families_arg && (rc = cli_read_families(&fams, families_arg)))
		goto out;
	o.family_of = (const char *const *)fams.pairs;
	o.n_family_of = fams.n;
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
	cli_progress pg;
	cli_progress_attach(&pg, &o, "eval", "fold");
	int erc = abacus_evaluate(&ev, sets, n, proto, &o, &err);
	cli_progress_clear(&pg);
	if (erc) {
		rc = cli_fail(&err);
		goto free_sets;
	}
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
	cli_free_families(&fams);
	free(files.v);
	return rc;
}
