/* Which runtime libraries (framework) each process of the tree maps: read
 * from /proc/PID/maps a bounded number of times, recorded on change. */
#ifndef GPUWHY_PROCLIBS_H
#define GPUWHY_PROCLIBS_H

#include <stdint.h>
#include <sys/types.h>

#include "record.h"

struct proc_libs_state {
	unsigned flags;   /* GW_LIB_* seen so far */
	unsigned reads;   /* maps reads done */
	uint64_t next;    /* sampler tick of the next read; 0 = at first sight */
	char pyver[16];
};

/* Called on every sampler tick for each process of the tree: reads its maps
 * when due and emits a proc_libs record when what it maps changed. */
void proc_libs_poll(struct recorder *r, struct proc_libs_state *s, pid_t pid, uint64_t tick,
		    unsigned ticks_per_s, uint64_t now);

#endif
