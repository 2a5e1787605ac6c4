/* Code sites in the reports: under each host-side finding the lines of the
 * job's code its idle time comes from (sites.c computes them). */
#include <string.h>

#include "render.h"

static const char *nm(const struct analysis *a, uint32_t i)
{
	return i < a->t->names.n ? a->t->names.v[i] : "";
}

/* A file of the user's as the job named it, relative to its working directory. */
static const char *user_file(const struct analysis *a, uint32_t file)
{
	const char *f = nm(a, file), *cwd = trace_meta(a->t, "target.cwd");
	size_t n = cwd ? strlen(cwd) : 0;

	if (n && !strncmp(f, cwd, n) && f[n] == '/')
		return f + n + 1;
	return f;
}

/* The library function a site's line called, as the reports name it: past
 * a decorator's wrapper where a stack went inside it (sites.c). */
static uint32_t site_lib_file(const struct site *s)
{
	return s->shown_func ? s->shown_file : s->lib_file;
}

static uint32_t site_lib_func(const struct site *s)
{
	return s->shown_func ? s->shown_func : s->lib_func;
}

const char *site_file(const struct analysis *a, const struct site *s)
{
	return user_file(a, s->file);
}

/* "train.py:53 in step -> train.py:23 in save -> torch/serialization.py save":
 * the loop's line first where the site's frame is below it, "-> ... ->"
 * where frames of the user's lie between the two; a block of lines
 * (first..last, sites.c merge_blocks) as "train.py:21-24", its library named
 * where the line that holds the most makes the block's one library call
 * (the site's own) */
static void lines_text(char *buf, size_t len, const struct analysis *a, const struct site *s, uint32_t first,
		       uint32_t last)
{
	int k = 0, k2;

	if (s->call_line)
		k = snprintf(buf, len, "%s:%u in %s -> %s", user_file(a, s->call_file), s->call_line,
			     nm(a, s->call_func), s->elided ? "... -> " : "");
	if (k < 0 || (size_t)k >= len)
		return;
	if (first && last > first)
		k2 = snprintf(buf + k, len - (size_t)k, "%s:%u-%u in %s", site_file(a, s), first, last,
			      nm(a, s->func));
	else
		k2 = snprintf(buf + k, len - (size_t)k, "%s:%u in %s", site_file(a, s), s->line, nm(a, s->func));
	if (k2 < 0)
		return;
	k += k2;

	if (k >= 0 && (size_t)k < len && s->lib_func)
		snprintf(buf + k, len - (size_t)k, " -> %s %s", nm(a, site_lib_file(s)), nm(a, site_lib_func(s)));
}

void site_text(char *buf, size_t len, const struct analysis *a, const struct site *s)
{
	lines_text(buf, len, a, s, 0, 0);
}

void finding_site_text(char *buf, size_t len, const struct analysis *a, const struct finding_site *fs)
{
	lines_text(buf, len, a, &a->sites.v[fs->site], fs->line_first, fs->line_last);
}

/* A finding's site's class: a block's, the line's own otherwise. */
uint8_t finding_site_class(const struct analysis *a, const struct finding_site *fs)
{
	return fs->line_first ? fs->block_cls : a->sites.v[fs->site].cls;
}

void term_sites(FILE *f, const struct analysis *a, const struct finding *fd, int verbose)
{
	unsigned max = verbose ? FINDING_SITES : 3;
	char text[512];

	for (unsigned i = 0; i < fd->nsites && i < max; i++) {
		const struct finding_site *fs = &fd->sites[i];

		finding_site_text(text, sizeof(text), a, fs);
		if (fs->exact)
			fprintf(f, "    at %s: %llu call%s, %.1f ms waited (%.0f%% of the waits)\n", text,
				(unsigned long long)fs->calls, fs->calls == 1 ? "" : "s", fs->value / 1e6,
				100.0 * fs->share);
		else if (fs->launching)
			fprintf(f, "    at %s (%.0f%% of the time launching work)\n", text, 100.0 * fs->share);
		else if (fs->launched)
			fprintf(f, "    at %s (launched %.0f%% of the FP32/FP64 matrix kernels' time)\n", text,
				100.0 * fs->share);
		else if (fs->staging)
			fprintf(f, "    at %s (%.0f%% of the time in pageable copies)\n", text, 100.0 * fs->share);
		else {
			uint8_t cls = finding_site_class(a, fs);

			fprintf(f, "    at %s (%.0f%% of this idle%s%s)\n", text, 100.0 * fs->share, cls ? ": " : "",
				site_class_name(cls));
		}
	}
	if (backward_text(text, sizeof(text), fd, "\n    "))
		fprintf(f, "    %s\n", text);
}

