/* Python stacks interned as a trie (format.h, "Python stacks as a trie"):
 * frames keyed by (file, function, line), stacks by (parent, frame). Nodes
 * live in fixed blocks that never move, so the injection library's flush
 * thread can emit nodes below a count it read under the lock while an
 * application thread adds more; only the hash tables are rebuilt, and only
 * the adding side reads them. libc only (linked into the injection library). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "intern.h"

#define BLOCK 1024u

struct pt_frame {
	const char *file, *func; /* owned by strs */
	uint32_t line, fs, gs;   /* fs, gs: ids of file and func in the string table */
};
struct pt_stack {
	uint32_t parent, frame;
};

struct gw_pytrie {
	uint32_t max, nframes, nstacks;
	struct pt_frame **fblk;
	struct pt_stack **sblk;
	struct gw_intern *str;
	char **strs; /* id -> string */
	size_t nstrs, strs_cap;
	uint32_t *fhash, *shash; /* ids, 0 = empty */
	size_t fcap, scap;
	/* what the writer has had */
	const struct gw_writer *w;
	uint32_t gen, efr, est;
};

static uint64_t mix3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^ c * 0x165667b19e3779f9ull;

	h ^= h >> 31;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static struct pt_frame *frame_at(const struct gw_pytrie *t, uint32_t id)
{
	return &t->fblk[(id - 1) / BLOCK][(id - 1) % BLOCK];
}

static struct pt_stack *stack_at(const struct gw_pytrie *t, uint32_t id)
{
	return &t->sblk[(id - 1) / BLOCK][(id - 1) % BLOCK];
}

struct gw_pytrie *gw_pytrie_new(uint32_t max_nodes)
{
	struct gw_pytrie *t = calloc(1, sizeof(*t));
	uint32_t nb = (max_nodes + BLOCK - 1) / BLOCK;

	if (!t)
		return NULL;
	t->max = nb * BLOCK;
	t->fblk = calloc(nb, sizeof(*t->fblk));
	t->sblk = calloc(nb, sizeof(*t->sblk));
	t->str = gw_intern_new();
	if (!t->fblk || !t->sblk || !t->str) {
		gw_pytrie_free(t);
		return NULL;
	}
	return t;
}

void gw_pytrie_free(struct gw_pytrie *t)
{
	if (!t)
		return;
	for (uint32_t b = 0; b < t->max / BLOCK; b++) {
		if (t->fblk)
			free(t->fblk[b]);
		if (t->sblk)
			free(t->sblk[b]);
	}
	for (size_t i = 0; i < t->nstrs; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->fblk);
	free(t->sblk);
	free(t->fhash);
	free(t->shash);
	gw_intern_free(t->str);
	free(t);
}

/* The string table's id of s (1, 2, ...), keeping a copy readable by id. */
static uint32_t str_id(struct gw_pytrie *t, const char *s)
{
	int is_new = 0;
	uint64_t id = gw_intern_get(t->str, s ? s : "", &is_new);

	if (!id)
		return 0;
	if (is_new) {
		if (t->nstrs + 1 > t->strs_cap) {
			size_t ncap = t->strs_cap ? t->strs_cap * 2 : 256;
			char **n = realloc(t->strs, ncap * sizeof(*n));

			if (!n)
				return 0; /* the intern table keeps an id with no copy: never used */
			t->strs = n;
			t->strs_cap = ncap;
		}
		if (id != t->nstrs + 1)
			return 0;
		t->strs[t->nstrs] = strdup(s ? s : "");
		if (!t->strs[t->nstrs])
			return 0;
		t->nstrs++;
	}
	return id <= t->nstrs ? (uint32_t)id : 0;
}

/* Grows a table of ids to twice its size, rehashing with key(). */
static int rehash(struct gw_pytrie *t, uint32_t **tab, size_t *cap, uint32_t count,
		  uint64_t (*key)(const struct gw_pytrie *, uint32_t))
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	uint32_t *n;

	if ((count + 1) * 2 <= *cap)
		return 0;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -1;
	for (size_t i = 0; i < *cap; i++) {
		uint32_t id = (*tab)[i];

		if (!id)
			continue;
		size_t k = key(t, id) & (ncap - 1);

		while (n[k])
			k = (k + 1) & (ncap - 1);
		n[k] = id;
	}
	free(*tab);
	*tab = n;
	*cap = ncap;
	return 0;
}

static uint64_t fkey(const struct gw_pytrie *t, uint32_t id)
{
	const struct pt_frame *f = frame_at(t, id);

	return mix3(f->fs, f->gs, f->line);
}

static uint64_t skey(const struct gw_pytrie *t, uint32_t id)
{
	const struct pt_stack *s = stack_at(t, id);

	return mix3(s->parent, s->frame, 0);
}

