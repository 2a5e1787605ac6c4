/* The JSON report (schema "gpuwhy.report/1", docs/JSON.md). Fields are only
 * ever added within a schema version. */
#include <stdlib.h>
#include <string.h>

#include "../analyze/analyze.h"
#include "render.h"

const char *severity_name(enum severity s)
{
	return s == SEV_HIGH ? "high" : s == SEV_WARN ? "warning" : "info";
}

/* The word the terminal and HTML reports print: "high" was also a
 * confidence ("[high] ... (confidence high)"). */
const char *severity_label(enum severity s)
{
	return s == SEV_HIGH ? "critical" : s == SEV_WARN ? "warning" : "info";
}

const char *confidence_name(enum confidence c)
{
	return c == CONF_HIGH ? "high" : c == CONF_MEDIUM ? "medium" : "low";
}

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* The reader's verdict (docs/FORMAT.md "Damage"). */
static void render_damage(struct json *j, const struct gw_verdict *v)
{
	json_obj_begin(j, "damage");
	json_str(j, "verdict", gw_verdict_name(v));
	json_u64(j, "bytes_skipped", v->bytes_skipped);
	json_u64(j, "chunks_skipped", v->chunks_skipped);
	json_u64(j, "records_malformed", v->records_malformed);
	json_u64(j, "cut_bytes", v->cut_bytes);
	json_u64(j, "chunks_repeated", v->chunks_repeated);
	json_u64(j, "bytes_refused", v->bytes_refused);
	json_obj_end(j);
}

static void render_job(struct json *j, const struct trace *t)
{
	const char *v = trace_meta(t, "record.exit_status");

	json_obj_begin(j, "job");
	json_str(j, "cmdline", trace_meta(t, "target.cmdline"));
	if (v)
		json_i64(j, "exit_status", atoi(v));
	else
		json_null(j, "exit_status");
	json_obj_end(j);
}

static void json_range(struct json *j, const char *key, int have, double lo, double hi)
{
	if (!have) {
		json_null(j, key);
		return;
	}
	json_arr_begin(j, key);
	json_dbl(j, NULL, lo);
	json_dbl(j, NULL, hi);
	json_arr_end(j);
}

/* A batch fix's replays: the per-sample speed-up at each factor, the one
 * the figures take, and what the memory in use allows. */
static void json_batch(struct json *j, const struct finding *f)
{
	json_obj_begin(j, "batch");
	json_arr_begin(j, "points");
	for (unsigned i = 0; i < f->batch_n; i++) {
		json_obj_begin(j, NULL);
		json_dbl(j, "factor", f->batch_k[i]);
		json_dbl(j, "speedup_per_sample", f->batch_x[i]);
		json_bool(j, "fits_memory", !(f->batch_mem_k > 0) || f->batch_k[i] <= f->batch_mem_k);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_dbl(j, "factor_used", f->batch_k[f->batch_at]);
	json_dbl(j, "if_every_kernel_grows", f->batch_lo);
	if (f->batch_mem_k > 0)
		json_dbl(j, "memory_allows", f->batch_mem_k);
	else
		json_null(j, "memory_allows");
	json_obj_end(j);
}

/* Every warning-or-above finding fixed at once, or those --fixes named. */
static void json_combined(struct json *j, const struct analysis *a)
{
	if (a->combined_speedup > 0)
		json_dbl(j, "combined_speedup", a->combined_speedup);
	else
		json_null(j, "combined_speedup");
	json_bool(j, "combined_capped", a->combined_capped);
	if (a->combined_batch > 0)
		json_dbl(j, "combined_batch_factor", a->combined_batch);
	else
		json_null(j, "combined_batch_factor");
	json_range(j, "combined_speedup_range", a->combined_replayed && a->combined_speedup > 0, a->combined_lo,
		   a->combined_hi);
	json_arr_begin(j, "combined_of"); /* the findings whose fixes it replays */
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].in_combined)
			json_str(j, NULL, a->findings.v[i].cause);
	json_arr_end(j);
	json_bool(j, "combined_chosen", a->combined_chosen);
}

