/* Open addressing, linear probing, at most half full (hmap.h). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "hmap.h"

static uint64_t seed;

/* murmur3's 64-bit finalizer over the seeded key: every bit of the key
 * reaches the low bits the table uses. */
static uint64_t mix(uint64_t k)
{
	k ^= seed;
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

uint64_t hmap_get(const struct hmap *m, uint64_t key)
{
	if (!m->n)
		return 0;
	for (size_t i = mix(key) & (m->cap - 1); m->v[i].val; i = (i + 1) & (m->cap - 1))
		if (m->v[i].key == key)
			return m->v[i].val;
	return 0;
}

static int grow(struct hmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	struct hmap_slot *nv = calloc(ncap, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	if (!seed) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = ((uint64_t)ts.tv_nsec << 20 ^ (uint64_t)ts.tv_sec ^ (uintptr_t)nv) | 1;
	}
	for (size_t j = 0; j < m->cap; j++) {
		if (!m->v[j].val)
			continue;
		size_t k = mix(m->v[j].key) & (ncap - 1);

		while (nv[k].val)
			k = (k + 1) & (ncap - 1);
		nv[k] = m->v[j];
	}
	free(m->v);
	m->v = nv;
	m->cap = ncap;
	return 0;
}

int hmap_put(struct hmap *m, uint64_t key, uint64_t val)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	for (i = mix(key) & (m->cap - 1); m->v[i].val; i = (i + 1) & (m->cap - 1), m->probes++)
		if (m->v[i].key == key) {
			m->v[i].val = val;
			return 0;
		}
	m->v[i].key = key;
	m->v[i].val = val;
	m->n++;
	return 0;
}

void hmap_del(struct hmap *m, uint64_t key)
{
	size_t i, j;

	if (!m->n)
		return;
	for (i = mix(key) & (m->cap - 1); m->v[i].val && m->v[i].key != key; i = (i + 1) & (m->cap - 1))
		;
	if (!m->v[i].val)
		return;
	/* backward shift: move up each later entry of the run that may sit in
	 * the freed slot, so that no lookup stops early at a hole */
	for (j = (i + 1) & (m->cap - 1); m->v[j].val; j = (j + 1) & (m->cap - 1)) {
		size_t home = mix(m->v[j].key) & (m->cap - 1);

		/* j's home lies cyclically in (i, j]: it must stay */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		m->v[i] = m->v[j];
		i = j;
	}
	m->v[i].val = 0;
	m->n--;
}

size_t hmap_longest_run(const struct hmap *m)
{
	size_t best = 0, run = 0;

	/* twice round, so that a run wrapping past the end is counted whole */
	for (size_t j = 0; j < 2 * m->cap; j++) {
		run = m->v[j & (m->cap - 1)].val ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best > m->cap ? m->cap : best;
}

void hmap_free(struct hmap *m)
{
	free(m->v);
	m->v = NULL;
	m->cap = m->n = 0;
	m->probes = 0;
}
