/*
 * svg.c — small standalone SVG charts (line/scatter plots with bands and legends, horizontal bars, a heat
 * map) for the commands' --svg options. Output is plain SVG 1.1 with no scripts or external references;
 * text is escaped. Ticks and their labels come from svg_ticks.c. Text widths are estimated (no font
 * metrics): the layout leaves room for the estimate to be off by a few pixels.
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

/* The width in pixels `s` takes at font size `size` in DejaVu Sans (what librsvg and most Linux browsers
 * pick for sans-serif), from its advance widths in em: digits 0.636, a space or a point 0.318, m 0.974;
 * other letters at a typical width (an estimate: no font metrics are read). A UTF-8 continuation byte is no
 * character. */
static double text_w(const char *s, double size)
{
	double em = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c & 0xC0) == 0x80)
			continue;
		em += c >= '0' && c <= '9'                                  ? 0.636
		      : c == ' ' || c == '.' || c == ',' || c == ':' || c == ';' ? 0.318
		      : c == 'i' || c == 'l' || c == 'j' || c == 'f' || c == 't' ? 0.35
		      : c == 'm' || c == 'w' || c == 'M' || c == 'W' || c == '%' ? 0.95
		      : c >= 'A' && c <= 'Z'                                 ? 0.72
		                                                             : 0.6;
	}
	return em * size;
}

/* The ticks of one axis: as many as `span` pixels hold, then fewer until neighbouring labels are apart
 * (their widths along x, a line's height along y). */
static int axis_ticks(svg_tick *t, const svg_axes *a, int horizontal)
{
	double span = horizontal ? a->right - a->left : a->bottom - a->top;
	int max = (int)(span / (horizontal ? 48 : 30)), n;
	for (;; max = n - 1) {
		n = horizontal ? svg_ticks(t, max, a->x0, a->x1, a->log_x, a->ux)
		               : svg_ticks(t, max, a->y0, a->y1, a->log_y, a->uy);
		int overlap = 0;
		for (int i = 0; i + 1 < n && !overlap; i++) {
			double gap = horizontal ? fabs(tx(a, t[i + 1].v) - tx(a, t[i].v)) : fabs(ty(a, t[i + 1].v) - ty(a, t[i].v));
			overlap = gap < (horizontal ? (text_w(t[i].label, 11) + text_w(t[i + 1].label, 11)) / 2 + 8 : 16);
		}
		if (!overlap || n <= 2)
			return n;
	}
}

void svg_axes_draw(FILE *f, const svg_axes *a, const char *xlabel, const char *ylabel)
{
	svg_tick xt[SVG_MAX_TICKS], yt[SVG_MAX_TICKS];
	int nx = axis_ticks(xt, a, 1), ny = axis_ticks(yt, a, 0);
	fprintf(f, "<g stroke=\"#e6e6e6\">\n");
	for (int i = 0; i < nx; i++)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", tx(a, xt[i].v), a->top, tx(a, xt[i].v),
		        a->bottom);
	for (int i = 0; i < ny; i++)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", a->left, ty(a, yt[i].v), a->right,
		        ty(a, yt[i].v));
	fprintf(f, "</g>\n<g stroke=\"#444\" fill=\"none\">\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
	           "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
	        a->left, a->bottom, a->right, a->bottom, a->left, a->bottom, a->left, a->top);
	for (int i = 0; i < nx; i++)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", tx(a, xt[i].v), a->bottom,
		        tx(a, xt[i].v), a->bottom + 5);
	for (int i = 0; i < ny; i++)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", a->left - 5, ty(a, yt[i].v), a->left,
		        ty(a, yt[i].v));
	/* A log axis also gets short unlabelled ticks at the finer round values (2, 5, 20, 50 ms between labelled
	 * decades): where labels had to be thinned, they still show the scale. */
	svg_tick minor[SVG_MAX_TICKS];
	int nm = a->log_x ? svg_ticks(minor, SVG_MAX_TICKS, a->x0, a->x1, 1, a->ux) : 0;
	for (int i = 0; i < nm; i++)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", tx(a, minor[i].v), a->bottom,
		        tx(a, minor[i].v), a->bottom + 3);
	nm = a->log_y ? svg_ticks(minor, SVG_MAX_TICKS, a->y0, a->y1, 1, a->uy) : 0;
	for (int i = 0; i < nm; i++)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", a->left - 3, ty(a, minor[i].v),
		        a->left, ty(a, minor[i].v));
	fprintf(f, "</g>\n<g font-size=\"11\" fill=\"#333\">\n");
	double widest = 0;
	for (int i = 0; i < nx; i++)
		svg_text(f, tx(a, xt[i].v), a->bottom + 18, "middle", xt[i].label);
	for (int i = 0; i < ny; i++) {
		svg_text(f, a->left - 8, ty(a, yt[i].v) + 4, "end", yt[i].label);
		widest = fmax(widest, text_w(yt[i].label, 11));
	}
	fprintf(f, "</g>\n");
	svg_text(f, (a->left + a->right) / 2, a->bottom + 38, "middle", xlabel);
	/* The y title clears the widest tick label, whatever the unit makes it. */
	double yx = a->left - widest - 22;
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">", yx,
	        (a->top + a->bottom) / 2, yx, (a->top + a->bottom) / 2);
	esc(f, ylabel);
	fprintf(f, "</text>\n");
}

/* The clip path's id comes from the plot area's corner: two plots of one picture never share it, and the
 * output stays a function of the input (no counter). */
