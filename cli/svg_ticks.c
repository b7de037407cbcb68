/*
 * svg_ticks.c — where an axis gets its ticks and what they read: round values in the unit people read
 * (batch 1, 2, 4 …; 512 MiB, 1 GiB; 5 ms, 1 s), never "1.19e+04" or "3.36".
 *
 *   linear axes   1–2–5 steps (0, 1, 2, 3 GiB; 0, 200, 400 MiB), in the largest unit the axis's top
 *                 value reaches (bytes: B … TiB; seconds: µs … days), one unit for the whole axis;
 *   log axes      batch sizes and bytes at powers of two (1, 2, 4 …; 256 MiB, 512 MiB, 1 GiB), seconds at
 *                 1–2–5 steps of each human unit (5 ms, 10 ms … 1 s, 2 s … 1 min), plain numbers at 1–2–5
 *                 per decade; when that is more than `max`, every k-th of the coarser series (powers of
 *                 two with k chosen so that the unit boundaries 1 KiB, 1 MiB, 1 GiB stay, decades).
 *
 * A range too narrow for two log ticks falls back to the linear steps. Labels are formatted with "%.*f"
 * and fixed units: deterministic and locale-free (the CLI never calls setlocale).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "svg.h"

typedef struct unit_def {
	double size;
	const char *name;
} unit_def;

static const unit_def byte_units[] = { { 1, "B" },
	                               { 1024.0, "KiB" },
	                               { 1048576.0, "MiB" },
	                               { 1073741824.0, "GiB" },
	                               { 1099511627776.0, "TiB" } };
static const unit_def time_units[] = { { 1e-9, "ns" }, { 1e-6, "µs" }, { 1e-3, "ms" },  { 1, "s" },
	                               { 60, "min" },  { 3600, "h" },   { 86400, "days" } };
#define N_BYTE_UNITS (int)(sizeof byte_units / sizeof byte_units[0])
#define N_TIME_UNITS (int)(sizeof time_units / sizeof time_units[0])

/* Relative slack for comparisons of computed tick values with the range ends. */
#define EPS 1e-9

/* The largest unit of `u[0..n)` that `v` reaches (the first when v is below all). */
static int unit_for(const unit_def *u, int n, double v)
{
	int k = 0;
	while (k + 1 < n && fabs(v) >= u[k + 1].size * (1 - EPS))
		k++;
	return k;
}

/* `v` in the unit with `decimals` digits after the point, then the unit's name ("" for none); "0" alone. */
static void label_in(char *buf, size_t len, double v, int decimals, const char *unit)
{
	if (fabs(v) < 1e-12) {
		snprintf(buf, len, "0");
		return;
	}
	char num[32];
	snprintf(num, sizeof num, "%.*f", decimals, v);
	if (!strcmp(num, "-0"))
		snprintf(num, sizeof num, "0");
	if (!unit || !*unit)
		snprintf(buf, len, "%s", num);
	else if (!strcmp(unit, "days") && !strcmp(num, "1"))
		snprintf(buf, len, "1 day");
	else
		snprintf(buf, len, "%s %s", num, unit);
}

/* Up to three significant digits, no trailing zeros, no exponent: 512, 1.5, 0.25, 7.45, 1234. */
static int sig_decimals(double v)
{
	double a = fabs(v);
	if (a == 0 || a >= 100)
		return 0;
	int d = a >= 10 ? 1 : a >= 1 ? 2 : 2 - (int)floor(log10(a));
	if (d > 9)
		d = 9;
	/* Drop trailing zeros: 1.50 → 1.5, 2.00 → 2. */
	while (d > 0) {
		double s = pow(10, d - 1);
		if (fabs(round(a * s) - a * s) > 1e-6 * s * (a > 1 ? a : 1))
			break;
		d--;
	}
	return d;
}

