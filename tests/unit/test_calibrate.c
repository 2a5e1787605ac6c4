/* The tracing-cost measurement (inject/calibrate.c), driven by a made-up
 * clock and launch (synthetic: no GPU): each launch advances the clock by
 * the cost of its state, so the figure it must find is known exactly. */
#include <errno.h>
#include <string.h>

#include "t.h"
#include "../../inject/calibrate.h"

struct fake {
	uint64_t now;
	uint64_t off_cost, on_cost; /* ns one launch takes in each state */
	int on;
	unsigned launches, switches, drains;
	unsigned fail_launch_at; /* 0: never */
	int busy;                /* drain times out */
	unsigned spike_round;    /* 1-based round whose launches take 10x (0: none) */
	unsigned round;
};

static uint64_t f_clock(void *ud)
{
	return ((struct fake *)ud)->now;
}

static int f_launch(void *ud)
{
	struct fake *f = ud;
	uint64_t c = f->on ? f->on_cost : f->off_cost;

	f->launches++;
	if (f->fail_launch_at && f->launches == f->fail_launch_at)
		return -EIO;
	f->now += f->round == f->spike_round ? 10 * c : c;
	return 0;
}

static int f_drain(void *ud, unsigned ms)
{
	struct fake *f = ud;

	(void)ms;
	f->drains++;
	f->round++;
	f->now += 1000000; /* the wait is not timed */
	return f->busy ? -ETIMEDOUT : 0;
}

static int f_tracing(void *ud, int on)
{
	struct fake *f = ud;

	f->switches++;
	f->on = on;
	return 0;
}

static int run(struct fake *f, struct gw_calib *c)
{
	struct gw_calib_ops o = { f, f_clock, f_launch, f_drain, f_tracing };

	memset(c, 0, sizeof(*c));
	return gw_calibrate(&o, c);
}

int main(void)
{
	struct gw_calib c;
	struct fake f = { .off_cost = 2500, .on_cost = 5500, .on = 1 };

	CHECK(run(&f, &c) == 0, "measured");
	CHECK(c.off_ns == 2500 && c.on_ns == 5500, "off %llu on %llu", (unsigned long long)c.off_ns,
	      (unsigned long long)c.on_ns);
	CHECK(c.cost_ns == 3000, "cost %llu ns", (unsigned long long)c.cost_ns);
	CHECK(c.rounds == GW_CALIB_ROUNDS && c.launches == GW_CALIB_LAUNCHES, "rounds %u x %u", c.rounds,
	      c.launches);
	CHECK(f.launches == GW_CALIB_WARM + 2 * GW_CALIB_ROUNDS * GW_CALIB_LAUNCHES, "%u launches",
	      f.launches);
	CHECK(f.on == 1, "tracing is left on");
	CHECK(f.drains == 2 * GW_CALIB_ROUNDS, "a drain before each round: %u", f.drains);

	/* one disturbed round (a preempted thread) does not move a median */
	f = (struct fake){ .off_cost = 2500, .on_cost = 5500, .on = 1, .spike_round = 3 };
	CHECK(run(&f, &c) == 0 && c.cost_ns == 3000, "with a spike: %llu ns", (unsigned long long)c.cost_ns);

	/* tracing that costs nothing measurable is 0, never negative */
	f = (struct fake){ .off_cost = 4000, .on_cost = 3900, .on = 1 };
	CHECK(run(&f, &c) == 0 && c.cost_ns == 0, "cheaper when traced: %llu", (unsigned long long)c.cost_ns);

	/* failures: the error comes back, and tracing is on again */
	f = (struct fake){ .off_cost = 2500, .on_cost = 5500, .on = 1,
			   .fail_launch_at = GW_CALIB_WARM + 10 };
	CHECK(run(&f, &c) == -EIO && f.on == 1, "a failed launch: on %d", f.on);
	f = (struct fake){ .off_cost = 2500, .on_cost = 5500, .on = 1, .busy = 1 };
	CHECK(run(&f, &c) == -ETIMEDOUT && f.on == 1, "a busy GPU: on %d", f.on);
	f = (struct fake){ .off_cost = 2500, .on_cost = 5500, .on = 1, .fail_launch_at = 3 };
	CHECK(run(&f, &c) == -EIO && f.switches == 0, "a failed warm-up switches nothing: %u", f.switches);
	T_DONE();
}
