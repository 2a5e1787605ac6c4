/* The second reading of the GPU timeline: load.c reads the operations
 * again (trace_read_ops()), timeline.c names them as the first reading did,
 * and each device's go through its reorder buffer (ordered.c), whose window
 * is the lateness the first reading measured, so that the sinks get them in
 * time order. */
#include <errno.h>
#include <stdio.h>

#include "internal.h"

struct replay {
	struct trace *t;
	struct reorder ro[GW_MAX_GPUS];
	uint32_t only_dev;
	const struct op_sinks *k;
	int err;
};

static void replay_op(void *ctx, const struct gpu_op *op)
{
	struct replay *r = ctx;
	struct gpu_op o = *op;

	if (!r->k->op || o.dev >= GW_MAX_GPUS || (r->only_dev != UINT32_MAX && o.dev != r->only_dev))
		return;
	timeline_name_op(r->t, &o);
	if (reorder_push(&r->ro[o.dev], &o, r->k->op, r->k->ctx) < 0)
		r->err = -ENOMEM;
}

static void replay_issued(void *ctx, const struct gpu_op *op, uint32_t corr)
{
	struct replay *r = ctx;
	struct gpu_op o = *op;

	if (o.dev >= GW_MAX_GPUS || (r->only_dev != UINT32_MAX && o.dev != r->only_dev))
		return;
	timeline_name_op(r->t, &o);
	r->k->issued(r->k->ctx, &o, corr);
}

static void replay_wait(void *ctx, const struct host_wait *w)
{
	const struct replay *r = ctx;

	r->k->wait(r->k->ctx, w);
}

static void replay_gpm(void *ctx, const struct gpm_samp *g)
{
	const struct replay *r = ctx;

	r->k->gpm(r->k->ctx, g);
}

int timeline_replay(struct trace *t, uint32_t only_dev, const struct op_sinks *k, char *err,
		    size_t errlen)
{
	struct op_scan *s = t->scan;
	struct replay r = { .t = t, .only_dev = only_dev, .k = k };
	struct op_sinks rs = { .op = replay_op, .wait = k->wait ? replay_wait : NULL,
			       .gpm = k->gpm ? replay_gpm : NULL, .ctx = &r,
			       .issued = k->issued ? replay_issued : NULL };
	int ret = 0;

	for (unsigned d = 0; d < GW_MAX_GPUS; d++)
		r.ro[d].window = s->late_ns[d];
	for (size_t i = 0; i < s->nfiles && ret == 0; i++)
		ret = trace_read_ops(t, s->files[i].path, s->files[i].records, &rs, err, errlen);
	for (unsigned d = 0; d < GW_MAX_GPUS; d++) {
		if (k->op)
			reorder_flush(&r.ro[d], k->op, k->ctx);
		if (r.ro[d].peak > s->replay_peak)
			s->replay_peak = r.ro[d].peak;
		s->replay_inserts += r.ro[d].inserts;
		s->replay_sifts += r.ro[d].sifts;
		if (r.ro[d].violated && ret == 0) {
			snprintf(err, errlen, "%s changed while it was being analyzed", t->path);
			ret = -EAGAIN;
		}
		reorder_free(&r.ro[d]);
	}
	if (ret == 0 && r.err) {
		snprintf(err, errlen, "out of memory while reordering the GPU timeline");
		ret = r.err;
	}
	return ret;
}
