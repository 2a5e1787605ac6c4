/* HTML and SVG building blocks (html.h). */
#include <math.h>
#include <string.h>

#include "../analyze/analyze.h"
#include "html.h"

void html_esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			/* control characters would make the document invalid */
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				fputc('?', f);
			else
				fputc(*s, f);
		}
	}
}

static const char css[] =
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1100px;"
	"padding:16px 24px;color:#1d1d1f;background:#fff}\n"
	"h1{font-size:20px;margin:8px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}"
	"h3{font-size:15px;margin:4px 0}\n"
	".muted{color:#666}.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;"
	"word-break:break-all}\n"
	".verdict{padding:10px 14px;border-radius:6px;margin:12px 0;font-size:16px}\n"
	".verdict.healthy{background:#e6f4ea;border:1px solid #9ccc9c}"
	".verdict.bottlenecked{background:#fdecea;border:1px solid #e3a09a}"
	".verdict.no-gpu-data{background:#f1f1f1;border:1px solid #ccc}\n"
	".finding{border:1px solid #ddd;border-left:5px solid #999;border-radius:4px;padding:8px 12px;"
	"margin:10px 0}\n"
	".finding.high{border-left-color:#c62828}.finding.warning{border-left-color:#ef9f00}"
	".finding.info{border-left-color:#8aa}.finding.not-assessed{border-left-color:#ccc;color:#555}\n"
	".sev{font-weight:600;text-transform:uppercase;font-size:12px;margin-right:6px}\n"
	".sev.high{color:#c62828}.sev.warning{color:#b07000}.sev.info{color:#477}\n"
	"table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 10px;border-bottom:1px solid #eee;"
	"text-align:left;vertical-align:top}\n"
	"td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	".better{color:#1b7a1b}.worse{color:#b3261e}\n"
	".legend{display:inline-block;margin:2px 12px 2px 0;font-size:12.5px}"
	".legend i{display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px}\n"
	"svg{display:block;margin:6px 0;max-width:100%;height:auto}svg text{font:11px sans-serif;fill:#444}\n"
	".grid{stroke:#eee}.axis{stroke:#999;fill:none}\n"
	"#js-errors{display:none;background:#fdecea;color:#b3261e;white-space:pre-wrap;padding:8px}\n"
	"#js-status{color:#999;font-size:11px;margin-top:30px}\n"
	"details summary{cursor:pointer;color:#555}\n";

void html_begin(FILE *f, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n<title>", f);
	html_esc(f, title);
	fprintf(f, "</title>\n<style>\n%s</style>\n", css);
	/* first of all: any later script error lands in the page */
	fputs("<script>window.onerror=function(m,s,l){var d=document.getElementById('js-errors');"
	      "if(!d){d=document.createElement('div');d.id='js-errors';"
	      "(document.body||document.documentElement).appendChild(d);}"
	      "d.style.display='block';d.textContent+=m+' (line '+l+')\\n';};</script>\n"
	      "</head><body>\n<div id=\"js-errors\"></div>\n", f);
}

void html_end(FILE *f)
{
	/* says the script ran to the end and what it found drawn */
	fputs("<div id=\"js-status\"></div>\n<script>(function(){var s=document.querySelectorAll('svg');"
	      "var n=0;for(var i=0;i<s.length;i++)n+=s[i].childNodes.length;"
	      "document.getElementById('js-status').textContent='rendered: '+s.length+' charts, '+n+"
	      "' elements';})();</script>\n</body></html>\n", f);
}

void chart_init(struct chart *c, int w, int h, double x0, double x1, double y0, double y1)
{
	c->w = w;
	c->h = h;
	c->left = 58;
	c->right = 12;
	c->top = 8;
	c->bottom = 34;
	c->x0 = x0;
	c->x1 = x1 > x0 ? x1 : x0 + 1;
	c->y0 = y0;
	c->y1 = y1 > y0 ? y1 : y0 + 1;
}

double chart_x(const struct chart *c, double x)
{
	return c->left + (x - c->x0) / (c->x1 - c->x0) * (c->w - c->left - c->right);
}

double chart_y(const struct chart *c, double y)
{
	return c->h - c->bottom - (y - c->y0) / (c->y1 - c->y0) * (c->h - c->top - c->bottom);
}

/* A step of 1, 2 or 5 x 10^k giving about n ticks over span. */
static double tick_step(double span, int n)
{
	double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void tick_label(char *b, size_t len, double v, double step)
{
	if (step >= 1 || v == 0)
		snprintf(b, len, "%.0f", v);
	else
		snprintf(b, len, "%.*f", (int)ceil(-log10(step)), v);
}

#define MAX_TICKS 32

/* The ticks over [lo, hi], about n of them: *first the index of the first
 * (the tick i is at i * *st), returns how many. Counted in whole steps, not
 * by adding the step to a value: next to a damaged recording's 3e16 a step
 * of 0.1 adds nothing, and the loop would never end. 0 when the range
 * gives no sensible ticks. */
static int ticks(double lo, double hi, int n, double *first, double *st)
{
	double a, b;

	*st = tick_step(hi - lo, n);
	if (!isfinite(lo) || !isfinite(hi) || !isfinite(*st) || !(*st > 0))
		return 0;
	a = ceil(lo / *st);
	b = floor(hi / *st + 1e-9);
	if (!(b >= a) || b - a >= MAX_TICKS || a + 1 == a)
		return 0;
	*first = a;
	return (int)(b - a) + 1;
}

void chart_begin(FILE *f, const struct chart *c, const char *id, const char *cls, const char *xlabel,
		 const char *ylabel)
{
	double st, first;
	char b[32];
	int n;

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" class=\"%s\" width=\"%d\" "
		   "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		id, cls, c->w, c->h, c->w, c->h);
	n = ticks(c->y0, c->y1, 4, &first, &st);
	for (int i = 0; i < n; i++) {
		double v = (first + i) * st, y = chart_y(c, v);

		tick_label(b, sizeof(b), v, st);
		fprintf(f, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
			   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			c->left, c->w - c->right, y, y, c->left - 4, y + 4, b);
	}
	n = *xlabel ? ticks(c->x0, c->x1, 8, &first, &st) : 0;
	for (int i = 0; i < n; i++) {
		double v = (first + i) * st;

		tick_label(b, sizeof(b), v, st);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", chart_x(c, v),
			c->h - c->bottom + 14, b);
	}
	fprintf(f, "<rect class=\"axis\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", c->left, c->top,
		c->w - c->left - c->right, c->h - c->top - c->bottom);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (c->left + c->w - c->right) / 2,
		c->h - 4);
	html_esc(f, xlabel);
	fprintf(f, "</text><text transform=\"translate(12,%d) rotate(-90)\" text-anchor=\"middle\">",
		(c->top + c->h - c->bottom) / 2);
	html_esc(f, ylabel);
	fputs("</text>\n", f);
}