void svg_label(char *buf, size_t len, double v, svg_unit unit)
{
	if (!isfinite(v)) {
		snprintf(buf, len, "n/a");
		return;
	}
	if (unit == SVG_BYTES || unit == SVG_SECONDS) {
		const unit_def *u = unit == SVG_BYTES ? byte_units : time_units;
		int k = unit_for(u, unit == SVG_BYTES ? N_BYTE_UNITS : N_TIME_UNITS, v);
		double x = v / u[k].size;
		label_in(buf, len, x, sig_decimals(x), u[k].name);
		return;
	}
	if (fabs(v) >= 1e6) { /* 1.5M, 20M: a count this large reads better in SI than in seven digits */
		double x = v / 1e6;
		char num[32];
		snprintf(num, sizeof num, "%.*f", sig_decimals(x), x);
		snprintf(buf, len, "%sM", num);
		return;
	}
	label_in(buf, len, v, sig_decimals(v), "");
}

/* Linear ticks: the smallest 1–2–5 step (in the axis's unit; whole for batch sizes) that gives at most `max`
 * ticks in [lo, hi], all labelled in one unit. */
static int linear_ticks(svg_tick *out, int max, double lo, double hi, svg_unit unit)
{
	double size = 1;
	const char *name = "";
	if (unit == SVG_BYTES || unit == SVG_SECONDS) {
		const unit_def *u = unit == SVG_BYTES ? byte_units : time_units;
		int k = unit_for(u, unit == SVG_BYTES ? N_BYTE_UNITS : N_TIME_UNITS, fmax(fabs(lo), fabs(hi)));
		size = u[k].size;
		name = u[k].name;
	}
	double a = lo / size, b = hi / size;
	if (!(b > a))
		return 0;
	static const double mult[] = { 1, 2, 5 };
	double step = 0, first = 0;
	int count = 0;
	for (int e = (int)floor(log10((b - a) / max)) - 1; !step; e++)
		for (int m = 0; m < 3 && !step; m++) {
			double s = mult[m] * pow(10, e);
			if (unit == SVG_COUNT2 && s < 1)
				continue; /* batch sizes are whole */
			double i0 = ceil(a / s - EPS), i1 = floor(b / s + EPS);
			if (i1 - i0 + 1 <= max) {
				step = s;
				first = i0;
				count = i1 >= i0 ? (int)(i1 - i0 + 1) : 0;
			}
		}
	int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - EPS);
	for (int i = 0; i < count && i < SVG_MAX_TICKS; i++) {
		double x = (first + i) * step;
		out[i].v = x * size;
		label_in(out[i].label, sizeof out[i].label, x, decimals, name);
	}
	return count < SVG_MAX_TICKS ? count : SVG_MAX_TICKS;
}

/* Powers of two 2^e in [lo, hi] with e a multiple of the smallest k in `ks` that gives at most `max`. */
static int pow2_ticks(svg_tick *out, int max, double lo, double hi, svg_unit unit, const int *ks, int nk)
{
	int e0 = (int)ceil(log2(lo) - EPS), e1 = (int)floor(log2(hi) + EPS);
	for (int j = 0; j < nk; j++) {
		int k = ks[j], n = 0;
		for (int e = e0; e <= e1; e++)
			n += (e % k + k) % k == 0;
		if (n > max && j + 1 < nk)
			continue;
		n = 0;
		for (int e = e0; e <= e1 && n < SVG_MAX_TICKS; e++)
			if ((e % k + k) % k == 0) {
				out[n].v = ldexp(1, e);
				svg_label(out[n].label, sizeof out[n].label, out[n].v, unit);
				n++;
			}
		return n;
	}
	return 0;
}

/* The nice values of a log axis of seconds, from fine to coarse: 1–2–5 within each unit up to the next one
 * (level 0), 1–5 (level 1), then only 1, 10 and 100 of each unit (level 2). */
