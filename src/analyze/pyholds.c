/* A thread's Python stack samples, decoded in time order, and how long each
 * holds (the sampler writes a sample when the stack or the thread's state
 * changed, and at least once a keyframe period): sample i holds over
 * [ts_i - half, min(ts_{i+1} - half, ts_i + hold)). The code sites (sites.c)
 * and the activities (activities.c) read the samples through this one
 * cursor. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int read_sample(const uint8_t **p, const uint8_t *end, uint64_t *ts, uint32_t *node,
		       uint8_t *state)
{
	uint64_t d, nd;
	size_t k;

	if (*p >= end)
		return 0;
	k = gw_get_uvarint(*p, end, &d);
	if (!k)
		return 0;
	*p += k;
	k = gw_get_uvarint(*p, end, &nd);
	if (!k)
		return 0;
	*p += k;
	*ts += d;
	*node = (uint32_t)(nd >> 2); /* the node and the state in one varint (load.c) */
	*state = (uint8_t)(nd & 3);
	return 1;
}

int py_thread_next_state(const struct py_thread *th, size_t *pos, uint64_t *ts, uint32_t *node,
			 uint8_t *state)
{
	const uint8_t *p = th->data.v + *pos;

	if (*pos == 0)
		*ts = th->first_ts;
	if (!read_sample(&p, th->data.v + th->data.n, ts, node, state))
		return 0;
	*pos = (size_t)(p - th->data.v);
	return 1;
}

int py_thread_next(const struct py_thread *th, size_t *pos, uint64_t *ts, uint32_t *node)
{
	uint8_t state;

	return py_thread_next_state(th, pos, ts, node, &state);
}

/* A positive number up to max from the recording's metadata, else dflt (a
 * damaged file's value must not make ts + hold wrap). */
static uint64_t meta_u64(const struct trace *t, const char *key, uint64_t dflt, uint64_t max)
{
	const char *v = trace_meta(t, key);
	char *end;
	unsigned long long x = v ? strtoull(v, &end, 10) : 0;

	return v && end != v && x > 0 && x <= max ? (uint64_t)x : dflt;
}

void py_hold(const struct trace *t, uint64_t *half, uint64_t *hold)
{
	uint64_t hz = meta_u64(t, "record.py_hz", 100, 1000000), slow = hz;
	/* where the sampler had to slow down, a sample may hold as long as its
	 * slowest spacing (the value is a rate with a decimal: "7.5"); but it
	 * slowed for a while (many processes at start-up, say), not all run:
	 * a sample is centred by the rate it was asked for, or every sample of
	 * the run would stand for time up to half the slowest period before
	 * it (at 12.6 Hz, 40 ms: the stacks of a step's start fill the idle
	 * gap that ends the step before) */
	const char *low = trace_meta(t, "record.py_hz_lowest");
	double lhz = low ? strtod(low, NULL) : 0;

	if (lhz >= 0.1 && lhz < (double)hz)
		slow = (uint64_t)lhz > 0 ? (uint64_t)lhz : 1;

	*half = 500000000ull / hz;
	*hold = meta_u64(t, "record.py_keyframe_ms", 1000, 3600000) * 1000000ull + 4 * (500000000ull / slow);
}

void holds_init(struct py_holds *c, const struct trace *t, const struct py_thread *th)
{
	memset(c, 0, sizeof(*c));
	c->th = th;
	py_hold(t, &c->half, &c->hold);
	c->have = py_thread_next_state(th, &c->pos, &c->ts, &c->node, &c->state);
	c->nts = c->ts;
	c->nhave = c->have && py_thread_next_state(th, &c->pos, &c->nts, &c->nnode, &c->nstate);
}

void holds_next(struct py_holds *c)
{
	c->ts = c->nts;
	c->node = c->nnode;
	c->state = c->nstate;
	c->have = c->nhave;
	c->nhave = c->have && py_thread_next_state(c->th, &c->pos, &c->nts, &c->nnode, &c->nstate);
}

uint64_t holds_start(const struct py_holds *c)
{
	return c->ts > c->half ? c->ts - c->half : 0;
}

uint64_t holds_end(const struct py_holds *c)
{
	uint64_t e = c->ts + c->hold;

	if (c->nhave && c->nts - c->half < e)
		e = c->nts > c->half ? c->nts - c->half : 0;
	return e;
}

void holds_over(struct py_holds *c, uint64_t ga, uint64_t gb, hold_fn fn, void *ctx)
{
	/* the cursor moves on to the last sample that starts by ga: queries
	 * come in time order */
	while (c->have && c->nhave && c->nts - c->half <= ga)
		holds_next(c);
	struct py_holds it = *c;

	for (; it.have; holds_next(&it)) {
		uint64_t s = holds_start(&it), e = holds_end(&it);

		if (s >= gb)
			break;
		if (s < ga)
			s = ga;
		if (e > gb)
			e = gb;
		if (e > s && it.node)
			fn(ctx, it.node, it.state, s, e);
	}
}
