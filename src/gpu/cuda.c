/* The few CUDA driver API calls gpuwhy itself makes (dlopen'ed, declared by
 * hand): the SM count, which NVML does not report outside MIG, and waking a
 * GPU so its PCIe link trains up before `gpuwhy check` reads it. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "gpu.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;

static struct {
	void *lib;
	int ok;
	CUresult (*cuInit)(unsigned);
	CUresult (*cuDeviceGetByPCIBusId)(CUdevice *, const char *);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
} cu;

static int cuda_open(void)
{
	if (cu.lib)
		return cu.ok ? 0 : -ENODEV;
	cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cu.lib)
		return -ENOENT;
	cu.cuInit = (CUresult(*)(unsigned))dlsym(cu.lib, "cuInit");
	cu.cuDeviceGetByPCIBusId = (CUresult(*)(CUdevice *, const char *))dlsym(cu.lib, "cuDeviceGetByPCIBusId");
	cu.cuDeviceGetAttribute = (CUresult(*)(int *, int, CUdevice))dlsym(cu.lib, "cuDeviceGetAttribute");
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
