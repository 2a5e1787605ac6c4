/* Time lookups of the passes: the step a time falls in, and, for
 * duty-cycled recordings, the traced windows of the main process, from its
 * trace-on and trace-off events. Untraced time is neither busy nor idle:
 * every figure leaves it out. */
#include <stdint.h>

#include "analyze.h"
#include "internal.h"

uint32_t step_at(const struct analysis *a, uint64_t t, size_t *cursor)
{
	size_t i = *cursor;

	while (i < a->steps.n && a->steps.v[i].end <= t)
		i++;
	*cursor = i;
	return i < a->steps.n && a->steps.v[i].start <= t ? (uint32_t)i : UINT32_MAX;
}

/* Traced windows from the injection library's duty-cycle events. */
void build_windows(struct analysis *a)
{
	const struct trace *t = a->t;
	uint64_t on = 0;
	int open = 0, any_off = 0;

	for (size_t i = 0; i < t->events.n; i++)
		any_off |= t->events.v[i].pid == a->main_pid && t->events.v[i].code == GW_IEV_TRACE_OFF;
	if (!any_off)
		return;
	for (size_t i = 0; i < t->events.n; i++) {
		const struct inject_event *e = &t->events.v[i];

		if (e->pid != a->main_pid)
			continue;
		if ((e->code == GW_IEV_TRACE_ON || e->code == GW_IEV_STARTED) && !open) {
			on = e->ts;
			open = 1;
		} else if (e->code == GW_IEV_TRACE_OFF && open) {
			if (VEC_PUSH(a->windows, on) < 0 || VEC_PUSH(a->windows, e->ts) < 0)
				analysis_nomem(a, "listing the traced windows");
			open = 0;
		}
	}
	if (open && (VEC_PUSH(a->windows, on) < 0 || VEC_PUSH(a->windows, UINT64_MAX) < 0))
		analysis_nomem(a, "listing the traced windows");
}

uint64_t traced_until(const struct analysis *a, uint64_t t)
{
	if (!a->windows.n)
		return UINT64_MAX;
	for (size_t i = 0; i + 1 < a->windows.n; i += 2)
		if (t >= a->windows.v[i] && t < a->windows.v[i + 1])
			return a->windows.v[i + 1];
	return 0;
}

int traced(const struct analysis *a, uint64_t t0, uint64_t t1)
{
	uint64_t end = traced_until(a, t0);

	return end && t1 <= end;
}
