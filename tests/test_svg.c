/*
 * test_svg.c — the CLI's chart helpers (cli/svg_ticks.c, cli/svg.c) and its progress line (cli/progress.c):
 * axes get round ticks in the units people read, never "1.19e+04" or "3.36".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/cli.h"
#include "../cli/svg.h"
#include "tests.h"

#define GIB 1073741824.0
#define MIB 1048576.0

/* Ticks of [lo, hi] joined by '|', e.g. "0|1 GiB|2 GiB|3 GiB". */
static void ticks_str(char *buf, size_t len, double lo, double hi, int log_scale, svg_unit u, int max)
{
	svg_tick t[SVG_MAX_TICKS];
	int n = svg_ticks(t, max, lo, hi, log_scale, u);
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i)
			strncat(buf, "|", len - strlen(buf) - 1);
		strncat(buf, t[i].label, len - strlen(buf) - 1);
	}
}

void test_svg_ticks(void);
void test_svg_ticks(void)
{
	static const struct {
		double lo, hi;
		int log_scale;
		svg_unit u;
		int max;
		const char *want;
	} cases[] = {
		/* Linear bytes: 1-2-5 steps in the largest unit the top reaches, one unit for the axis. */
		{ 0, 3.2 * GIB, 0, SVG_BYTES, 6, "0|1 GiB|2 GiB|3 GiB" },
		{ 0, 600 * MIB, 0, SVG_BYTES, 6, "0|200 MiB|400 MiB|600 MiB" },
		{ 0, 1.6 * GIB, 0, SVG_BYTES, 6, "0|0.5 GiB|1.0 GiB|1.5 GiB" },
		{ 0, 11.6 * GIB, 0, SVG_BYTES, 7, "0|2 GiB|4 GiB|6 GiB|8 GiB|10 GiB" },
		/* Batch sizes on a log axis: powers of two, thinned to every k-th when crowded. */
		{ 1, 300, 1, SVG_COUNT2, 10, "1|2|4|8|16|32|64|128|256" },
		{ 1, 65536, 1, SVG_COUNT2, 9, "1|4|16|64|256|1024|4096|16384|65536" },
		{ 1, 2, 1, SVG_COUNT2, 10, "1|2" },
		/* Bytes on a log axis: powers of two in the largest unit each reaches. */
		{ 300 * MIB, 2.5 * GIB, 1, SVG_BYTES, 8, "512 MiB|1 GiB|2 GiB" },
		{ 3 * MIB, 2.5 * GIB, 1, SVG_BYTES, 6, "4 MiB|16 MiB|64 MiB|256 MiB|1 GiB" },
		{ 1 * MIB, 1.5 * GIB, 1, SVG_BYTES, 3, "1 MiB|32 MiB|1 GiB" },
		/* Seconds on a log axis: 1-2-5 of each human unit, then 1-5, then decades. */
		{ 0.004, 0.3, 1, SVG_SECONDS, 8, "5 ms|10 ms|20 ms|50 ms|100 ms|200 ms" },
		{ 0.0004, 2, 1, SVG_SECONDS, 8, "500 µs|1 ms|5 ms|10 ms|50 ms|100 ms|500 ms|1 s" },
		{ 0.0004, 2, 1, SVG_SECONDS, 4, "1 ms|10 ms|100 ms|1 s" },
		{ 20, 1000, 1, SVG_SECONDS, 8, "20 s|30 s|1 min|2 min|5 min|10 min" },
		/* Seconds on a linear axis. */
		{ 0, 0.3, 0, SVG_SECONDS, 6, "0|100 ms|200 ms|300 ms" },
		{ 0, 7200, 0, SVG_SECONDS, 4, "0|1 h|2 h" },
		/* Plain numbers: no exponents, large ones in SI. */
		{ 0, 12000, 0, SVG_PLAIN, 6, "0|5000|10000" },
		{ 0.9, 1.1, 0, SVG_PLAIN, 5, "0.90|0.95|1.00|1.05|1.10" },
		{ 1, 2e7, 1, SVG_PLAIN, 8, "1|10|100|1000|10000|100000|1M|10M" },
		/* A log range too narrow for two round values falls back to linear steps. */
		{ 1.01, 1.09, 1, SVG_PLAIN, 5, "1.02|1.04|1.06|1.08" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char got[512];
		ticks_str(got, sizeof got, cases[i].lo, cases[i].hi, cases[i].log_scale, cases[i].u, cases[i].max);
		if (strcmp(got, cases[i].want))
			fprintf(stderr, "  case %zu: ticks '%s', wanted '%s'\n", i, got, cases[i].want);
		CHECK(!strcmp(got, cases[i].want));
	}
	/* Over many ranges: never more than asked, increasing, inside the range, and no exponent in a label. */
	for (int u = SVG_PLAIN; u <= SVG_SECONDS; u++)
		for (int lg = 0; lg < 2; lg++)
			for (double lo = 1e-5; lo < 1e12; lo *= 7.3)
				for (double span = 1.05; span < 1e6; span *= 9.1) {
					if (u == SVG_COUNT2 && floor(lo * span) < ceil(lo))
						continue; /* batch sizes: whole numbers only */
					svg_tick t[SVG_MAX_TICKS];
					int n = svg_ticks(t, 8, lo, lo * span, lg, (svg_unit)u);
					if (!(n >= 1 || !lg))
						fprintf(stderr, "  no ticks: unit %d, log %d, %g..%g\n", u, lg, lo, lo * span);
					CHECK(n >= 1 || !lg); /* a log range always has a round value or two linear ones */
					CHECK(n <= 8);
					for (int k = 0; k < n; k++) {
						CHECK(t[k].v >= lo * (1 - 1e-9) && t[k].v <= lo * span * (1 + 1e-9));
						CHECK(k == 0 || t[k].v > t[k - 1].v);
						if (strstr(t[k].label, "e+") || strstr(t[k].label, "e-") || strstr(t[k].label, "nan")) {
							fprintf(stderr, "  label '%s' (unit %d, log %d, %g..%g)\n", t[k].label, u, lg, lo, lo * span);
							CHECK(0);
						}
					}
				}
}

void test_svg_label(void);
void test_svg_label(void)
{
	static const struct {
		double v;
		svg_unit u;
		const char *want;
	} cases[] = {
		{ 300 * MIB, SVG_BYTES, "300 MiB" }, { 1.5 * GIB, SVG_BYTES, "1.5 GiB" },   { 8 * GIB, SVG_BYTES, "8 GiB" },
		{ 7.45 * GIB, SVG_BYTES, "7.45 GiB" }, { 512, SVG_BYTES, "512 B" },       { 0.0413, SVG_SECONDS, "41.3 ms" },
		{ 86400, SVG_SECONDS, "1 day" },     { 1.25, SVG_SECONDS, "1.25 s" },     { 12.345, SVG_PLAIN, "12.3" },
		{ 0.131, SVG_PLAIN, "0.131" },       { 1234.6, SVG_PLAIN, "1235" },       { NAN, SVG_PLAIN, "n/a" },
		{ 0, SVG_BYTES, "0" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char b[32];
		svg_label(b, sizeof b, cases[i].v, cases[i].u);
		if (strcmp(b, cases[i].want))
			fprintf(stderr, "  %g read '%s', wanted '%s'\n", cases[i].v, b, cases[i].want);
		CHECK(!strcmp(b, cases[i].want));
	}
}

/* The progress line: the unit in progress, the time so far and, once a unit is done, the time left. */
void test_cli_progress_line(void);
void test_cli_progress_line(void)
{
	char b[160];
	cli_progress_line(b, sizeof b, "eval", "fold", 0, 10, 0.2);
	CHECK(!strcmp(b, "eval: fold 1/10"));
	cli_progress_line(b, sizeof b, "eval", "fold", 3, 10, 41);
	CHECK(!strcmp(b, "eval: fold 4/10, 41 s elapsed, about 1.59 min left"));
	cli_progress_line(b, sizeof b, "train", "fit", 6, 6, 12);
	CHECK(!strcmp(b, "train: 6/6 fits done, 12 s elapsed"));
}