/* The start-up finding (docs/RULES.md section 2): the next run's gain from
 * a warm compilation cache, or null. */
static void json_startup(struct json *j, const struct analysis *a)
{
	const struct startup_finding *sf = &a->startup_finding;

	if (!sf->shown) {
		json_null(j, "startup_finding");
		return;
	}
	json_obj_begin(j, "startup_finding");
	json_str(j, "severity", severity_name(SEV_INFO));
	json_str(j, "title", sf->title);
	json_str(j, "compiler", sf->compiler_id);
	json_dbl(j, "job_s", sf->job_ns / 1e9);
	json_dbl(j, "startup_s", (double)a->startup_ns / 1e9);
	json_dbl(j, "compile_s", a->startup.compile_ns / 1e9);
	json_dbl(j, "cached_compile_s", a->startup.cache_ns / 1e9);
	json_dbl(j, "saved_s", sf->saved_ns / 1e9);
	json_range(j, "saved_range_s", 1, sf->saved_lo_ns / 1e9, sf->saved_hi_ns / 1e9);
	json_dbl(j, "job_speedup", sf->speedup);
	json_range(j, "job_speedup_range", 1, sf->speedup_lo, sf->speedup_hi);
	if (a->startup.compile_file) {
		json_obj_begin(j, "site");
		json_str(j, "file", a->t->names.v[a->startup.compile_file]);
		json_u64(j, "line", a->startup.compile_line);
		json_obj_end(j);
	} else {
		json_null(j, "site");
	}
	json_str(j, "evidence", sf->evidence);
	json_str(j, "fix", sf->fix);
	json_obj_end(j);
}

/* The replay of the steady window (docs/RULES.md section 4): how closely
 * the replay of the recording as it ran gives its length back. */
static void json_replay(struct json *j, const struct analysis *a)
{
	const struct replay_facts *r = &a->replay;

	if (!a->replay_used) {
		json_null(j, "replay");
		return;
	}
	json_obj_begin(j, "replay");
	json_dbl(j, "recorded_ms", r->recorded_ns / 1e6);
	json_dbl(j, "replayed_ms", r->replayed_ns / 1e6);
	json_dbl(j, "error_pct", 100 * r->err);
	json_bool(j, "uncertain", a->replay_uncertain);
	json_u64(j, "operations", r->ops);
	json_u64(j, "waits", r->waits);
	json_dbl(j, "host_pace_us", r->pace_ns / 1e3);
	if (r->blocking_ns > 0)
		json_dbl(j, "blocking_launch_us", r->blocking_ns / 1e3);
	else
		json_null(j, "blocking_launch_us");
	json_obj_end(j);
}

/* The main GPU over the steady window. */
static void json_steady(struct json *j, const struct analysis *a)
{
	json_obj_begin(j, "steady");
	json_u64(j, "device", a->main_dev);
	json_dbl(j, "seconds", a->steady_ns / 1e9);
	json_dbl(j, "busy_pct", pct((double)a->busy_ns, (double)a->steady_ns));
	json_dbl(j, "idle_pct", pct((double)a->idle_ns, (double)a->steady_ns));
	json_dbl(j, "tracing_cost_pct", pct((double)a->trace_cost_ns, (double)a->steady_ns));
	if (has_steps(a)) /* the mean step every per-step gain is of */
		json_dbl(j, "untraced_step_ms", a->facts.untraced_step_ns / 1e6);
	else
		json_null(j, "untraced_step_ms");
	json_dbl(j, "queue_full_pct", pct((double)a->queue_full_ns, (double)a->steady_ns));
	json_obj_begin(j, "idle_by_cause_pct");
	for (int c = 0; c < IDLE_NCAUSES; c++)
		json_dbl(j, idle_cause_id(c), pct((double)a->idle_by_cause[c], (double)a->idle_ns));
	json_obj_end(j);
	json_obj_end(j);
}

/* A finding's replays beside its own (optional within version 1): a batch
 * fix's factors, C4's optimizer part alone, and a blocker's fix with those
 * it keeps from working. */
