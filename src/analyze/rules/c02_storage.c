/* C2: storage too slow: the GPU waits while the job reads from storage. */
#include "rule.h"

RULE(storage, "C2.storage", "C2", NEED_TIMELINE | NEED_PROC, 40, ADV_C2_STORAGE);

static void storage_eval(struct analysis *a, struct finding *f)
{
	const struct trace *t = a->t;
	double io = (double)a->idle_by_cause[IDLE_IO];
	const char *rot = trace_meta(t, "storage.rotational");
	char b[32], b2[32];

	/* storage_io gaps are those with reads (attribute.c), so bytes were read */
	if (pct(a, io) < FINDING_MIN_PCT || a->io_read_bytes <= 0)
		return;
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_IO), .idle_ns = io });
	snprintf(f->title, sizeof(f->title), "Storage reads stall training: %.0f%% of the run waits on I/O",
		 pct(a, io));
	snprintf(f->evidence, sizeof(f->evidence),
		 "During idle intervals worth %.0f%% of the run (%llu of them) the job's processes read "
		 "%s from storage (read_bytes; %s per step)%s; the working directory is on a %s device.",
		 pct(a, io), (unsigned long long)a->gaps_by_cause[IDLE_IO],
		 fmt_bytes(b, sizeof(b), a->io_read_bytes),
		 fmt_bytes(b2, sizeof(b2), a->steps.n ? a->io_read_bytes / (double)a->steps.n : a->io_read_bytes),
		 a->io_gaps_dstate ? ", threads in uninterruptible sleep (state D) waiting on them" : "",
		 rot && !strcmp(rot, "1") ? "rotational (HDD)" : rot && !strcmp(rot, "0") ? "solid-state"
											   : "storage");
	if (a->load_io_ns > 0)
		ADDF(f->evidence, " Of that idle, %.0f%% of the run came while the training thread itself "
		     "loaded files in its loop (a serialization library's read: np.load, torch.load, "
		     "pickle.load) and its process read from storage, not from the page cache: the step "
		     "waits for the disk, however much of the load the thread spent on a CPU.",
		     pct(a, (double)a->load_io_ns));
	if (a->read_site_io_ns > 0) {
		double disk = 0, held = 0;

		for (size_t i = 0; i < a->sites.n; i++)
			if (a->sites.v[i].reads_storage) {
				disk += a->sites.v[i].disk_ns;
				held += a->sites.v[i].held_ns;
			}
		ADDF(f->evidence, " Of that idle, %.0f%% of the run came while the training thread was at "
		     "lines of its input code where it waited on storage (state D) for %.0f%% of its time "
		     "there: their time is reading, on a CPU (the kernel's read path) or not, whatever its "
		     "samples in each gap caught.",
		     pct(a, (double)a->read_site_io_ns), held > 0 ? 100 * disk / held : 0);
	}
	SET_FIX(a, f, ADV_C2_STORAGE);
	f->confidence = a->io_gaps_dstate ? CONF_HIGH : CONF_MEDIUM;
}
