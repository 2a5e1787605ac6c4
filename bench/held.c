/* What the report holds, and what it only sums, for each recording given:
 * GPU operations, the most late any arrived on one GPU (the second reading's
 * window), the most one GPU's reorder buffer held at once and how many of
 * those did not fit a sorted run; thread samples and the bytes they take,
 * delta-coded; and the records that come one per operation and are only
 * summed (command-buffer-full waits, NVML samples), with what they would
 * take if held in arrays (24 and 56 bytes each).
 * Built and run by bench/held.sh. */
#include <stdio.h>

#include "analyze/analyze.h"
#include "analyze/internal.h"
#include "format/format.h"

static unsigned long long waits_in(const char *path)
{
	struct gw_reader *rd;
	struct gw_record r;
	char err[256];
	unsigned long long n = 0;

	if (gw_reader_open(&rd, path, err, sizeof(err)) < 0)
		return 0;
	while (gw_reader_next(rd, &r) == 1)
		n += r.type == GW_REC_OVERHEAD &&
		     r.v[GW_OVERHEAD_KIND] == GW_OVERHEAD_COMMAND_BUFFER_FULL;
	gw_reader_close(rd);
	return n;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct trace t;
		struct analysis a;
		char err[256];
		uint64_t late = 0;
		size_t bytes = 0;

		if (trace_load(&t, argv[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			trace_free(&t);
			continue;
		}
		analyze(&t, &a, 0);
		for (unsigned d = 0; d < GW_MAX_DEVS; d++)
			late = t.scan->late_ns[d] > late ? t.scan->late_ns[d] : late;
		for (size_t k = 0; k < t.threads.n; k++)
			bytes += t.threads.v[k].data.n + t.threads.v[k].blocks.n * sizeof(struct sample_block);
		unsigned long long w = waits_in(argv[i]);

		printf("| %s | %llu | %.1f ms | %zu | %zu | %llu | %.1f | %llu (%.1f MiB) | %llu (%.1f MiB) |\n",
		       argv[i], (unsigned long long)t.nops, (double)late / 1e6, t.scan->replay_peak,
		       t.scan->replay_inserts, (unsigned long long)t.nsamples,
		       t.nsamples ? (double)bytes / (double)t.nsamples : 0.0, w,
		       (double)w * sizeof(struct host_wait) / 1048576.0, (unsigned long long)t.ngsamples,
		       (double)t.ngsamples * sizeof(struct gpu_samp) / 1048576.0);
		analysis_free(&a);
		trace_free(&t);
	}
	return 0;
}