static void json_other_replays(struct json *j, const struct finding *f)
{
	if (finding_batch(f) > 0)
		json_batch(j, f);
	if (f->optim_x > 0) {
		json_obj_begin(j, "optimizer");
		json_dbl(j, "share", f->optim_share);
		json_dbl(j, "speedup", f->optim_x);
		json_obj_end(j);
	}
	if (f->tf32_x > 0) {
		json_obj_begin(j, "tf32");
		json_dbl(j, "speedup", f->tf32_x);
		json_obj_end(j);
	}
	if (f->unblock_x > 0) {
		json_obj_begin(j, "with_unblocked");
		json_str(j, "cause", f->unblock_cause);
		json_dbl(j, "speedup", f->unblock_x);
		json_range(j, "speedup_range", 1, f->unblock_lo, f->unblock_hi);
		json_obj_end(j);
	}
}

void render_json(struct json *j, const struct analysis *a)
{
	const struct trace *t = a->t;

	json_obj_begin(j, NULL);
	json_str(j, "schema", "gpuwhy.report/1");
	json_str(j, "file", trace_shown(t));
	json_bool(j, "complete", t->complete && t->verdict.kind == GW_VERDICT_OK);
	render_damage(j, &t->verdict);
	json_arr_begin(j, "warnings");
	for (size_t i = 0; i < a->warnings.n; i++)
		json_str(j, NULL, a->warnings.v[i]);
	json_arr_end(j);
	render_job(j, t);
	json_str(j, "framework", framework_id(a->framework));
	json_str(j, "framework_source", a->framework_source);
	json_str(j, "python", a->python[0] ? a->python : NULL);
	if (trace_meta(t, "cupti.path")) {
		json_obj_begin(j, "cupti");
		json_str(j, "path", trace_meta(t, "cupti.path"));
		json_str(j, "version", trace_meta(t, "cupti.version"));
		json_str(j, "source", trace_meta(t, "cupti.source"));
		json_obj_end(j);
	} else {
		json_null(j, "cupti");
	}

	json_arr_begin(j, "gpus");
	for (uint32_t d = 0; d < a->ndev && d < GW_MAX_GPUS; d++) {
		const struct device_summary *s = &a->dev[d];
		const char *name = trace_gpu_name(t, d);

		if (!s->window_ns)
			continue;
		json_obj_begin(j, NULL);
		json_u64(j, "device", d);
		json_str(j, "name", name);
		json_dbl(j, "window_s", s->window_ns / 1e9);
		json_dbl(j, "busy_pct", pct((double)s->busy_ns, (double)s->window_ns));
		json_dbl(j, "kernel_pct", pct((double)s->kernel_ns, (double)s->window_ns));
		json_dbl(j, "copy_pct", pct((double)s->copy_ns, (double)s->window_ns));
		json_dbl(j, "comm_pct", pct((double)s->comm_ns, (double)s->window_ns));
		json_dbl(j, "idle_pct", pct((double)s->idle_ns, (double)s->window_ns));
		if (a->t1 > a->t0 && !a->windows.n)
			json_dbl(j, "steady_busy_pct", pct((double)s->steady_busy_ns, (double)(a->t1 - a->t0)));
		json_u64(j, "kernels", s->nkernels);
		json_u64(j, "copies", s->ncopies);
		json_obj_end(j);
	}
	json_arr_end(j);

	json_obj_begin(j, "steps");
	json_str(j, "source", a->step_source);
	if (a->step_marker_name && a->step_marker_name < a->t->names.n) {
		/* the name as recorded, and as the terminal report shows it */
		json_str(j, "marker", a->t->names.v[a->step_marker_name]);
		json_str(j, "marker_short", strcmp(a->step_source, "nvtx")
			? analysis_kname(a, a->step_marker_name, KNAME_SHORT) : a->t->names.v[a->step_marker_name]);
	} else {
		json_str(j, "marker", a->step_marker[0] ? a->step_marker : NULL);
	}
	json_u64(j, "count", has_steps(a));
	json_u64(j, "iterations", has_steps(a) ? a->step_iterations : 0);
	json_u64(j, "iterations_if_long_every", has_steps(a) ? a->step_iterations_if_long : 0);
	json_dbl(j, "median_ms", a->step_median_ns / 1e6);
	json_dbl(j, "p95_ms", a->step_p95_ns / 1e6);
	json_dbl(j, "mean_ms", a->facts.step_mean_ns / 1e6);
	json_dbl(j, "min_ms", a->step_min_ns / 1e6);
	json_dbl(j, "max_ms", a->step_max_ns / 1e6);
	json_dbl(j, "startup_s", a->startup_ns / 1e9);
	json_u64(j, "warmup_steps", a->warmup_steps);
	json_dbl(j, "startup_compile_s", a->startup.compile_ns / 1e9);
	json_dbl(j, "startup_import_s", a->startup.import_ns / 1e9);
	json_dbl(j, "startup_first_ops_s", a->startup.first_ops_ns / 1e9);
	json_dbl(j, "startup_workers_s", a->startup.workers_ns / 1e9);
	json_u64(j, "startup_once_kernels", a->startup.once_kernels);
	json_dbl(j, "startup_once_s", a->startup.once_ns / 1e9);
	json_dbl(j, "tail_s", a->tail.ns / 1e9);
	json_dbl(j, "tail_eval_s", a->tail.eval_ns / 1e9);
	json_dbl(j, "tail_checkpoint_s", a->tail.ckpt_ns / 1e9);
	json_dbl(j, "tail_new_work_s", a->tail.loop_called_ns / 1e9);
	json_u64(j, "long_every_same_code", a->steps_long_every);
	if (a->periodic_apart >= 0)
		json_dbl(j, "long_every_stacks_apart", a->periodic_apart);
	else
		json_null(j, "long_every_stacks_apart");
	if (!strcmp(a->step_source, "auto"))
		json_u64(j, "ops_per_step", a->step_ops);
	else
		json_null(j, "ops_per_step");
	json_str(j, "confidence", a->step_user ? "user"
				  : !has_steps(a) ? "low"
				  : a->step_confidence == CONF_HIGH ? "high"
				  : a->step_confidence == CONF_MEDIUM ? "medium" : "low");
	json_str(j, "why", a->step_why);
	if (a->step_window_ns)
		json_dbl(j, "window_s", (double)a->step_window_ns / 1e9);
	json_obj_end(j);

	json_steady(j, a);

	json_combined(j, a);
	json_replay(j, a);
	json_str(j, "verdict", a->facts.verdict);
	if (a->too_little)
		json_str(j, "too_little", a->too_little_why);
	else
		json_null(j, "too_little");
	json_startup(j, a);
	json_arr_begin(j, "findings");
	for (size_t i = 0; i < a->findings.n; i++) {
		const struct finding *f = &a->findings.v[i];

		json_obj_begin(j, NULL);
		json_str(j, "rule", f->rule_id);
		json_str(j, "cause", f->cause);
		json_bool(j, "assessed", f->assessed);
		if (!f->assessed) {
			json_str(j, "why", f->why);
			json_obj_end(j);
			continue;
		}
		json_str(j, "title", f->title);
		json_str(j, "severity", severity_name(f->severity));
		json_str(j, "severity_label", severity_label(f->severity));
		json_str(j, "confidence", confidence_name(f->confidence));
		json_dbl(j, "saved_ms", f->saved_ns / 1e6);
		json_dbl(j, "saved_pct", pct(f->saved_ns, (double)a->steady_ns));
		json_dbl(j, "saved_per_step_ms", f->per_step_ns / 1e6);
		json_dbl(j, "speedup", f->speedup);
		json_range(j, "speedup_range", f->replayed, f->speedup_lo, f->speedup_hi);
		json_str(j, "gain_from", f->replayed ? "replay" : "bounds");
		json_bool(j, "capped", f->capped);
		json_dbl(j, "saved_idle_ms", f->idle_ns / 1e6);
		json_dbl(j, "saved_busy_ms", f->busy_ns / 1e6);
		json_other_replays(j, f);
		json_str(j, "evidence", f->evidence);
		json_str(j, "fix", f->fix);
		json_sites(j, a, f);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_py(j, a);
	json_obj_end(j);
}
