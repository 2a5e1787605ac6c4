/* C13: power or thermal limits slow the clocks while the GPU works.
 *
 * A warning only where something is wrong: a power limit set below the
 * default, thermal slowdown, a hardware slowdown or the power brake. The
 * software power cap alone, at the default limit, is the GPU doing the most
 * work it may under sustained full load: said as information, with no gain
 * (no change to the program or the machine's settings removes it). */
#include "rule.h"

RULE(throttle, "C13.power-thermal", "C13", 0, SETTLE_NO_IDLE, ADV_C13_POWER);

/* Time the clock limits in n of the busy samples cost: the busy time in
 * those samples x (1 - their mean clock / the best clock). */
static double clock_loss(const struct analysis *a, uint64_t n, double mhz, uint64_t busy, unsigned max_clk)
{
	if (!n || !busy || !max_clk)
		return 0;
	return (double)a->busy_ns * ((double)n / (double)busy) * (1 - mhz / (double)n / max_clk);
}

static void throttle_eval(struct analysis *a, struct finding *f)
{
	const struct trace *t = a->t;
	const struct gpu_info *g = NULL;
	const struct gpu_sample_totals *s = a->main_dev < GW_MAX_GPUS ? &t->gsum[a->main_dev] : NULL;
	uint64_t busy = s ? s->busy : 0, thr = s ? s->throttled : 0, bad = s ? s->faulted : 0;
	unsigned max_clk = s ? s->max_sm_mhz : 0;
	int lowered = 0, hot = 0, capped;

	for (size_t i = 0; i < t->gpus.n; i++)
		if (t->gpus.v[i].index == a->main_dev || t->gpus.n == 1)
			g = &t->gpus.v[i];
	if (!t->ngsamples) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "no NVML samples in the recording");
		return;
	}
	f->evidence[0] = 0;
	/* 5% of the busy samples: a limit hit now and then is noise */
	capped = busy && thr * 100 >= C13_LIMITED_PCT * busy && max_clk;
	hot = busy && bad * 100 >= C13_LIMITED_PCT * busy && max_clk;
	lowered = g && g->power_default_mw && g->power_limit_mw && g->power_limit_mw + 1000 < g->power_default_mw;

	if (!hot && !lowered) {
		if (!capped)
			return;
		/* the software power cap at the default limit: expected, no fix */
		snprintf(f->title, sizeof(f->title),
			 "The GPU ran at its power limit %.0f%% of busy time: expected under sustained full load",
			 100.0 * thr / busy);
		ADDF(f->evidence, "In %.0f%% of the NVML samples taken while the GPU was busy the driver "
		     "reported the software power cap (SwPowerCap) and nothing worse; SM clock then averaged "
		     "%.0f MHz against %u MHz seen at best. ", 100.0 * thr / busy, s->throttled_mhz / thr,
		     max_clk);
		if (g && g->power_limit_mw)
			ADDF(f->evidence, "The power limit is the card's default (%.0f W): this is the GPU "
			     "doing the most work it may, not a defect; no gain is claimed.",
			     g->power_limit_mw / 1e3);
		else
			ADDF(f->evidence, "The power limit is unknown; none of the samples show thermal or "
			     "hardware slowdown, so no gain is claimed.");
		snprintf(f->fix, sizeof(f->fix), "Nothing to fix: at the default limit the power cap "
			 "keeps the card within its rated power. Less energy per step (lower precision, "
			 "fused kernels) does more work under the same cap.");
		f->confidence = busy >= 20 ? CONF_MEDIUM : CONF_LOW;
		return;
	}
	double saved = 0;

	if (hot) {
		saved = clock_loss(a, bad, s->faulted_mhz, busy, max_clk);
		ADDF(f->evidence, "In %.0f%% of the NVML samples taken while the GPU was busy the driver "
		     "reported thermal or hardware slowdown (SW/HW thermal, HW slowdown or the power "
		     "brake); SM clock then averaged %.0f MHz against %u MHz seen at best. ",
		     100.0 * bad / busy, s->faulted_mhz / bad, max_clk);
	}
	if (lowered) {
		ADDF(f->evidence, "Power limit set to %.0f W, below the default %.0f W. ",
		     g->power_limit_mw / 1e3, g->power_default_mw / 1e3);
		/* the lowered limit is what the power cap enforces: every limited sample counts */
		if (capped) {
			double all = clock_loss(a, thr, s->throttled_mhz, busy, max_clk);

			ADDF(f->evidence, "The GPU was held at that limit in %.0f%% of busy samples (SM clock "
			     "%.0f MHz). ", 100.0 * thr / busy, s->throttled_mhz / thr);
			saved = all > saved ? all : saved;
		}
	}
	f->min_severity = SEV_WARN;
	/* lower clocks stretch every kernel */
	finding_set_gain(a, f, &(struct gain){ .busy_set = BUSY_ALL, .busy_ns = saved,
					    .busy_of_ns = (double)a->busy_ns });
	snprintf(f->title, sizeof(f->title), "%s lower the GPU clocks",
		 hot && lowered ? "Heat or hardware slowdown, and a lowered power limit,"
		 : hot ? "Thermal or hardware slowdown limits" : "A power limit below the default");
	SET_FIX(a, f, ADV_C13_POWER);
	f->confidence = busy >= 20 ? CONF_HIGH : CONF_LOW;
}
