/* The /proc samples of each thread, kept delta-coded: about 7 bytes a sample
 * instead of the 40 of struct tsample. A busy thread is sampled 50 times a
 * second, so over a long run they are what the report holds most of. Every
 * SAMPLE_BLOCK-th sample is kept whole (the index a search goes through),
 * the others as varints of their differences to the one before. The sampler
 * writes each thread's samples in time order; a sample that goes back in
 * time (only a damaged file has one) is read at its predecessor's time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Appends the varints of a sample's differences to the one before. */
static int put_deltas(struct thread_samples *th, const uint64_t *v, unsigned n)
{
	uint8_t b[5 * 10];
	size_t len = 0;

	for (unsigned k = 0; k < n; k++)
		len += gw_put_uvarint(b + len, v[k]);
	if (vec_grow_((void **)&th->data.v, &th->data.cap, th->data.n + len, 1) < 0)
		return -ENOMEM;
	memcpy(th->data.v + th->data.n, b, len);
	th->data.n += len;
	return 0;
}

/* The thread with this tid, created at its first sample (threads are found
 * by tid alone, as a thread id names one thread at a time). */
static struct thread_samples *thread_of(struct trace *t, uint32_t pid, uint32_t tid)
{
	uint64_t i = hmap_get(&t->sample_index, tid);
	struct thread_samples th = { .pid = pid, .tid = tid };

	if (i)
		return &t->threads.v[i - 1];
	if (VEC_PUSH(t->threads, th) < 0)
		return NULL;
	if (hmap_put(&t->sample_index, tid, t->threads.n) < 0) {
		t->threads.n--;
		return NULL;
	}
	return &t->threads.v[t->threads.n - 1];
}

int samples_add(struct trace *t, const struct tsample *s)
{
	struct thread_samples *th = thread_of(t, s->pid, s->tid);
	struct tsample c = *s;

	if (!th)
		return -ENOMEM;
	if (th->n && c.ts < th->last.ts) {
		c.ts = th->last.ts;
		t->samples_back_in_time++;
	}
	if (th->n % SAMPLE_BLOCK == 0) {
		struct sample_block b = { c.ts, c.cpu_ticks, c.ivcsw, (uint32_t)th->data.n, c.state,
					  c.run_delay };

		if (th->data.n > UINT32_MAX || VEC_PUSH(th->blocks, b) < 0)
			return -ENOMEM;
	} else {
		/* the state's low bit says whether the run-queue wait changed: a
		 * sleeping thread's does not, and recordings without it have none,
		 * so it costs nothing there. The state letter (R, S, D, t...) is
		 * xored with 0x40 to stay under 64, so that the pair fits one byte. */
		int64_t rd = (int64_t)(c.run_delay - th->last.run_delay);
		uint64_t d[5] = { c.ts - th->last.ts,
				  gw_zigzag((int64_t)(c.cpu_ticks - th->last.cpu_ticks)),
				  gw_zigzag((int64_t)c.ivcsw - (int64_t)th->last.ivcsw),
				  (uint64_t)((uint8_t)c.state ^ 0x40) << 1 | (rd != 0), gw_zigzag(rd) };

		if (put_deltas(th, d, rd != 0 ? 5 : 4) < 0)
			return -ENOMEM;
	}
	th->last = c;
	th->n++;
	t->nsamples++;
	return 0;
}

void sample_at(struct sample_iter *it, const struct thread_samples *th, size_t i)
{
	const struct sample_block *b = &th->blocks.v[i / SAMPLE_BLOCK];

	it->th = th;
	it->i = i - i % SAMPLE_BLOCK;
	it->s = (struct tsample){ .ts = b->ts, .cpu_ticks = b->cpu_ticks, .pid = th->pid,
				  .tid = th->tid, .ivcsw = b->ivcsw, .state = b->state,
				  .run_delay = b->run_delay };
	it->p = th->data.v ? th->data.v + b->off : NULL; /* no differences stored yet */
	while (it->i < i)
		sample_next(it);
}

int sample_next(struct sample_iter *it)
{
	const struct thread_samples *th = it->th;
	const uint8_t *end = th->data.v ? th->data.v + th->data.n : NULL;
	uint64_t d[5];

	if (it->i + 1 >= th->n) {
		it->i = th->n;
		return 0;
	}
	if ((it->i + 1) % SAMPLE_BLOCK == 0) {
		sample_at(it, th, it->i + 1);
		return 1;
	}
	for (int k = 0; k < 4; k++) /* written by samples_add: never short */
		it->p += gw_get_uvarint(it->p, end, &d[k]);
	it->s.ts += d[0];
	it->s.cpu_ticks += (uint64_t)gw_unzigzag(d[1]);
	it->s.ivcsw = (uint32_t)((int64_t)it->s.ivcsw + gw_unzigzag(d[2]));
	it->s.state = (char)((d[3] >> 1) ^ 0x40);
	if (d[3] & 1) {
		it->p += gw_get_uvarint(it->p, end, &d[4]);
		it->s.run_delay += (uint64_t)gw_unzigzag(d[4]);
	}
	it->i++;
	return 1;
}

size_t samples_block(const struct thread_samples *th, size_t b, struct tsample *out)
{
	struct sample_iter it;
	size_t n = 0;

	if (b >= th->blocks.n)
		return 0;
	sample_at(&it, th, b * SAMPLE_BLOCK);
	do
		out[n++] = it.s;
	while (n < SAMPLE_BLOCK && sample_next(&it));
	return n;
}

void samples_free(struct trace *t)
{
	for (size_t i = 0; i < t->threads.n; i++) {
		free(t->threads.v[i].blocks.v);
		free(t->threads.v[i].data.v);
	}
	free(t->threads.v);
	hmap_free(&t->sample_index);
}
