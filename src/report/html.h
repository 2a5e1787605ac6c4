/* Building blocks of the HTML pages (report --html, diff --html): one
 * self-contained file, inline CSS, SVG drawn here and a few lines of inline
 * JavaScript that put any script error into the page (#js-errors) and say
 * that it ran (#js-status), so a headless browser can check both. Nothing
 * is fetched at view time. Every string from a recording goes through
 * html_esc. */
#ifndef GPUWHY_HTML_H
#define GPUWHY_HTML_H

#include <stddef.h>
#include <stdio.h>

/* Writes s with & < > " ' escaped (text and attribute values alike). */
void html_esc(FILE *f, const char *s);
/* The document up to <body> (title escaped) and from the last section on. */
void html_begin(FILE *f, const char *title);
void html_end(FILE *f);

/* A chart's plot area: data x0..x1, y0..y1 onto a w x h SVG with margins. */
struct chart {
	double x0, x1, y0, y1;
	int w, h, left, right, top, bottom;
};
void chart_init(struct chart *c, int w, int h, double x0, double x1, double y0, double y1);
double chart_x(const struct chart *c, double x);
double chart_y(const struct chart *c, double y);
/* <svg ...> with id and class, and the frame, ticks and axis labels (an
 * empty xlabel: no x ticks either, the caller labels the x axis). */
void chart_begin(FILE *f, const struct chart *c, const char *id, const char *cls, const char *xlabel,
		 const char *ylabel);
void chart_end(FILE *f);
/* A polyline of n points (x[i], y[i]) (NaN y: skipped), class cls, colour. */
void chart_path(FILE *f, const struct chart *c, const double *x, const double *y, size_t n,
		const char *cls, const char *color, const char *title);
/* A legend entry under the chart (outside the SVG). */
void html_legend(FILE *f, const char *color, const char *label);

/* One colour per idle cause (enum idle_cause), and the busy colour. */
const char *cause_color(int cause);
#define BUSY_COLOR "#4c9a2a"

/* A horizontal bar split in parts (shares summing to at most 1), with a
 * <title> for each part: the idle split. */
void html_split_bar(FILE *f, const char *id, const double *share, const char *const *label,
		    const char *const *color, int n);

#endif