/* The note under sites that hold a backward pass's idle (sites.c), with
 * brk between its two halves; 0 when there is none to give. */
int backward_text(char *buf, size_t len, const struct finding *fd, const char *brk)
{
	if (!fd->nsites || fd->backward_share < 0.005)
		return 0;
	snprintf(buf, len,
		 "(these shares hold the backward pass's %.0f%% of this idle, spread over the forward%slines: "
		 "autograd launches their gradients while the thread waits in backward())",
		 100.0 * fd->backward_share, brk);
	return 1;
}

void json_sites(struct json *j, const struct analysis *a, const struct finding *fd)
{
	json_arr_begin(j, "sites");
	for (unsigned i = 0; i < fd->nsites; i++) {
		const struct finding_site *fs = &fd->sites[i];
		const struct site *s = &a->sites.v[fs->site];
		uint8_t cls = finding_site_class(a, fs);

		json_obj_begin(j, NULL);
		json_str(j, "file", site_file(a, s));
		json_u64(j, "line", s->line);
		if (fs->line_first && fs->line_last > fs->line_first) { /* a block of lines */
			json_arr_begin(j, "lines");
			json_u64(j, NULL, fs->line_first);
			json_u64(j, NULL, fs->line_last);
			json_arr_end(j);
		}
		json_str(j, "function", nm(a, s->func));
		json_str(j, "library_file", s->lib_func ? nm(a, site_lib_file(s)) : NULL);
		json_str(j, "library_function", s->lib_func ? nm(a, site_lib_func(s)) : NULL);
		json_str(j, "class", cls ? site_class_name(cls) : NULL);
		if (s->call_line) { /* the loop's line that leads to it */
			json_obj_begin(j, "call");
			json_str(j, "file", user_file(a, s->call_file));
			json_u64(j, "line", s->call_line);
			json_str(j, "function", nm(a, s->call_func));
			json_bool(j, "frames_between", s->elided);
			json_obj_end(j);
		} else {
			json_null(j, "call");
		}
		json_bool(j, "user_code", s->user);
		json_bool(j, "exact", fs->exact);
		json_bool(j, "launching", fs->launching);
		json_bool(j, "staging", fs->staging);
		json_bool(j, "launched", fs->launched);
		json_dbl(j, "share", fs->share);
		json_u64(j, "wait_ns", (uint64_t)(fs->value + 0.5));
		json_u64(j, "count", fs->calls);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_dbl(j, "sites_backward_share", fd->backward_share);
}

/* A child the sampler found not to be Python and never sampled (a
 * compiler's subprocess, a shell): counted, not listed, where it is neither
 * the target nor the process that used the GPU (JAX starts hundreds). */
static int unlisted_child(const struct analysis *a, const struct py_status_rec *s)
{
	const struct trace *t = a->t;

	if (s->stream || s->code != 1 || s->samples || s->dropped || s->pid == a->main_pid)
		return 0;
	for (size_t i = 0; i < t->procs.n; i++)
		if (t->procs.v[i].pid == s->pid && t->procs.v[i].is_target)
			return 0;
	return 1;
}

void json_py(struct json *j, const struct analysis *a)
{
	const struct trace *t = a->t;
	uint64_t dropped = 0, read = 0, unlisted = 0;

	for (size_t i = 0; i < t->py_status.n; i++) {
		dropped += t->py_status.v[i].dropped;
		read += t->py_status.v[i].samples;
	}
	json_obj_begin(j, "python_stacks");
	json_str(j, "note", a->py_note[0] ? a->py_note : NULL);
	json_u64(j, "samples", t->py_samples);
	json_u64(j, "stacks_read", read);
	json_u64(j, "dropped", dropped);
	json_u64(j, "training_thread_samples", a->py_thread_samples);
	json_u64(j, "sync_calls", a->api_calls);
	json_u64(j, "sync_calls_with_site", a->api_calls_sited);
	json_arr_begin(j, "processes");
	for (size_t i = 0; i < t->py_status.n; i++) {
		const struct py_status_rec *s = &t->py_status.v[i];

		if (unlisted_child(a, s)) {
			unlisted++;
			continue;
		}
		json_obj_begin(j, NULL);
		json_u64(j, "pid", s->pid);
		json_str(j, "by", s->stream ? "injection library" : "sampler");
		json_u64(j, "code", s->code);
		json_str(j, "detail", s->detail);
		json_u64(j, "samples", s->samples);
		json_u64(j, "dropped", s->dropped);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_u64(j, "children_not_python", unlisted);
	json_obj_end(j);
}
