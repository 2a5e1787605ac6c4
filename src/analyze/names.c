/* Names: every string of a recording interned once into trace.names (the
 * format's interning table gives the ids: 1, 2, ... are the indexes, slot 0
 * is ""), each stream's string ids resolved once to those indexes, and the
 * class of each host call name worked out once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../format/format.h"
#include "../format/intern.h"
#include "analyze.h"
#include "internal.h"

/* Stands for a name that could not be copied (out of memory: the analysis
 * fails), so that names and the interning table stay in step. */
static char lost_name[] = "";

/* string -> index (the format's interning table: its ids 1, 2, ... are the
 * indexes into trace.names, whose slot 0 is ""), and (stream,id) -> index */
struct name_table {
	struct gw_intern *strings;
	struct hmap ids; /* stream << 32 | id -> index + 1 */
	/* ids below FAST_IDS in an array (ids are small and dense, and a
	 * stream's records come in long runs): the stream that set each slot and
	 * index + 1 (0 = not cached), so that a change of stream clears nothing */
	struct fast_id {
		uint32_t stream, idx1;
	} *fast;
	size_t fast_cap;
	/* enum host_class + 1 of each host call name, 0 = not yet classified */
	uint8_t *call_cls;
	size_t call_cls_cap;
};

#define FAST_IDS 65536u

uint32_t trace_intern(struct trace *t, const char *s)
{
	int is_new = 0;
	uint64_t id;
	char *copy;

	if (!s || !*s)
		return 0;
	if (vec_grow_((void **)&t->names.v, &t->names.cap, t->names.n + 1, sizeof(*t->names.v)) < 0) {
		t->nomem = 1;
		return 0;
	}
	id = gw_intern_get(t->name_index->strings, s, &is_new);
	if (!id)
		t->nomem = 1; /* the name is lost: the analysis fails */
	if (!id || !is_new)
		return (uint32_t)id;
	copy = strdup(s);
	if (!copy) {
		t->nomem = 1;
		copy = lost_name;
	}
	t->names.v[t->names.n++] = copy; /* room made above */
	return (uint32_t)id; /* == t->names.n - 1: both grow in step */
}

/* Remembers idx for (stream, id) in the array of small ids. */
static void cache_fast(struct name_table *nt, uint32_t stream, uint64_t id, uint32_t idx)
{
	if (id >= FAST_IDS)
		return;
	if (id >= nt->fast_cap) {
		size_t ncap = nt->fast_cap ? nt->fast_cap : 256;
		struct fast_id *nf;

		while (ncap <= id)
			ncap *= 2;
		nf = realloc(nt->fast, ncap * sizeof(*nf));
		if (!nf)
			return;
		memset(nf + nt->fast_cap, 0, (ncap - nt->fast_cap) * sizeof(*nf));
		nt->fast = nf;
		nt->fast_cap = ncap;
	}
	nt->fast[id] = (struct fast_id){ stream, idx + 1 };
}

/* Global name index of string id `id` of `stream`, cached. */
uint32_t name_of(struct trace *t, struct gw_reader *rd, uint32_t stream, uint64_t id)
{
	struct name_table *nt = t->name_index;
	uint64_t key = (uint64_t)stream << 32 | (id & 0xffffffffu), v;

	if (!id)
		return 0;
	if (id < nt->fast_cap && nt->fast[id].idx1 && nt->fast[id].stream == stream)
		return nt->fast[id].idx1 - 1;
	v = hmap_get(&nt->ids, key);
	if (!v) {
		uint32_t idx = trace_intern(t, gw_reader_string(rd, stream, id));

		if (hmap_put(&nt->ids, key, (uint64_t)idx + 1) < 0)
			return idx; /* right, only not remembered */
		v = (uint64_t)idx + 1;
	}
	cache_fast(nt, stream, id, (uint32_t)(v - 1));
	return (uint32_t)(v - 1);
}

/* A STRING record redefines an id after a lost chunk: resolve it again. */
void forget_id(struct trace *t, struct gw_reader *rd, uint32_t stream, uint64_t id)
{
	struct name_table *nt = t->name_index;
	uint64_t key = (uint64_t)stream << 32 | (id & 0xffffffffu);

	if (id < nt->fast_cap && nt->fast[id].stream == stream)
		nt->fast[id].idx1 = 0;
	if (hmap_get(&nt->ids, key) &&
	    hmap_put(&nt->ids, key, (uint64_t)trace_intern(t, gw_reader_string(rd, stream, id)) + 1) < 0)
		t->nomem = 1; /* cannot happen: the key is there */
}

static uint8_t host_class_of(const char *name)
{
	if (strstr(name, "Synchronize"))
		return HC_SYNC;
	if (strstr(name, "GraphLaunch"))
		return HC_GRAPH;
	if (strstr(name, "Launch"))
		return HC_LAUNCH;
	if (strstr(name, "Memcpy"))
		return HC_MEMCPY;
	if (strstr(name, "Memset"))
		return HC_MEMSET;
	/* freeing device or pinned memory waits for the whole device
	 * (torch.cuda.empty_cache(), allocator churn); the stream-ordered
	 * frees and the release of address ranges do not */
	static const char *const frees[] = { "cudaFree", "cudaFreeHost", "cuMemFree", "cuMemFree_v2",
					     "cuMemFreeHost" };

	for (size_t i = 0; i < sizeof(frees) / sizeof(frees[0]); i++)
		if (!strcmp(name, frees[i]))
			return HC_SYNC;
	if (strstr(name, "Malloc") || strstr(name, "Free") || strstr(name, "HostAlloc"))
		return HC_ALLOC;
	return HC_OTHER;
}

/* host_class_of() once per distinct name. */
uint8_t call_class(struct trace *t, uint32_t name)
{
	struct name_table *nt = t->name_index;

	if (name >= nt->call_cls_cap) {
		size_t ncap = nt->call_cls_cap ? nt->call_cls_cap : 256;
		uint8_t *nc;

		while (ncap <= name)
			ncap *= 2;
		nc = realloc(nt->call_cls, ncap);
		if (!nc)
			return host_class_of(t->names.v[name]);
		memset(nc + nt->call_cls_cap, 0, ncap - nt->call_cls_cap);
		nt->call_cls = nc;
		nt->call_cls_cap = ncap;
	}
	if (!nt->call_cls[name])
		nt->call_cls[name] = (uint8_t)(host_class_of(t->names.v[name]) + 1);
	return (uint8_t)(nt->call_cls[name] - 1);
}

int names_init(struct trace *t)
{
	t->name_index = calloc(1, sizeof(*t->name_index));
	if (!t->name_index || !(t->name_index->strings = gw_intern_new()) ||
	    VEC_PUSH(t->names, lost_name) < 0)
		return -ENOMEM;
	return 0;
}

void names_free(struct trace *t)
{
	for (size_t i = 0; i < t->names.n; i++)
		if (t->names.v[i] != lost_name)
			free(t->names.v[i]);
	free(t->names.v);
	if (t->name_index) {
		gw_intern_free(t->name_index->strings);
		hmap_free(&t->name_index->ids);
		free(t->name_index->fast);
		free(t->name_index->call_cls);
		free(t->name_index);
	}
}
