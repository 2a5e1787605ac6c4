/* Collectives staged through host memory, as the recording is read (part
 * of the trace model): each one is a pinned device-to-host copy and, next
 * on its stream, a pinned host-to-device copy of the same size
 * (hostcoll.c says what they are and how the analysis uses them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The scan keeps the pinned copies each way (few: a job's pinned copies
 * are its input batches and these pairs); records come in the order their
 * buffers were handed over, not in stream order, so the pairs are found
 * once the whole file is read. */
void hostcoll_scan(struct trace *t, const struct gpu_op *o)
{
	struct op_scan *s = t->scan;
	int d2h = o->copy_kind == COPY_DTOH && o->dst_kind == MEM_PINNED;
	int h2d = o->copy_kind == COPY_HTOD && o->src_kind == MEM_PINNED;

	if (o->kind != OP_MEMCPY || !(d2h || h2d))
		return;
	struct staged_copy c = { o->start, o->end, o->bytes, o->pid, o->stream, o->dev, (uint8_t)d2h };

	if (VEC_PUSH(s->staged, c) < 0)
		t->nomem = 1;
}

static int by_stream_start(const void *x, const void *y)
{
	const struct staged_copy *p = x, *q = y;

	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	if (p->stream != q->stream)
		return p->stream < q->stream ? -1 : 1;
	return p->start < q->start ? -1 : p->start > q->start;
}

/* In stream order, a copy out followed by the copy back of the same bytes. */
void hostcoll_pair(struct trace *t)
{
	struct op_scan *s = t->scan;
	struct staged_copy *v = s->staged.v;

	if (s->staged.n > 1)
		qsort(v, s->staged.n, sizeof(*v), by_stream_start);
	for (size_t i = 1; i < s->staged.n; i++) {
		const struct staged_copy *o = &v[i - 1], *b = &v[i];

		if (!o->out || b->out || o->pid != b->pid || o->stream != b->stream || o->bytes != b->bytes ||
		    b->start < o->end)
			continue;
		struct host_coll c = { o->end, b->start, b->bytes, b->pid, b->stream, b->dev };

		if (VEC_PUSH(t->host_colls, c) < 0) {
			t->nomem = 1;
			break;
		}
	}
	free(s->staged.v);
	memset(&s->staged, 0, sizeof(s->staged));
}
