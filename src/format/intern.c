/* Open-addressing hash table of owned strings. */
#include <stdlib.h>
#include <string.h>

#include "intern.h"

struct slot {
	char *s;
	uint64_t hash;
	uint64_t id;
};

struct gw_intern {
	struct slot *slots;
	size_t cap, count;
	uint64_t next_id;
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

struct gw_intern *gw_intern_new(void)
{
	struct gw_intern *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = 256;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	t->next_id = 1;
	return t;
}

void gw_intern_clear(struct gw_intern *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++) {
		free(t->slots[i].s);
		t->slots[i].s = NULL;
	}
	t->count = 0;
	t->next_id = 1;
}

void gw_intern_free(struct gw_intern *t)
{
	if (!t)
		return;
	gw_intern_clear(t);
	free(t->slots);
	free(t);
}

static int grow(struct gw_intern *t)
{
	size_t ncap = t->cap * 2;
	struct slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i].s)
			continue;
		size_t j = t->slots[i].hash & (ncap - 1);

		while (ns[j].s)
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

uint64_t gw_intern_get(struct gw_intern *t, const char *s, int *is_new)
{
	uint64_t h = fnv1a(s);
	size_t i;

	*is_new = 0;
	if ((t->count + 1) * 2 > t->cap && grow(t) < 0)
		return 0;
	for (i = h & (t->cap - 1); t->slots[i].s; i = (i + 1) & (t->cap - 1))
		if (t->slots[i].hash == h && strcmp(t->slots[i].s, s) == 0)
			return t->slots[i].id;
	t->slots[i].s = strdup(s);
	if (!t->slots[i].s)
		return 0;
	t->slots[i].hash = h;
	t->slots[i].id = t->next_id++;
	t->count++;
	*is_new = 1;
	return t->slots[i].id;
}
