/* gpuwhy report --trace of a job: every rank's timeline (render_trace, as
 * for one recording) in one Chrome trace, on the job's common time line
 * (align.c), one group of processes per rank. Each rank's trace is
 * written into a temporary file and copied event by event with its
 * process ids moved into the rank's own range ((index + 1) << 23 | pid:
 * the job's pids and the GPUs' 2^22 + d of two ranks never meet), its
 * times shifted onto the common line, flow ids made the rank's, and its
 * processes named "rank R: ...". Memory: one rank's analysis at a time. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analyze/export.h"
#include "../report/render.h"
#include "../util/outfile.h"
#include "../util/util.h"
#include "job.h"
#include "report_job.h"

#define TRACE_JOB_MAX_RANKS 254     /* (index + 1) << 23 stays below 2^31 */
#define TRACE_JOB_EVENTS 2000000ull /* in all: each rank gets its share */
#define PID_BITS 23

struct rewrite {
	FILE *out;
	long rank;
	unsigned idx;
	int64_t shift_ns; /* a rank's ts 0 on the common line, less the job's zero */
	const struct job *j;
	const struct rank_rec *r;
	uint64_t zero;    /* the rank's time_zero_ns (its CLOCK_MONOTONIC at ts 0) */
	int first;        /* no event written yet, in the whole document */
	char *ev;
	size_t n, cap;
};

static int ev_put(struct rewrite *w, int c)
{
	if (w->n + 1 >= w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 4096;
		char *p = realloc(w->ev, cap);

		if (!p)
			return -ENOMEM;
		w->ev = p;
		w->cap = cap;
	}
	w->ev[w->n++] = (char)c;
	return 0;
}

/* A number's end in s from i. */
static size_t num_end(const char *s, size_t i, size_t n)
{
	while (i < n && strchr("0123456789.-+eE", s[i]))
		i++;
	return i;
}

/* Writes one event of the rank's trace, rewritten. */
static void emit_event(struct rewrite *w)
{
	const char *s = w->ev;
	size_t n = w->n, i = 0;
	int depth = 0, in_str = 0, proc_name = strstr(s, "\"name\":\"process_name\"") == s + 1;
	int in_args = 0;

	fputs(w->first ? "\n" : ",\n", w->out);
	w->first = 0;
	while (i < n) {
		char c = s[i];

		if (in_str) {
			fputc(c, w->out);
			if (c == '\\' && i + 1 < n)
				fputc(s[++i], w->out);
			else if (c == '"')
				in_str = 0;
			i++;
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']')
			depth--, in_args = in_args && depth > 1;
		if (c == '"' && depth == 1 && i + 6 < n && !strncmp(s + i, "\"pid\":", 6)) {
			size_t e = num_end(s, i + 6, n);
			uint64_t pid = strtoull(s + i + 6, NULL, 10);

			fprintf(w->out, "\"pid\":%" PRIu64, (uint64_t)(w->idx + 1) << PID_BITS | (pid & ((1u << PID_BITS) - 1)));
			i = e;
			continue;
		}
		if (c == '"' && depth == 1 && i + 5 < n && !strncmp(s + i, "\"ts\":", 5)) {
			size_t e = num_end(s, i + 5, n);
			int64_t ts = (int64_t)(strtod(s + i + 5, NULL) * 1000.0 + 0.5);
			int64_t t = job_rel(w->j, w->r, w->zero + (uint64_t)ts) - w->shift_ns;

			fprintf(w->out, "\"ts\":%" PRId64 ".%03d", t / 1000, (int)(t % 1000));
			i = e;
			continue;
		}
		if (c == '"' && depth == 1 && i + 5 < n && !strncmp(s + i, "\"id\":", 5) &&
		    strchr("0123456789", s[i + 5])) {
			size_t e = num_end(s, i + 5, n);

			fprintf(w->out, "\"id\":%" PRIu64, (uint64_t)w->idx << 40 | (uint64_t)strtoull(s + i + 5, NULL, 10));
			i = e;
			continue;
		}
		if (c == '"' && depth == 1 && !strncmp(s + i, "\"args\":", 7))
			in_args = 1;
		if (c == '"' && proc_name && in_args && depth == 2 && !strncmp(s + i, "\"name\":\"", 8)) {
			fprintf(w->out, "\"name\":\"rank %ld: ", w->rank);
			i += 8;
			in_str = 1;
			continue;
		}
		if (c == '"')
			in_str = 1;
		fputc(c, w->out);
		i++;
	}
}

/* Reads a rank's trace header up to its events (f from its start): its
 * otherData.time_zero_ns, the CLOCK_MONOTONIC of its ts 0. 0 or -EIO. */
static int read_zero(FILE *f, uint64_t *zero)
{
	char head[512];
	size_t hn = 0;
	int c;
	const char *z;

	while ((c = fgetc(f)) != EOF && hn + 1 < sizeof(head)) {
		head[hn++] = (char)c;
		head[hn] = 0;
		if (strstr(head, "\"traceEvents\":["))
			break;
	}
	z = strstr(head, "\"time_zero_ns\":");
	if (c == EOF || !z)
		return -EIO;
	*zero = strtoull(z + 15, NULL, 10);
	return 0;
}

