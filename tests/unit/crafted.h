/* SYNTHETIC crafted recordings: small files shaped to make an analysis that
 * is not near-linear slow, or make it allocate far beyond the file's size.
 * Built with the writer; nothing here is a real recording. Shared by
 * tests/unit/test_crafted.c (operation counts, allocation bounds) and
 * bench/crafted.c (timings for bench/RESULTS.md). */
#ifndef GPUWHY_TEST_CRAFTED_H
#define GPUWHY_TEST_CRAFTED_H

#include <stdint.h>
#include <unistd.h>

#include "synth.h"

enum crafted_kind {
	CRAFTED_DESCENDING, /* n kernels of one stream, each starting before the one read before it */
	CRAFTED_STREAMS,    /* n process streams of 100 kernels each, over the same time span */
	CRAFTED_PROCESSES,  /* n process records, each of its own pid, with a thread sample and
			     * an I/O sample */
	CRAFTED_PY_IDS,     /* n streams each defining a Python frame and stack of id 2^26 */
	CRAFTED_MARKERS,    /* n NVTX ranges all open at once, closed in the order opened */
	CRAFTED_SYNCS,      /* n synchronizations and n kernels, no host calls */
	CRAFTED_NKINDS
};
static const char *const crafted_names[CRAFTED_NKINDS] = { "descending", "streams", "processes",
							    "py_ids", "markers", "syncs" };

/* A kernel of process stream `pid` (its writer), on device 0. */
static inline void crafted_kernel(struct gw_writer *w, uint64_t start, uint64_t dur, uint32_t stream)
{
	uint64_t v[GW_KERNEL_NF] = { start, start + dur, gw_intern(w, "crafted_kernel"), 0, 1, stream, 1, 1,
				     1, 128, 1, 1, 0, 32, 0, 0 };

	gw_emit(w, GW_REC_KERNEL, v, GW_KERNEL_NF);
}

/* Writes crafted recording `kind` of size n to path: 0, or -1. */
static inline int crafted_write(const char *path, enum crafted_kind kind, unsigned n)
{
	const uint64_t t0 = 1000000000ull;
	struct gw_writer w, s;
	int fd = synth_begin(&w, path, 100, 81559, 700000);

	if (fd < 0)
		return -1;
	switch (kind) {
	case CRAFTED_DESCENDING:
		for (unsigned i = 0; i < n; i++)
			crafted_kernel(&w, t0 + (uint64_t)(n - i) * 10000, 5000, 7);
		break;
	case CRAFTED_STREAMS:
		gw_flush(&w);
		for (unsigned p = 0; p < n; p++) {
			gw_writer_init(&s, fd, 1000 + p, 0, 1 << 16);
			for (unsigned i = 0; i < 100; i++)
				crafted_kernel(&s, t0 + (uint64_t)i * 10000 + p, 5000, 7);
			gw_flush(&s);
			gw_writer_free(&s);
		}
		break;
	case CRAFTED_PROCESSES:
		for (unsigned p = 0; p < n; p++) {
			uint64_t pr[GW_PROC_NF] = { t0 + p, 1000 + p, 100, t0, gw_intern(&w, "crafted"), 0 };
			uint64_t th[GW_THREAD_NF] = { t0 + p, 1000 + p, 1000 + p, 'S', 1, 1, 0, 0, 0 };
			uint64_t io[GW_PIO_NF] = { t0 + p, 1000 + p, 4096, 0, 0, 0 };

			gw_emit(&w, GW_REC_PROCESS, pr, GW_PROC_NF);
			gw_emit(&w, GW_REC_THREAD, th, GW_THREAD_NF);
			gw_emit(&w, GW_REC_PROC_IO, io, GW_PIO_NF);
		}
		for (unsigned i = 0; i < 100; i++)
			crafted_kernel(&w, t0 + (uint64_t)i * 10000, 5000, 7);
		break;
	case CRAFTED_PY_IDS:
		gw_flush(&w);
		for (unsigned p = 0; p < n; p++) {
			uint64_t id = 1u << 26;

			gw_writer_init(&s, fd, 1000 + p, 0, 1 << 16);
			uint64_t f[GW_PYF_NF] = { id, gw_intern(&s, "crafted.py"), gw_intern(&s, "f"), 1 };
			uint64_t k[GW_PYK_NF] = { id, 0, id };

			gw_emit(&s, GW_REC_PY_FRAME, f, GW_PYF_NF);
			gw_emit(&s, GW_REC_PY_STACK, k, GW_PYK_NF);
			gw_flush(&s);
			gw_writer_free(&s);
		}
		for (unsigned i = 0; i < 100; i++)
			crafted_kernel(&w, t0 + (uint64_t)i * 10000, 5000, 7);
		break;
	case CRAFTED_MARKERS:
		for (unsigned e = 0; e < 2; e++)
			for (unsigned i = 0; i < n; i++) {
				uint64_t m[GW_MARKER_NF] = { t0 + (uint64_t)e * 1000000000ull + i, e ? 4 : 2, i + 1,
							     gw_intern(&w, "crafted_range"), 100, 0 };

				gw_emit(&w, GW_REC_MARKER, m, GW_MARKER_NF);
			}
		for (unsigned i = 0; i < 100; i++)
			crafted_kernel(&w, t0 + (uint64_t)i * 10000, 5000, 7);
		break;
	case CRAFTED_SYNCS:
		for (unsigned i = 0; i < n; i++) {
			uint64_t s[GW_SYNC_NF] = { t0 + (uint64_t)i * 10000 + 5000, t0 + (uint64_t)i * 10000 + 6000, 1,
						   7, 0 };

			crafted_kernel(&w, t0 + (uint64_t)i * 10000, 4000, 7);
			gw_emit(&w, GW_REC_SYNC, s, GW_SYNC_NF);
		}
		break;
	default:
		break;
	}
	gw_flush(&w);
	gw_writer_free(&w);
	return close(fd);
}

#endif
