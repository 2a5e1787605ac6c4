/* C13: power or thermal limits slow the clocks while the GPU works. */
#include "rule.h"

RULE(throttle, "C13.power-thermal", "C13");

static void throttle_eval(struct analysis *a, struct finding *f)
{
	const struct trace *t = a->t;
	const struct gpu_info *g = NULL;
	const struct gpu_sample_totals *s = a->main_dev < 16 ? &t->gsum[a->main_dev] : NULL;
	uint64_t busy = s ? s->busy : 0, thr = s ? s->throttled : 0;
	unsigned max_clk = s ? s->max_sm_mhz : 0;
	double clk_thr = s ? s->throttled_mhz : 0;
	int problems = 0;

	for (size_t i = 0; i < t->gpus.n; i++)
		if (t->gpus.v[i].index == a->main_dev || t->gpus.n == 1)
			g = &t->gpus.v[i];
	if (!t->ngsamples) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "no NVML samples in the recording");
		return;
	}
	f->evidence[0] = 0;
	double saved = 0;

	if (busy && thr * 20 >= busy && max_clk) {
		double mean = clk_thr / thr;

		saved = (double)a->busy_ns * ((double)thr / busy) * (1 - mean / max_clk);
		ADDF(f->evidence, "In %.0f%% of the NVML samples taken while the GPU was busy the "
		     "driver reported power or thermal clock limits; SM clock then averaged %.0f MHz "
		     "against %u MHz seen at best. ", 100.0 * thr / busy, mean, max_clk);
		problems++;
	}
	if (g && g->power_default_mw && g->power_limit_mw &&
	    g->power_limit_mw + 1000 < g->power_default_mw) {
		ADDF(f->evidence, "Power limit set to %.0f W, below the default %.0f W. ",
		     g->power_limit_mw / 1e3, g->power_default_mw / 1e3);
		problems++;
	}
	if (!problems)
		return;
	f->min_severity = SEV_WARN;
	/* lower clocks stretch every kernel */
	finding_set_gain(a, f, &(struct gain){ .busy_set = BUSY_ALL, .busy_ns = saved,
					    .busy_of_ns = (double)a->busy_ns });
	snprintf(f->title, sizeof(f->title), "Power or thermal limits lower the GPU clocks");
	SET_FIX(a, f, ADV_C13_POWER);
	f->confidence = busy >= 20 ? CONF_HIGH : CONF_LOW;
}