/* A new node's slot: its block allocated on first use. */
static int reserve(void ***blk, uint32_t n, size_t size)
{
	uint32_t b = n / BLOCK;

	if (!(*blk)[b]) {
		(*blk)[b] = calloc(BLOCK, size);
		if (!(*blk)[b])
			return -1;
	}
	return 0;
}

static uint32_t frame_id(struct gw_pytrie *t, const struct gw_pyframe *in)
{
	uint32_t fs = str_id(t, in->file), gs = str_id(t, in->func);
	size_t k;

	if (!fs || !gs || rehash(t, &t->fhash, &t->fcap, t->nframes, fkey) < 0)
		return 0;
	for (k = mix3(fs, gs, in->line) & (t->fcap - 1); t->fhash[k]; k = (k + 1) & (t->fcap - 1)) {
		const struct pt_frame *f = frame_at(t, t->fhash[k]);

		if (f->fs == fs && f->gs == gs && f->line == in->line)
			return t->fhash[k];
	}
	if (t->nframes >= t->max || reserve((void ***)&t->fblk, t->nframes, sizeof(struct pt_frame)) < 0)
		return 0;
	struct pt_frame *f = &t->fblk[t->nframes / BLOCK][t->nframes % BLOCK];

	*f = (struct pt_frame){ t->strs[fs - 1], t->strs[gs - 1], in->line, fs, gs };
	t->fhash[k] = ++t->nframes;
	return t->nframes;
}

static uint32_t stack_id(struct gw_pytrie *t, uint32_t parent, uint32_t frame)
{
	size_t k;

	if (rehash(t, &t->shash, &t->scap, t->nstacks, skey) < 0)
		return 0;
	for (k = mix3(parent, frame, 0) & (t->scap - 1); t->shash[k]; k = (k + 1) & (t->scap - 1)) {
		const struct pt_stack *s = stack_at(t, t->shash[k]);

		if (s->parent == parent && s->frame == frame)
			return t->shash[k];
	}
	if (t->nstacks >= t->max || reserve((void ***)&t->sblk, t->nstacks, sizeof(struct pt_stack)) < 0)
		return 0;
	t->sblk[t->nstacks / BLOCK][t->nstacks % BLOCK] = (struct pt_stack){ parent, frame };
	t->shash[k] = ++t->nstacks;
	return t->nstacks;
}

uint32_t gw_pytrie_stack(struct gw_pytrie *t, const struct gw_pyframe *frames, int n)
{
	uint32_t node = 0;

	if (!t)
		return 0;
	for (int i = n - 1; i >= 0; i--) { /* outermost first: the root's side */
		uint32_t f = frame_id(t, &frames[i]);

		if (!f)
			return 0;
		node = stack_id(t, node, f);
		if (!node)
			return 0;
	}
	return node;
}

void gw_pytrie_counts(const struct gw_pytrie *t, uint32_t *nframes, uint32_t *nstacks)
{
	*nframes = t ? t->nframes : 0;
	*nstacks = t ? t->nstacks : 0;
}

void gw_pytrie_emit_upto(struct gw_pytrie *t, struct gw_writer *w, uint32_t nframes,
			 uint32_t nstacks)
{
	if (!t)
		return;
	if (t->w != w || t->gen != w->intern_gen) {
		/* a new writer, or its definitions were lost: all again */
		t->w = w;
		t->gen = w->intern_gen;
		t->efr = t->est = 0;
	}
	for (; t->efr < nframes; t->efr++) {
		const struct pt_frame *f = frame_at(t, t->efr + 1);
		uint64_t v[GW_PYF_NF] = { t->efr + 1, gw_intern(w, f->file), gw_intern(w, f->func),
					  f->line };

		gw_emit(w, GW_REC_PY_FRAME, v, GW_PYF_NF);
	}
	for (; t->est < nstacks; t->est++) {
		const struct pt_stack *s = stack_at(t, t->est + 1);
		uint64_t v[GW_PYK_NF] = { t->est + 1, s->parent, s->frame };

		gw_emit(w, GW_REC_PY_STACK, v, GW_PYK_NF);
	}
	if (t->gen != w->intern_gen) /* a chunk was lost while emitting */
		t->efr = t->est = 0, t->gen = w->intern_gen;
}

void gw_pytrie_emit(struct gw_pytrie *t, struct gw_writer *w)
{
	uint32_t nf, ns;

	gw_pytrie_counts(t, &nf, &ns);
	gw_pytrie_emit_upto(t, w, nf, ns);
}

enum gw_py_status gw_py_status_of(int err)
{
	switch (err) {
	case -ENOENT: return GW_PY_NOT_PYTHON;
	case -ENOTSUP: return GW_PY_UNSUPPORTED;
	case -EPERM: case -EACCES: return GW_PY_DENIED;
	case -ENOEXEC: return GW_PY_NO_SYMBOLS;
	default: return GW_PY_ERROR;
	}
}
