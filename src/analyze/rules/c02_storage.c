/* C2: storage too slow: threads in uninterruptible sleep while the GPU waits. */
#include "rule.h"

RULE(storage, "C2.storage", "C2");

static void storage_eval(struct analysis *a, struct finding *f)
{
	const struct trace *t = a->t;
	double io = (double)a->idle_by_cause[IDLE_IO];
	uint64_t dsamples = 0, read = 0;
	const char *rot = trace_meta(t, "storage.rotational");
	char b[32];

	if (!t->nops || !t->nsamples) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "needs the GPU timeline and /proc samples");
		return;
	}
	if (pct(a, io) < 5)
		return;
	dsamples = a->dstate_ts.n; /* one time per sample in state D */
	for (size_t i = 0; i < t->procs.n; i++) {
		uint64_t lo = UINT64_MAX, hi = 0;

		for (size_t j = 0; j < t->io.n; j++) {
			if (t->io.v[j].pid != t->procs.v[i].pid)
				continue;
			if (t->io.v[j].read_bytes < lo)
				lo = t->io.v[j].read_bytes;
			if (t->io.v[j].read_bytes > hi)
				hi = t->io.v[j].read_bytes;
		}
		if (hi > lo)
			read += hi - lo;
	}
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_IO), .idle_ns = io });
	snprintf(f->title, sizeof(f->title), "Storage reads stall training: %.0f%% of the run waits on I/O",
		 pct(a, io));
	snprintf(f->evidence, sizeof(f->evidence),
		 "During idle intervals worth %.0f%% of the run, threads of the job sat in "
		 "uninterruptible sleep (state D, %llu samples) while the processes read %s from "
		 "storage; the working directory is on a %s device.",
		 pct(a, io), (unsigned long long)dsamples, fmt_bytes(b, sizeof(b), (double)read),
		 rot && !strcmp(rot, "1") ? "rotational (HDD)" : rot && !strcmp(rot, "0") ? "solid-state"
											   : "storage");
	snprintf(f->fix, sizeof(f->fix),
		 "Read ahead of the GPU: more loader workers with prefetching; keep the data set on "
		 "local SSD/NVMe or in RAM (page cache warm-up, /dev/shm); store it in large "
		 "sequential shards (WebDataset, TFRecord, LMDB) or pre-decoded arrays instead of "
		 "many small files.");
	f->confidence = dsamples >= 3 ? CONF_HIGH : CONF_MEDIUM;
}