void svg_clip_begin(FILE *f, const svg_axes *a)
{
	int id = (int)a->left * 10000 + (int)a->top;
	fprintf(f, "<clipPath id=\"plot%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n"
	           "<g clip-path=\"url(#plot%d)\">\n",
	        id, a->left, a->top, a->right - a->left, a->bottom - a->top, id);
}

void svg_clip_end(FILE *f)
{
	fprintf(f, "</g>\n");
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
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" fill-opacity=\"0.75\" stroke=\"white\" "
		           "stroke-width=\"0.5\"/>\n",
		        tx(a, x[i]), ty(a, y[i]), color);
}

void svg_band(FILE *f, const svg_axes *a, const double *x, const double *lo, const double *hi, int n,
              const char *color, double opacity)
{
	fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"none\" points=\"", color, opacity);
	for (int i = 0; i < n; i++)
		fprintf(f, "%.1f,%.1f ", tx(a, x[i]), ty(a, lo[i]));
	for (int i = n - 1; i >= 0; i--)
		fprintf(f, "%.1f,%.1f ", tx(a, x[i]), ty(a, hi[i]));
	fprintf(f, "\"/>\n");
	/* Its edges too, thin: an interval a few pixels wide still shows as a band, not as a thicker line. */
	for (int e = 0; e < 2; e++) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1\" stroke-opacity=\"0.8\" points=\"", color);
		for (int i = 0; i < n; i++)
			fprintf(f, "%.1f,%.1f ", tx(a, x[i]), ty(a, e ? hi[i] : lo[i]));
		fprintf(f, "\"/>\n");
	}
}

void svg_hline(FILE *f, const svg_axes *a, double y, const char *color, const char *label)
{
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
	           "stroke-dasharray=\"8 4\"/>\n",
	        a->left, ty(a, y), a->right, ty(a, y), color);
	/* At the left end: the charts that have such a line (memory against batch) rise to the right. */
	svg_text(f, a->left + 6, ty(a, y) - 6, "start", label);
}

void svg_vline(FILE *f, const svg_axes *a, double x, const char *color, const char *label)
{
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
	           "stroke-dasharray=\"2 3\"/>\n",
	        tx(a, x), a->top, tx(a, x), a->bottom, color);
	svg_text(f, tx(a, x) - 5, a->bottom - 8, "end", label);
}

static void key_swatch(FILE *f, double x, double y, const svg_key *k)
{
	switch (k->kind) {
	case SVG_KEY_BAND:
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"12\" fill=\"%s\" fill-opacity=\"0.35\"/>\n", x,
		        y - 6, k->color);
		break;
	case SVG_KEY_POINT:
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", x + 12, y, k->color);
		break;
	default:
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", x, y,
		        x + 24, y, k->color,
		        k->kind == SVG_KEY_DASHED   ? " stroke-dasharray=\"6 3\""
		        : k->kind == SVG_KEY_DOTTED ? " stroke-dasharray=\"2 3\""
		                                    : "");
	}
}

double svg_legend(FILE *f, double cx, double y, double max_w, const svg_key *keys, int n)
{
	enum { PAD = 10, ROW = 20, SWATCH = 30, GAP = 18, MAX_KEYS = 64 };
	/* Rows first (greedy), so that the box is sized and centred before anything is drawn. */
	int row_of[MAX_KEYS], rows = 0;
	double row_w[MAX_KEYS] = { 0 };
	if (n > MAX_KEYS)
		n = MAX_KEYS;
	for (int i = 0; i < n; i++) {
		double w = SWATCH + text_w(keys[i].label, 12);
		if (!rows || row_w[rows - 1] + GAP + w > max_w - 2 * PAD)
			rows++;
		row_w[rows - 1] += (row_w[rows - 1] > 0 ? GAP : 0) + w;
		row_of[i] = rows - 1;
	}
	double box_w = 0;
	for (int r = 0; r < rows; r++)
		box_w = fmax(box_w, row_w[r]);
	box_w += 2 * PAD;
	double h = rows * ROW + PAD, x = 0;
	if (!f)
		return h;
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"4\" fill=\"white\" stroke=\"#bbb\"/>\n",
	        cx - box_w / 2, y, box_w, h);
	for (int i = 0; i < n; i++) {
		if (i == 0 || row_of[i] != row_of[i - 1])
			x = cx - box_w / 2 + PAD;
		double yy = y + PAD / 2.0 + row_of[i] * ROW + ROW / 2.0;
		key_swatch(f, x, yy, &keys[i]);
		svg_text(f, x + SWATCH, yy + 4, "start", keys[i].label);
		x += SWATCH + text_w(keys[i].label, 12) + GAP;
	}
	return h;
}

void svg_bars(FILE *f, int x0, int y0, int width, const char *const *labels, const double *values, int n,
              const char *unit, const char *color)
{
	double max = 0;
	for (int i = 0; i < n; i++)
		max = isfinite(values[i]) && values[i] > max ? values[i] : max;
	if (max <= 0)
		max = 1;
	for (int i = 0; i < n; i++) {
		double y = y0 + i * 22;
		int known = isfinite(values[i]);
		double w = known && values[i] > 0 ? values[i] / max * width : 0;
		char name[40], num[32], buf[64];
		/* A long name is cut (with an ellipsis) rather than run into the chart on its left. */
		if (strlen(labels[i]) > 26)
			snprintf(name, sizeof name, "%.24s…", labels[i]);
		else
			snprintf(name, sizeof name, "%s", labels[i]);
		svg_text(f, x0 - 8, y + 14, "end", name);
		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>\n", x0, y + 2, w, color);
		svg_label(num, sizeof num, values[i], SVG_PLAIN);
		snprintf(buf, sizeof buf, "%s%s%s", num, known && *unit ? " " : "", known ? unit : "");
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
