/* SYNTHETIC recordings for the unit tests: the start every one shares (a
 * finished recording of one H200-like GPU: 132 SMs, compute capability 9.0,
 * default power limit 700 W) and a kernel record. Tests name what they
 * build from these as synthetic; nothing here is a real recording. */
#ifndef GPUWHY_TEST_SYNTH_H
#define GPUWHY_TEST_SYNTH_H

#include <fcntl.h>
#include <stdint.h>

#include <string.h>

#include "analyze/analyze.h"
#include "format/format.h"

/* Opens path, writes the file header, starts w as producer pid, and the
 * metadata and GPU 0's facts (memory mem_mib, power limit limit_mw). */
static inline int synth_begin(struct gw_writer *w, const char *path, uint32_t pid, uint64_t mem_mib,
			      uint64_t limit_mw)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	gw_write_file_header(fd);
	gw_writer_init(w, fd, pid, 0, 1 << 16);
	gw_emit_meta(w, "record.complete", "1");
	gw_emit_meta(w, GW_END_KEY, "1"); /* the end record: a finished recording */
	gw_emit_meta(w, "host.clk_tck", "100");
	gw_emit_meta(w, "target.cpu_count", "8");
	uint64_t gi[GW_GINFO_NF] = { 0, 0x1ffff, gw_intern(w, "Synthetic GPU"), 0, 0, 132, mem_mib, 5, 5, 16, 16,
				     (uint64_t)-1, 1, limit_mw, 700000, 700000, 9, 0, 0 };
	gw_emit(w, GW_REC_GPU_INFO, gi, GW_GINFO_NF);
	return fd;
}

/* A kernel on device 0, stream 7, of `blocks` blocks of 256 threads. */
static inline void synth_kernel(struct gw_writer *w, uint64_t start, uint64_t dur, const char *name,
				unsigned blocks)
{
	static uint64_t corr;
	uint64_t v[GW_KERNEL_NF] = { start, start + dur, gw_intern(w, name), 0, 1, 7, blocks, 1, 1,
				     256, 1, 1, ++corr, 32, 0, 0 };

	gw_emit(w, GW_REC_KERNEL, v, GW_KERNEL_NF);
}

/* The finding of a cause that was reported (assessed, with a title), or NULL. */
static inline const struct finding *finding_of(const struct analysis *a, const char *cause)
{
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed && a->findings.v[i].title[0] &&
		    !strcmp(a->findings.v[i].cause, cause))
			return &a->findings.v[i];
	return NULL;
}

/* 1 when a reported finding reaches warning: the run is not healthy. */
static inline int has_warning_or_above(const struct analysis *a)
{
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed && a->findings.v[i].severity >= SEV_WARN)
			return 1;
	return 0;
}

#endif
