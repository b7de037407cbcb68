/* svg.h — small standalone SVG charts for the CLI (see svg.c). */
#ifndef ABACUS_SVG_H
#define ABACUS_SVG_H

#include <stdio.h>

typedef struct svg_axes {
	double left, right, top, bottom;   /* plot area in pixels */
	double x0, x1, y0, y1;             /* data range */
	int log_x, log_y;
} svg_axes;

void svg_begin(FILE *f, int w, int h, const char *title);
void svg_end(FILE *f);
void svg_text(FILE *f, double x, double y, const char *anchor, const char *text);
void svg_axes_draw(FILE *f, const svg_axes *a, const char *xlabel, const char *ylabel);
void svg_polyline(FILE *f, const svg_axes *a, const double *x, const double *y, int n, const char *color, int dashed);
void svg_points(FILE *f, const svg_axes *a, const double *x, const double *y, int n, const char *color);
void svg_hline(FILE *f, const svg_axes *a, double y, const char *color, const char *label);
void svg_bars(FILE *f, int x0, int y0, int width, const char *const *labels, const double *values, int n,
              const char *unit, const char *color);

/* n×n matrix m (row-major), rows = source, columns = destination, labels on both axes. */
void svg_heatmap(FILE *f, int x0, int y0, int cell, const char *const *labels, const double *m, int n);

#endif
