/*
 * svg.c — small standalone SVG charts (line/scatter plots and horizontal bars) for the commands'
 * --svg options. Output is plain SVG 1.1 with no scripts or external references; text is escaped.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "svg.h"

static void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

void svg_begin(FILE *f, int w, int h, const char *title)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
	        w, h, w, h);
	fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">", w / 2);
	esc(f, title);
	fprintf(f, "</text>\n");
}

void svg_end(FILE *f)
{
	fprintf(f, "</svg>\n");
}

void svg_text(FILE *f, double x, double y, const char *anchor, const char *text)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x, y, anchor);
	esc(f, text);
	fprintf(f, "</text>\n");
}

static double tx(const svg_axes *a, double x)
{
	double v = a->log_x ? log10(x) : x, lo = a->log_x ? log10(a->x0) : a->x0, hi = a->log_x ? log10(a->x1) : a->x1;
	return a->left + (v - lo) / (hi - lo) * (a->right - a->left);
}

static double ty(const svg_axes *a, double y)
{
	double v = a->log_y ? log10(y) : y, lo = a->log_y ? log10(a->y0) : a->y0, hi = a->log_y ? log10(a->y1) : a->y1;
	return a->bottom - (v - lo) / (hi - lo) * (a->bottom - a->top);
}

void svg_axes_draw(FILE *f, const svg_axes *a, const char *xlabel, const char *ylabel)
{
	fprintf(f, "<g stroke=\"#444\" fill=\"none\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
	           "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
	        a->left, a->bottom, a->right, a->bottom, a->left, a->bottom, a->left, a->top);
	char buf[64];
	for (int i = 0; i <= 4; i++) {
		double fx = a->log_x ? pow(10, log10(a->x0) + i * (log10(a->x1) - log10(a->x0)) / 4)
		                     : a->x0 + i * (a->x1 - a->x0) / 4;
		double fy = a->log_y ? pow(10, log10(a->y0) + i * (log10(a->y1) - log10(a->y0)) / 4)
		                     : a->y0 + i * (a->y1 - a->y0) / 4;
		snprintf(buf, sizeof buf, "%.3g", fx);
		svg_text(f, tx(a, fx), a->bottom + 16, "middle", buf);
		snprintf(buf, sizeof buf, "%.3g", fy);
		svg_text(f, a->left - 6, ty(a, fy) + 4, "end", buf);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", a->left, ty(a, fy),
		        a->right, ty(a, fy));
	}
	svg_text(f, (a->left + a->right) / 2, a->bottom + 34, "middle", xlabel);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">", a->left - 66,
	        (a->top + a->bottom) / 2, a->left - 66, (a->top + a->bottom) / 2);
	esc(f, ylabel);
	fprintf(f, "</text>\n");
}

void svg_polyline(FILE *f, const svg_axes *a, const double *x, const double *y, int n, const char *color, int dashed)
{
	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", color,
	        dashed ? " stroke-dasharray=\"6 4\"" : "");
	for (int i = 0; i < n; i++)
		fprintf(f, "%.1f,%.1f ", tx(a, x[i]), ty(a, y[i]));
	fprintf(f, "\"/>\n");
}

void svg_points(FILE *f, const svg_axes *a, const double *x, const double *y, int n, const char *color)
{
	for (int i = 0; i < n; i++)
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" fill-opacity=\"0.6\"/>\n", tx(a, x[i]),
		        ty(a, y[i]), color);
}

void svg_hline(FILE *f, const svg_axes *a, double y, const char *color, const char *label)
{
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
	           "stroke-dasharray=\"8 4\"/>\n",
	        a->left, ty(a, y), a->right, ty(a, y), color);
	svg_text(f, a->right - 4, ty(a, y) - 5, "end", label);
}

void svg_bars(FILE *f, int x0, int y0, int width, const char *const *labels, const double *values, int n,
              const char *unit, const char *color)
{
	double max = 0;
	for (int i = 0; i < n; i++)
		max = values[i] > max ? values[i] : max;
	if (max <= 0)
		max = 1;
	for (int i = 0; i < n; i++) {
		double y = y0 + i * 22;
		double w = values[i] / max * width;
		char buf[64];
		svg_text(f, x0 - 8, y + 14, "end", labels[i]);
		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>\n", x0, y + 2, w, color);
		snprintf(buf, sizeof buf, "%.3g%s", values[i], unit);
		svg_text(f, x0 + w + 6, y + 14, "start", buf);
	}
}

void svg_heatmap(FILE *f, int x0, int y0, int cell, const char *const *labels, const double *m, int n)
{
	double max = 0;
	for (int i = 0; i < n * n; i++)
		max = m[i] > max ? m[i] : max;
	for (int i = 0; i < n; i++) {
		svg_text(f, x0 - 6, y0 + i * cell + cell * 0.7, "end", labels[i]);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" transform=\"rotate(-60 %.1f %d)\" text-anchor=\"start\">", x0 + i * cell + cell * 0.5,
		        y0 - 6, x0 + i * cell + cell * 0.5, y0 - 6);
		esc(f, labels[i]);
		fprintf(f, "</text>\n");
		for (int j = 0; j < n; j++) {
			double v = m[i * n + j];
			/* White for zero, then light yellow to dark blue with the (already log-scaled) value. */
			double t = max > 0 ? v / max : 0;
			int r = v == 0 ? 255 : (int)(255 - t * 225), g = v == 0 ? 255 : (int)(245 - t * 170),
			    b = v == 0 ? 255 : (int)(190 + t * 50);
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" stroke=\"#eee\"/>\n",
			        x0 + j * cell, y0 + i * cell, cell, cell, r, g, b);
		}
	}
}
