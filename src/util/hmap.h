/* The one hash table: uint64_t keys to nonzero uint64_t values (callers
 * store an index + 1), open addressing with linear probing, at most half
 * full. Keys are mixed with a seed chosen per process, so that the ids a
 * crafted file picks cannot line up in one long probe run: a lookup costs
 * O(1) whatever the input. The table owns only its slots. */
#ifndef GPUWHY_HMAP_H
#define GPUWHY_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap {
	struct hmap_slot {
		uint64_t key, val; /* val 0: empty */
	} *v;
	size_t cap, n;
	uint64_t probes; /* slots passed over by hmap_put: the work done (tests bound it) */
};

/* The value of key, or 0 when absent. */
uint64_t hmap_get(const struct hmap *m, uint64_t key);
/* Sets key's value (val != 0), adding the key if new: 0, or -ENOMEM (the
 * table is unchanged). */
int hmap_put(struct hmap *m, uint64_t key, uint64_t val) __attribute__((warn_unused_result));
/* Removes key if present. */
void hmap_del(struct hmap *m, uint64_t key);
/* The longest probe run a lookup can take (tests bound it). */
size_t hmap_longest_run(const struct hmap *m);
void hmap_free(struct hmap *m);

#endif
