/* svg.h — small standalone SVG charts for the CLI (see svg.c) and their axis ticks (svg_ticks.c). */
#ifndef ABACUS_SVG_H
#define ABACUS_SVG_H

#include <stddef.h>
#include <stdio.h>

/* What an axis measures, which decides its ticks and their labels (svg_ticks.c). */
typedef enum svg_unit {
	SVG_PLAIN,    /* plain numbers: 1–2–5 steps */
	SVG_COUNT2,   /* batch sizes: whole numbers, powers of two on a log axis */
	SVG_BYTES,    /* bytes, labelled in KiB, MiB, GiB … */
	SVG_SECONDS   /* seconds, labelled in ms, s, min … */
} svg_unit;

typedef struct svg_axes {
	double left, right, top, bottom;   /* plot area in pixels */
	double x0, x1, y0, y1;             /* data range (in bytes or seconds for those units) */
	int log_x, log_y;
	svg_unit ux, uy;
} svg_axes;

#define SVG_MAX_TICKS 32
typedef struct svg_tick {
	double v;
	char label[24];
} svg_tick;

/* At most `max` ticks at round values in [lo, hi] on a linear or log axis of `unit`: 1–2–5 steps on linear
 * axes in the largest unit the range reaches (0, 1, 2, 3 GiB), powers of two for batch sizes and bytes on
 * log axes (1, 2, 4 …; 512 MiB, 1 GiB), human time units (5 ms, 10 ms, 1 s, 1 min). Returns the count. */
int svg_ticks(svg_tick *out, int max, double lo, double hi, int log_scale, svg_unit unit);
/* One value as a tick would read it, to three significant digits: "300 MiB", "1.5 GiB", "41 ms". */
void svg_label(char *buf, size_t len, double v, svg_unit unit);

void svg_begin(FILE *f, int w, int h, const char *title);
void svg_end(FILE *f);
void svg_text(FILE *f, double x, double y, const char *anchor, const char *text);
/* Axis lines, grid lines and labelled ticks (thinned until the labels do not overlap), and axis titles. */
void svg_axes_draw(FILE *f, const svg_axes *a, const char *xlabel, const char *ylabel);
/* What is drawn between these two calls is clipped to the plot area (bands and lines that leave it). */
void svg_clip_begin(FILE *f, const svg_axes *a);
void svg_clip_end(FILE *f);
void svg_polyline(FILE *f, const svg_axes *a, const double *x, const double *y, int n, const char *color, int dashed);
void svg_points(FILE *f, const svg_axes *a, const double *x, const double *y, int n, const char *color);
/* The filled region between lo[i] and hi[i] over x[0..n) (a 90 % interval, a noise band), semi-transparent,
 * with thin edges. */
void svg_band(FILE *f, const svg_axes *a, const double *x, const double *lo, const double *hi, int n,
              const char *color, double opacity);
/* A dashed horizontal line at data y with its label above its left end. */
void svg_hline(FILE *f, const svg_axes *a, double y, const char *color, const char *label);
/* A dotted vertical line at data x with a label at the foot of the plot area. */
void svg_vline(FILE *f, const svg_axes *a, double x, const char *color, const char *label);

/* A legend: keys drawn in rows inside a framed box centred on cx, its top at y, rows no wider than max_w.
 * Returns the box's height; with f NULL draws nothing (to lay out what goes below it first). */
typedef enum svg_key_kind { SVG_KEY_LINE, SVG_KEY_DASHED, SVG_KEY_DOTTED, SVG_KEY_BAND, SVG_KEY_POINT } svg_key_kind;
typedef struct svg_key {
	svg_key_kind kind;
	const char *color;
	const char *label;
} svg_key;
double svg_legend(FILE *f, double cx, double y, double max_w, const svg_key *keys, int n);

/* Horizontal bars, one per label, with the value (and `unit`) after each; a NaN value reads "n/a". */
void svg_bars(FILE *f, int x0, int y0, int width, const char *const *labels, const double *values, int n,
              const char *unit, const char *color);

/* n×n matrix m (row-major), rows = source, columns = destination, labels on both axes. */
void svg_heatmap(FILE *f, int x0, int y0, int cell, const char *const *labels, const double *m, int n);

#endif