void chart_end(FILE *f)
{
	fputs("</svg>\n", f);
}

void chart_path(FILE *f, const struct chart *c, const double *x, const double *y, size_t n,
		const char *cls, const char *color, const char *title)
{
	int pen = 0;

	if (!n)
		return;
	fprintf(f, "<path class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" d=\"", cls, color);
	for (size_t i = 0; i < n; i++) {
		if (isnan(y[i])) /* no sample in this bin: the line goes on */
			continue;
		fprintf(f, "%s%.1f %.1f", pen ? "L" : "M", chart_x(c, x[i]), chart_y(c, y[i]));
		pen = 1;
	}
	fputs("\">", f);
	if (title) {
		fputs("<title>", f);
		html_esc(f, title);
		fputs("</title>", f);
	}
	fputs("</path>\n", f);
}

void html_legend(FILE *f, const char *color, const char *label)
{
	fprintf(f, "<span class=\"legend\"><i style=\"background:%s\"></i>", color);
	html_esc(f, label);
	fputs("</span>", f);
}

const char *cause_color(int cause)
{
	static const char *const colors[IDLE_NCAUSES] = {
		[IDLE_LAUNCH_OVERHEAD] = "#f4a261", [IDLE_LAUNCH_BLOCKING] = "#e76f51",
		[IDLE_SYNC] = "#d62828",            [IDLE_PAGEABLE] = "#9d4edd",
		[IDLE_DATA_WAIT] = "#1d70b8",       [IDLE_HOST_COMPUTE] = "#48a9d6",
		[IDLE_IO] = "#7f5539",              [IDLE_OVERSUB] = "#c9a227",
		[IDLE_PERIODIC] = "#2a9d8f",        [IDLE_COMM] = "#6d597a",
		[IDLE_WRITE] = "#b5838d",           [IDLE_WAIT] = "#6d597a",
		[IDLE_COMPILE] = "#588157",         [IDLE_UNKNOWN] = "#aaaaaa",
	};

	return cause >= 0 && cause < IDLE_NCAUSES ? colors[cause] : "#aaaaaa";
}

void html_split_bar(FILE *f, const char *id, const double *share, const char *const *label,
		    const char *const *color, int n)
{
	const int w = 900, h = 28;
	double x = 0;

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" class=\"split\" width=\"%d\" "
		   "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		id, w, h, w, h);
	for (int i = 0; i < n; i++) {
		double wd = share[i] * w;

		if (wd <= 0)
			continue;
		fprintf(f, "<rect class=\"part\" x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
			   "<title>",
			x, wd, h, color[i]);
		html_esc(f, label[i]);
		fprintf(f, ": %.1f%%</title></rect>\n", 100 * share[i]);
		x += wd;
	}
	fputs("</svg>\n", f);
}
