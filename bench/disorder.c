/* How far out of time order the GPU operations of a recording arrive, per
 * device, in file order: the reorder window a streaming analysis would need.
 * Built and run by bench/disorder.sh. */
#include <stdio.h>

#include "analyze/analyze.h"

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct trace t;
		char err[256];
		uint64_t latest[256] = { 0 }, max_back = 0;
		size_t behind = 0, kind_n[3] = { 0 }, kind_behind[3] = { 0 };

		/* the operations in file order: held, as report --trace holds them */
		if (trace_load_flags(&t, argv[i], TRACE_KEEP_OPS, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			trace_free(&t);
			continue;
		}
		for (size_t k = 0; k < t.ops.n; k++) {
			const struct gpu_op *o = &t.ops.v[k];

			kind_n[o->kind]++;
			if (o->start < latest[o->dev]) {
				behind++;
				kind_behind[o->kind]++;
				if (latest[o->dev] - o->start > max_back)
					max_back = latest[o->dev] - o->start;
			} else {
				latest[o->dev] = o->start;
			}
		}
		printf("| %s | %zu | %zu (%.0f%%) | %.0f%% / %.0f%% / %.0f%% | %.1f ms |\n", argv[i], t.ops.n,
		       behind, t.ops.n ? 100.0 * (double)behind / (double)t.ops.n : 0,
		       kind_n[OP_KERNEL] ? 100.0 * (double)kind_behind[OP_KERNEL] / (double)kind_n[OP_KERNEL] : 0,
		       kind_n[OP_MEMCPY] ? 100.0 * (double)kind_behind[OP_MEMCPY] / (double)kind_n[OP_MEMCPY] : 0,
		       kind_n[OP_MEMSET] ? 100.0 * (double)kind_behind[OP_MEMSET] / (double)kind_n[OP_MEMSET] : 0,
		       (double)max_back / 1e6);
		trace_free(&t);
	}
	return 0;
}
