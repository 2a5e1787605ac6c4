/* Collectives staged through host memory: gloo with CUDA tensors, an MPI
 * without CUDA support, Horovod's CPU operations. Each one is a copy of
 * the tensor from the GPU into pinned host memory, the reduction on the
 * CPU (over TCP or shared memory, with the other ranks), and the same
 * bytes copied back on the same stream. Between the two copies the GPU
 * has only what else is queued, and the rank's host waits for the others:
 * what looks like launch overhead is communication (docs/RULES.md,
 * section 3, C15).
 *
 * The pairs are found while the file is read (staged.c: a pinned
 * device-to-host copy and, next on its stream, a pinned host-to-device copy
 * of the same size) and kept for every process: the job report matches
 * them across ranks as it matches NCCL kernels (src/job/). The analysis counts their gaps as
 * communication only where the recording says the process is one rank of
 * several: a process alone that copies a buffer out and back (offloading
 * activations or optimizer state) leaves the same pair. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The process is one rank of several: the world size its launcher set. */
static long world_size(const struct trace *t)
{
	static const char *const keys[] = { "job.world_size", "env.WORLD_SIZE", "env.SLURM_NTASKS",
					    "env.OMPI_COMM_WORLD_SIZE", "env.PMI_SIZE" };

	for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++) {
		const char *v = trace_meta(t, keys[k]);
		char *end;
		long n = v ? strtol(v, &end, 10) : 0;

		if (v && end != v && n > 0)
			return n;
	}
	return 0;
}

/* The main process's host-staged collectives on its GPU, as sorted,
 * disjoint spans (several buckets' collectives overlap in time). */
void hostcoll_spans(struct analysis *a)
{
	const struct trace *t = a->t;

	if (world_size(t) < 2)
		return;
	for (size_t i = 0; i < t->host_colls.n; i++) {
		const struct host_coll *c = &t->host_colls.v[i];

		if (c->pid != a->main_pid || c->dev != a->main_dev || c->end <= c->start)
			continue;
		if (VEC_PUSH(a->x->comm_spans, ((struct time_span){ c->start, c->end })) < 0) {
			analysis_nomem(a, "keeping the host-staged collectives");
			return;
		}
		a->host_colls++;
		a->host_coll_ns += (double)(c->end - c->start);
	}
	a->x->comm_spans.n = spans_merge(a->x->comm_spans.v, a->x->comm_spans.n);
}

/* How much of [ga, gb) lies inside the main process's host-staged
 * collectives. */
uint64_t hostcoll_overlap(const struct analysis *a, uint64_t ga, uint64_t gb)
{
	return spans_overlap(a->x->comm_spans.v, a->x->comm_spans.n, ga, gb);
}
