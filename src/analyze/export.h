/* What the timeline export (--trace) draws that the analysis does not keep:
 * the NVML, GPM and PCIe readings as counters, each kernel's launch
 * arguments, and the launch -> kernel flows, gathered by one more reading of
 * the recording (export.c) so that the renderer only prints them. */
#ifndef GPUWHY_ANALYZE_EXPORT_H
#define GPUWHY_ANALYZE_EXPORT_H

#include <stdint.h>

#include "../util/vec.h"
#include "analyze.h"

enum trace_counter_kind { CT_SMCLK, CT_POWER, CT_UTIL, CT_SM, CT_TENSOR, CT_DRAM, CT_PCIE, CT_N };
struct trace_counter {
	uint64_t ts;
	uint8_t gpu, what; /* what: enum trace_counter_kind */
	double v, v2;      /* v2: PCIe's receive side */
};

/* A launch call and the kernel it made: indexes into trace.ops, trace.calls. */
struct trace_flow {
	uint32_t op, call;
};

/* A kernel's launch as recorded: what the timeline shows in its args. */
struct kernel_args {
	uint32_t grid[3], corr, shmem;
	uint16_t block[3], regs;
	uint8_t have;
};

struct trace_export {
	VEC(struct trace_counter) counters;
	VEC(struct trace_flow) flows;
	struct kernel_args *kargs; /* per trace.ops entry, kernels only (NULL: none, or no memory) */
	int has_pcie;
};

/* Reads the recording of t (with TRACE_KEEP_OPS: the flows and arguments
 * refer to t->ops) once more into x. 0, or -errno: what was gathered until
 * then stays in x (the timeline then goes without the rest). */
int trace_export_read(const struct trace *t, struct trace_export *x);
void trace_export_free(struct trace_export *x);

#endif
