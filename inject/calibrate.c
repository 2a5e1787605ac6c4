/* The tracing-cost measurement of calibrate.h. Rounds alternate so that a
 * drift of the machine (another process, clocks) falls on both states
 * alike; medians keep one round disturbed by a page fault or a preempted
 * thread out of the figure. */
#include "calibrate.h"

#include <errno.h>
#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One round: GW_CALIB_LAUNCHES launches, timed without the drain before it. */
static int round_ns(const struct gw_calib_ops *o, uint64_t *per_launch)
{
	uint64_t t0, t1;
	int err = o->drain(o->ud, GW_CALIB_DRAIN_MS);

	if (err)
		return err;
	t0 = o->clock(o->ud);
	for (unsigned i = 0; i < GW_CALIB_LAUNCHES; i++)
		if ((err = o->launch(o->ud)) != 0)
			return err;
	t1 = o->clock(o->ud);
	*per_launch = t1 > t0 ? (t1 - t0) / GW_CALIB_LAUNCHES : 0;
	return 0;
}

int gw_calibrate(const struct gw_calib_ops *o, struct gw_calib *out)
{
	uint64_t off[GW_CALIB_ROUNDS], on[GW_CALIB_ROUNDS];
	int err = 0;

	for (unsigned i = 0; i < GW_CALIB_WARM; i++)
		if ((err = o->launch(o->ud)) != 0)
			return err;
	for (unsigned r = 0; r < GW_CALIB_ROUNDS; r++) {
		if ((err = o->tracing(o->ud, 0)) != 0 || (err = round_ns(o, &off[r])) != 0)
			goto restore;
		if ((err = o->tracing(o->ud, 1)) != 0 || (err = round_ns(o, &on[r])) != 0)
			goto restore;
	}
	out->off_ns = median(off, GW_CALIB_ROUNDS);
	out->on_ns = median(on, GW_CALIB_ROUNDS);
	out->cost_ns = out->on_ns > out->off_ns ? out->on_ns - out->off_ns : 0;
	out->rounds = GW_CALIB_ROUNDS;
	out->launches = GW_CALIB_LAUNCHES;
	return 0;
restore:
	o->tracing(o->ud, 1);
	return err;
}
