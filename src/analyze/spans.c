/* Sets of time spans: sorted and made disjoint once, then asked how much of
 * an interval they cover (host-staged collectives, the times another thread
 * of the training process ran Python). */
#include <stdlib.h>

#include "internal.h"

static int by_start(const void *x, const void *y)
{
	const struct time_span *p = x, *q = y;

	return p->start < q->start ? -1 : p->start > q->start;
}

size_t spans_merge(struct time_span *v, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), by_start);
	for (size_t i = 1; i < n; i++) {
		if (v[i].start <= v[k].end) {
			if (v[i].end > v[k].end)
				v[k].end = v[i].end;
		} else {
			v[++k] = v[i];
		}
	}
	return k + 1;
}

uint64_t spans_overlap(const struct time_span *v, size_t n, uint64_t ga, uint64_t gb)
{
	size_t lo = 0, hi = n;
	uint64_t in = 0;

	while (lo < hi) { /* the first span ending after ga */
		size_t mid = (lo + hi) / 2;

		if (v[mid].end <= ga)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < n && v[i].start < gb; i++) {
		uint64_t s = v[i].start > ga ? v[i].start : ga, e = v[i].end < gb ? v[i].end : gb;

		if (e > s)
			in += e - s;
	}
	return in;
}
