/* Renderers: they format struct analysis, they never compute. */
#ifndef GPUWHY_RENDER_H
#define GPUWHY_RENDER_H

#include <stdio.h>

#include "../analyze/analyze.h"
#include "../util/json.h"

/* 0, or -ENOMEM: no memory to put in the micro sign (durations in "us"). */
int render_terminal(FILE *f, const struct analysis *a, int verbose, int color);
void render_json(struct json *j, const struct analysis *a);
/* Chrome trace-event JSON (Perfetto). Past `limit` events (0: the default,
 * 2 million) the shortest kernels are left out: `dropped` counts them. */
struct render_trace_stats {
	uint64_t events, dropped, limit;
	uint64_t dropped_other; /* host calls and Python slices past the limit */
};
struct trace_export; /* analyze/export.h: what the export's own reading gathered */
void render_trace(FILE *f, const struct analysis *a, const struct trace_export *x, uint64_t limit,
		  struct render_trace_stats *st);
/* The HTML report (render_html.c): one self-contained page. 0 or -EIO. */
int render_html(FILE *f, const struct analysis *a);
/* The JSON's severity ("info", "warning", "high"), and the word the terminal
 * and HTML print for it ("info", "warning", "critical"). */
const char *severity_name(enum severity s);
const char *severity_label(enum severity s);
const char *confidence_name(enum confidence c);

/* The start-up's parts in words (render_startup.c): 1 and msg set where
 * facts.c chose any, else 0 and msg empty. */
int startup_parts_text(char *msg, size_t len, const struct analysis *a);
int startup_once_text(char *msg, size_t len, const struct analysis *a);
/* Long steps every N steps in the loop's own code (steps_long_every), in
 * words: 1 and msg set, else 0 and msg empty. */
int steps_same_code_text(char *msg, size_t len, const struct analysis *a);
/* A checkpoint or an evaluation seen once after the steps (facts' tail_*_shown),
 * in words, for the verdict: 1 and msg set, else 0 and msg empty. */
int tail_once_text(char *msg, size_t len, const struct analysis *a);
/* The step the gains are of: without gpuwhy's own cost and kernels built on first use. */
void untraced_text(char *msg, size_t len, const struct analysis *a);
/* Where the training thread compiled in the steady window (facts.compile_shown):
 * the split's note, without its lead word; 0 when it is not said */
int compile_text(char *msg, size_t len, const struct analysis *a);

/* A batch fix's replays in words, appended to sb (render_batch.c; for a
 * finding with finding_batch() > 0): 0, or -ENOMEM. */
struct strbuf;
int batch_text(struct strbuf *sb, const struct finding *fd);
/* "PREFIXC1 and C14 (--fixes)": the findings a user chose for the combined
 * replay (render_term.c) */
void combined_causes_text(char *buf, size_t len, const struct analysis *a, const char *prefix);

/* Code sites (render_sites.c). */
const char *site_file(const struct analysis *a, const struct site *s);
void site_text(char *buf, size_t len, const struct analysis *a, const struct site *s);
void finding_site_text(char *buf, size_t len, const struct analysis *a, const struct finding_site *fs);
uint8_t finding_site_class(const struct analysis *a, const struct finding_site *fs);
void term_sites(FILE *f, const struct analysis *a, const struct finding *fd, int verbose);
int backward_text(char *buf, size_t len, const struct finding *fd, const char *brk);
void json_sites(struct json *j, const struct analysis *a, const struct finding *fd);
void json_py(struct json *j, const struct analysis *a);

#endif
