/* The few CUDA driver API calls gpuwhy itself makes (dlopen'ed, declared by
 * hand): the SM count, which NVML does not report outside MIG, and the copy
 * bandwidth test of `gpuwhy check` (which also wakes the PCIe link). */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;

typedef unsigned long long CUdeviceptr;

static struct {
	void *lib;
	int ok;
	CUresult (*cuInit)(unsigned);
	CUresult (*cuDeviceGetByPCIBusId)(CUdevice *, const char *);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuMemAllocHost)(void **, size_t);
	CUresult (*cuMemFreeHost)(void *);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
} cu;

#define SYM(field, name) *(void **)&cu.field = dlsym(cu.lib, name)

static int cuda_open(void)
{
	if (cu.lib)
		return cu.ok ? 0 : -ENODEV;
	cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cu.lib)
		return -ENOENT;
	SYM(cuInit, "cuInit");
	SYM(cuDeviceGetByPCIBusId, "cuDeviceGetByPCIBusId");
	SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
	SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
	SYM(cuMemAlloc, "cuMemAlloc_v2");
	SYM(cuMemFree, "cuMemFree_v2");
	SYM(cuMemAllocHost, "cuMemAllocHost_v2");
	SYM(cuMemFreeHost, "cuMemFreeHost");
	SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
	SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	cu.ok = cu.cuInit && cu.cuDeviceGetByPCIBusId && cu.cuDeviceGetAttribute && cu.cuInit(0) == 0;
	return cu.ok ? 0 : -ENODEV;
}

int cuda_sm_count(const char *bus_id)
{
	CUdevice dev;
	int v = 0;

	if (!bus_id || !*bus_id || cuda_open() < 0)
		return -ENODEV;
	if (cu.cuDeviceGetByPCIBusId(&dev, bus_id) != 0 ||
	    cu.cuDeviceGetAttribute(&v, 16 /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */, dev) != 0)
		return -ENODEV;
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Best of `reps` timed synchronous copies, in GB/s (1e9 bytes per second). */
static double time_copies(CUdeviceptr d, void *h, size_t bytes, int htod, int reps)
{
	double best = 0;

	for (int i = 0; i < reps; i++) {
		double t0 = now_s();
		CUresult r = htod ? cu.cuMemcpyHtoD(d, h, bytes) : cu.cuMemcpyDtoH(h, d, bytes);
		double dt = now_s() - t0;

		if (r != 0)
			return -1;
		if (dt > 0 && bytes / dt / 1e9 > best)
			best = (double)bytes / dt / 1e9;
	}
	return best;
}

int cuda_measure_bandwidth(const char *bus_id, size_t bytes, struct copy_bw *out,
			   void (*during_load)(void *), void *arg)
{
	CUdevice dev;
	CUcontext ctx = NULL;
	CUdeviceptr d = 0;
	void *pinned = NULL, *pageable = NULL;
	int ret = -ENODEV;

	memset(out, 0, sizeof(*out));
	if (cuda_open() < 0 || !cu.cuDevicePrimaryCtxRetain || !cu.cuMemAlloc || !cu.cuMemcpyHtoD ||
	    !cu.cuMemcpyDtoH || !cu.cuMemAllocHost || !cu.cuCtxSetCurrent)
		return -ENOTSUP;
	if (cu.cuDeviceGetByPCIBusId(&dev, bus_id) != 0 || cu.cuDevicePrimaryCtxRetain(&ctx, dev) != 0)
		return -ENODEV;
	cu.cuCtxSetCurrent(ctx);
	if (cu.cuMemAlloc(&d, bytes) != 0 || cu.cuMemAllocHost(&pinned, bytes) != 0 ||
	    !(pageable = malloc(bytes))) {
		ret = -ENOMEM;
		goto out;
	}
	memset(pinned, 1, bytes);
	memset(pageable, 1, bytes);
	time_copies(d, pinned, bytes, 1, 1); /* warm-up: the link trains up under load */
	if (during_load)
		during_load(arg);
	out->htod_pinned = time_copies(d, pinned, bytes, 1, 5);
	out->dtoh_pinned = time_copies(d, pinned, bytes, 0, 5);
	out->htod_pageable = time_copies(d, pageable, bytes, 1, 3);
	out->dtoh_pageable = time_copies(d, pageable, bytes, 0, 3);
	ret = out->htod_pinned > 0 ? 0 : -EIO;
out:
	free(pageable);
	if (pinned)
		cu.cuMemFreeHost(pinned);
	if (d)
		cu.cuMemFree(d);
	cu.cuCtxSetCurrent(NULL);
	if (cu.cuDevicePrimaryCtxRelease)
		cu.cuDevicePrimaryCtxRelease(dev);
	return ret;
}
