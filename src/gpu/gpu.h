/* GPU queries behind a small interface (nvtop-style): NVML and GPM are
 * dlopen'ed and declared by hand, so gpuwhy builds without NVIDIA headers
 * and runs without a driver. Every value has a validity bit: "not
 * supported" is never reported as 0. */
#ifndef GPUWHY_GPU_H
#define GPUWHY_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../format/format.h"

struct gpu_static {
	unsigned index;
	uint32_t valid; /* GW_GINFO_* validity bits as in the recording */
	char name[96], uuid[96], bus_id[32], sysfs_bdf[16], cpus[256];
	unsigned sm_count;
	uint64_t mem_total_mib;
	unsigned pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
	int numa_node;
	unsigned persistence;
	unsigned power_limit_mw, power_default_mw, power_max_mw, power_min_mw;
	int cc_major, cc_minor;
	/* not in the recording's gpu_info; used by `gpuwhy check` */
	int have_ecc;
	uint64_t ecc_uncorrected;
	int compute_mode, have_compute_mode;
	int mig_mode, have_mig;
	unsigned temp_slowdown_c, have_temp_slowdown;
	unsigned sm_clock_max_mhz, have_sm_clock_max;
	unsigned nprocs, have_nprocs;
};

struct gpu_sample {
	uint32_t valid; /* bit i: field i+1 of struct order below */
	unsigned sm_mhz, mem_mhz;
	uint64_t reasons;
	unsigned power_mw, temp_c;
	uint64_t mem_used_mib;
	unsigned util, mem_util;
};

struct gpm_sample {
	uint32_t valid;
	double sm_util, sm_occ, tensor, dram, fp32, fp16, fp64, pcie_tx, pcie_rx;
};

/* Loads NVML. Returns the GPU count, or -errno with why[] saying what to do. */
int gpu_open(char *why, size_t whylen);
void gpu_close(void);
int gpu_driver_version(char *buf, size_t len);
int gpu_cuda_version(int *v);
int gpu_read_static(unsigned index, struct gpu_static *s);
int gpu_read_sample(unsigned index, struct gpu_sample *s);
/* Slow (blocks ~20 ms per direction): PCIe throughput in KB/s. */
int gpu_read_pcie(unsigned index, unsigned *tx_kbs, unsigned *rx_kbs);
/* Re-reads the current PCIe link (for `gpuwhy check` under load). */
int gpu_read_link(unsigned index, unsigned *gen, unsigned *width);
/* Cumulative throttle time counters in ns (power cap, thermal...), -ENOTSUP if absent. */
int gpu_read_throttle_ns(unsigned index, uint64_t *power_ns, uint64_t *thermal_ns);

/* NVML topology level between two GPUs: 0 same board, 10 one PCIe switch,
 * 20 several switches, 30 one host bridge, 40 same NUMA node, 50 across
 * NUMA nodes (the inter-socket link). */
int gpu_topology(unsigned a, unsigned b, int *level);
/* Remapped memory rows (Ampere and newer). */
int gpu_remapped_rows(unsigned i, unsigned *corr, unsigned *unc, unsigned *pending,
		      unsigned *failure);

/* GPM: takes a sample; once two exist >= 100 ms apart, computes metrics. */
int gpm_supported(unsigned index);
int gpm_poll(unsigned index, struct gpm_sample *out); /* 1 = metrics out, 0 = first sample */

/* CUDA driver (cuda.c): SM count of the GPU at this PCI bus id, or -errno. */
int cuda_sm_count(const char *bus_id);

struct copy_bw {
	double htod_pinned, dtoh_pinned, htod_pageable, dtoh_pageable; /* GB/s */
};
/* Times synchronous copies of `bytes` between host and the GPU at bus_id;
 * calls during_load(arg) while the link is busy (to read the link state). */
int cuda_measure_bandwidth(const char *bus_id, size_t bytes, struct copy_bw *out,
			   void (*during_load)(void *), void *arg);

#endif