static int second_candidates(double *v, int cap, int level)
{
	static const double small[3][9] = { { 1, 2, 5, 10, 20, 50, 100, 200, 500 }, /* ns, µs, ms */
		                            { 1, 5, 10, 50, 100, 500 },
		                            { 1, 10, 100 } };
	static const int n_small[3] = { 9, 6, 3 };
	static const double sixty[3][6] = { { 1, 2, 5, 10, 20, 30 }, { 1, 5, 10, 30 }, { 1, 10 } }; /* s, min */
	static const int n_sixty[3] = { 6, 4, 2 };
	static const double hours[3][4] = { { 1, 2, 5, 10 }, { 1, 5, 10 }, { 1, 10 } };
	static const int n_hours[3] = { 4, 3, 2 };
	static const double days[3][10] = { { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000 },
		                            { 1, 5, 10, 50, 100, 500, 1000 },
		                            { 1, 10, 100, 1000 } };
	static const int n_days[3] = { 10, 7, 4 };
	int n = 0;
	for (int u = 0; u < N_TIME_UNITS; u++) {
		const double *m = u < 3 ? small[level] : u < 5 ? sixty[level] : u == 5 ? hours[level] : days[level];
		int k = u < 3 ? n_small[level] : u < 5 ? n_sixty[level] : u == 5 ? n_hours[level] : n_days[level];
		for (int i = 0; i < k && n < cap; i++)
			v[n++] = m[i] * time_units[u].size;
	}
	return n;
}

/* Plain numbers on a log axis: 1–2–5 per decade (level 0), 1–5 (level 1), decades (level 2). */
static int plain_candidates(double *v, int cap, int level, double lo, double hi)
{
	static const double m[3][3] = { { 1, 2, 5 }, { 1, 5 }, { 1 } };
	static const int per[3] = { 3, 2, 1 };
	int n = 0;
	for (int e = (int)floor(log10(lo)) - 1; e <= (int)ceil(log10(hi)) + 1 && n < cap; e++)
		for (int i = 0; i < per[level] && n < cap; i++)
			v[n++] = m[level][i] * pow(10, e);
	return n;
}

/* The candidates in [lo, hi], every `every`-th of them (counted from the first in range). */
static int pick(svg_tick *out, const double *c, int nc, double lo, double hi, int every, svg_unit unit)
{
	int n = 0, seen = 0;
	for (int i = 0; i < nc && n < SVG_MAX_TICKS; i++) {
		if (c[i] < lo * (1 - EPS) || c[i] > hi * (1 + EPS))
			continue;
		if (seen++ % every)
			continue;
		out[n].v = c[i];
		svg_label(out[n].label, sizeof out[n].label, c[i], unit);
		n++;
	}
	return n;
}

static int log_ticks(svg_tick *out, int max, double lo, double hi, svg_unit unit)
{
	if (unit == SVG_COUNT2) {
		static const int ks[] = { 1, 2, 3, 4, 5, 6, 8, 10, 16, 20 };
		return pow2_ticks(out, max, lo, hi, unit, ks, (int)(sizeof ks / sizeof ks[0]));
	}
	if (unit == SVG_BYTES) {
		static const int ks[] = { 1, 2, 5, 10, 20, 30, 40 }; /* divisors of 10 first: 1 KiB, 1 MiB, 1 GiB stay */
		return pow2_ticks(out, max, lo, hi, unit, ks, (int)(sizeof ks / sizeof ks[0]));
	}
	/* The finest series that fits, else the coarsest, thinned until it does. */
	double c[128];
	int n = 0;
	for (int level = 0; level < 3; level++) {
		int nc = unit == SVG_SECONDS ? second_candidates(c, 128, level) : plain_candidates(c, 128, level, lo, hi);
		for (int every = 1; every <= (level == 2 ? 64 : 1); every++)
			if ((n = pick(out, c, nc, lo, hi, every, unit)) <= max)
				return n;
	}
	return n;
}

int svg_ticks(svg_tick *out, int max, double lo, double hi, int log_scale, svg_unit unit)
{
	if (max < 2)
		max = 2;
	if (max > SVG_MAX_TICKS)
		max = SVG_MAX_TICKS;
	if (!(hi > lo) || !isfinite(lo) || !isfinite(hi))
		return 0;
	if (log_scale && lo > 0) {
		int n = log_ticks(out, max, lo, hi, unit);
		if (n >= 2)
			return n;
	}
	return linear_ticks(out, max, lo, hi, unit);
}