/* Copies the events of one rank's trace (f, after its header). */
static int copy_events(struct rewrite *w, FILE *f)
{
	int c, depth = 0, in_str = 0, esc = 0, started = 0;

	w->n = 0;
	while ((c = fgetc(f)) != EOF) {
		if (!started && c != '{')
			continue;
		started = 1;
		if (ev_put(w, c) < 0)
			return -ENOMEM;
		if (in_str) {
			if (esc)
				esc = 0;
			else if (c == '\\')
				esc = 1;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"')
			in_str = 1;
		else if (c == '{')
			depth++;
		else if (c == '}' && --depth == 0) {
			w->ev[w->n] = 0;
			emit_event(w);
			w->n = 0;
			started = 0;
		}
	}
	return ferror(f) ? -EIO : 0;
}

/* One rank: its analysis with every operation, its trace into a temporary
 * file, read up to its events (*zero: its ts 0). The file, or NULL after
 * saying why (the rank is left out). */
static FILE *one_rank(const struct rank_rec *r, uint64_t limit, const char *steps, uint64_t *zero)
{
	struct trace t;
	struct analysis a;
	struct render_trace_stats st;
	char err[512];
	FILE *tmp = NULL;
	int ret = trace_load_flags(&t, r->load_path, TRACE_KEEP_OPS, err, sizeof(err));

	if (ret < 0) {
		gw_warn("rank %ld left out of the timeline: %s", r->rank, err);
		trace_free(&t);
		return NULL;
	}
	ret = analyze_steps(&t, &a, ANALYZE_KEEP_GAPS, steps);
	if (ret == 0 && !(tmp = tmpfile()))
		ret = -errno;
	if (ret == 0) {
		struct trace_export x;

		(void)trace_export_read(&t, &x); /* what it gathers until a failure is drawn */
		render_trace(tmp, &a, &x, limit, &st);
		trace_export_free(&x);
		ret = fflush(tmp) == 0 && !ferror(tmp) ? 0 : -EIO;
		rewind(tmp);
		if (ret == 0)
			ret = read_zero(tmp, zero);
	}
	if (ret < 0) {
		gw_warn("rank %ld left out of the timeline: %s", r->rank, strerror(-ret));
		if (tmp)
			fclose(tmp);
		tmp = NULL;
	}
	analysis_free(&a);
	trace_free(&t);
	return tmp;
}

/* Writes every rank's events, after the header. */
static void write_ranks(struct rewrite *w, FILE **tmp, const uint64_t *zero)
{
	for (size_t i = 0, idx = 0; i < w->j->ranks.n; i++) {
		const struct rank_rec *rr = &w->j->ranks.v[i];

		if (rr->status == RANK_UNREADABLE || !rr->ndevs)
			continue;
		idx++;
		if (!tmp[i])
			continue;
		w->r = rr;
		w->rank = rr->rank;
		w->idx = (unsigned)idx - 1;
		w->zero = zero[i];
		if (copy_events(w, tmp[i]) < 0)
			gw_warn("rank %ld: its timeline is cut short (out of memory or a read error)", rr->rank);
	}
}

int job_write_trace(const struct job *j, const char *out, unsigned force, const char *const *inputs,
		    const char *steps)
{
	struct rewrite w = { .j = j, .first = 1 };
	struct outfile of;
	size_t used = 0;
	int64_t zero = INT64_MAX;
	FILE **tmp = NULL;
	uint64_t *zeros = NULL;
	int r, ret = 0;

	for (size_t i = 0; i < j->ranks.n; i++)
		used += j->ranks.v[i].status != RANK_UNREADABLE && j->ranks.v[i].ndevs;
	if (used > TRACE_JOB_MAX_RANKS) {
		gw_error("--trace of a job draws at most %d ranks, and this one has %zu: add --rank N for one",
			 TRACE_JOB_MAX_RANKS, used);
		return 1;
	}
	if (!used) {
		gw_warn("no rank has a GPU timeline: %s not written", out);
		return 0;
	}
	tmp = calloc(j->ranks.n, sizeof(*tmp));
	zeros = calloc(j->ranks.n, sizeof(*zeros));
	if (!tmp || !zeros) {
		gw_error("out of memory while drawing the job's timeline");
		ret = 1;
		goto done;
	}
	/* every rank drawn first: the job's ts 0 is the earliest of theirs */
	for (size_t i = 0; i < j->ranks.n; i++) {
		const struct rank_rec *rr = &j->ranks.v[i];

		if (rr->status == RANK_UNREADABLE || !rr->ndevs)
			continue;
		tmp[i] = one_rank(rr, TRACE_JOB_EVENTS / used > 50000 ? TRACE_JOB_EVENTS / used : 50000, steps,
				  &zeros[i]);
		if (tmp[i] && job_rel(j, rr, zeros[i]) < zero)
			zero = job_rel(j, rr, zeros[i]);
	}
	if (zero == INT64_MAX) {
		gw_error("no rank's timeline could be drawn: %s not written", out);
		ret = 1;
		goto done;
	}
	r = outfile_open(&of, out, OUTFILE_GZIP_BY_NAME | force, inputs);
	if (r < 0) {
		gw_error("cannot write the timeline to %s: %s", out, outfile_strerror(r));
		ret = 1;
		goto done;
	}
	w.out = of.f;
	w.shift_ns = zero;
	fprintf(of.f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"gpuwhy %s\",\"job\":true,"
		      "\"time_zero_realtime_ns\":%" PRIu64 ",\"ranks\":%zu},\"traceEvents\":[",
		GPUWHY_VERSION, j->base + (uint64_t)zero, used);
	write_ranks(&w, tmp, zeros);
	fputs("\n]}\n", of.f);
	r = outfile_commit(&of);
	if (r < 0) {
		gw_error("writing the timeline to %s failed: %s", out, outfile_strerror(r));
		ret = 1;
	} else {
		gw_note("timeline of %zu ranks written to %s (open it in https://ui.perfetto.dev): one group of "
			"processes per rank, on one time line", used, out);
	}
done:
	for (size_t i = 0; tmp && i < j->ranks.n; i++)
		if (tmp[i])
			fclose(tmp[i]);
	free(tmp);
	free(zeros);
	free(w.ev);
	return ret;
}
