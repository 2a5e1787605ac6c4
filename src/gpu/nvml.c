/* NVML and GPM through dlopen, with the few types declared by hand
 * (layouts from the NVML 13.0 header; docs/CUPTI.md has the facts used). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../format/format.h"
#include "../util/util.h"
#include "gpu.h"

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef void *nvmlGpmSample_t;

enum { NVML_SUCCESS = 0, NVML_ERROR_NOT_SUPPORTED = 3 };

typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned version, isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
	unsigned metricId;
	nvmlReturn_t nvmlReturn;
	double value;
	struct {
		char *shortName, *longName, *unit;
	} metricInfo;
} nvmlGpmMetric_t;

typedef struct {
	unsigned version, numMetrics;
	nvmlGpmSample_t sample1, sample2;
	nvmlGpmMetric_t metrics[210];
} nvmlGpmMetricsGet_t;

typedef struct {
	unsigned fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	union {
		double dVal;
		unsigned uiVal;
		unsigned long ulVal;
		unsigned long long ullVal;
		long long sllVal;
		int siVal;
		unsigned short usVal;
	} value;
} nvmlFieldValue_t;

#define SYMS                                                                              \
	S(nvmlInit_v2, nvmlReturn_t, (void))                                              \
	S(nvmlShutdown, nvmlReturn_t, (void))                                             \
	S(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned *))                              \
	S(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned, nvmlDevice_t *))        \
	S(nvmlSystemGetDriverVersion, nvmlReturn_t, (char *, unsigned))                   \
	S(nvmlSystemGetCudaDriverVersion_v2, nvmlReturn_t, (int *))                       \
	S(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t, char *, unsigned))              \
	S(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t, char *, unsigned))              \
	S(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t, nvmlPciInfo_t *))         \
	S(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_t *))          \
	S(nvmlDeviceGetClockInfo, nvmlReturn_t, (nvmlDevice_t, int, unsigned *))          \
	S(nvmlDeviceGetMaxClockInfo, nvmlReturn_t, (nvmlDevice_t, int, unsigned *))       \
	S(nvmlDeviceGetCurrentClocksEventReasons, nvmlReturn_t,                           \
	  (nvmlDevice_t, unsigned long long *))                                           \
	S(nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t, unsigned *))              \
	S(nvmlDeviceGetTemperature, nvmlReturn_t, (nvmlDevice_t, int, unsigned *))        \
	S(nvmlDeviceGetTemperatureThreshold, nvmlReturn_t, (nvmlDevice_t, int, unsigned *)) \
	S(nvmlDeviceGetUtilizationRates, nvmlReturn_t, (nvmlDevice_t, nvmlUtilization_t *)) \
	S(nvmlDeviceGetPcieThroughput, nvmlReturn_t, (nvmlDevice_t, int, unsigned *))     \
	S(nvmlDeviceGetCurrPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t, unsigned *))  \
	S(nvmlDeviceGetMaxPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t, unsigned *))   \
	S(nvmlDeviceGetCurrPcieLinkWidth, nvmlReturn_t, (nvmlDevice_t, unsigned *))       \
	S(nvmlDeviceGetMaxPcieLinkWidth, nvmlReturn_t, (nvmlDevice_t, unsigned *))        \
	S(nvmlDeviceGetPersistenceMode, nvmlReturn_t, (nvmlDevice_t, int *))              \
	S(nvmlDeviceGetEnforcedPowerLimit, nvmlReturn_t, (nvmlDevice_t, unsigned *))      \
	S(nvmlDeviceGetPowerManagementDefaultLimit, nvmlReturn_t, (nvmlDevice_t, unsigned *)) \
	S(nvmlDeviceGetPowerManagementLimitConstraints, nvmlReturn_t,                     \
	  (nvmlDevice_t, unsigned *, unsigned *))                                         \
	S(nvmlDeviceGetCudaComputeCapability, nvmlReturn_t, (nvmlDevice_t, int *, int *)) \
	S(nvmlDeviceGetAttributes_v2, nvmlReturn_t, (nvmlDevice_t, void *))               \
	S(nvmlDeviceGetComputeMode, nvmlReturn_t, (nvmlDevice_t, int *))                  \
	S(nvmlDeviceGetMigMode, nvmlReturn_t, (nvmlDevice_t, unsigned *, unsigned *))     \
	S(nvmlDeviceGetTotalEccErrors, nvmlReturn_t,                                      \
	  (nvmlDevice_t, int, int, unsigned long long *))                                 \
	S(nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t,                          \
	  (nvmlDevice_t, unsigned *, void *))                                             \
	S(nvmlDeviceGetFieldValues, nvmlReturn_t, (nvmlDevice_t, int, nvmlFieldValue_t *)) \
	S(nvmlDeviceGetTopologyCommonAncestor, nvmlReturn_t, (nvmlDevice_t, nvmlDevice_t, int *)) \
	S(nvmlDeviceGetRemappedRows, nvmlReturn_t,                                        \
	  (nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *))                 \
	S(nvmlGpmQueryDeviceSupport, nvmlReturn_t, (nvmlDevice_t, nvmlGpmSupport_t *))    \
	S(nvmlGpmSampleAlloc, nvmlReturn_t, (nvmlGpmSample_t *))                          \
	S(nvmlGpmSampleFree, nvmlReturn_t, (nvmlGpmSample_t))                             \
	S(nvmlGpmSampleGet, nvmlReturn_t, (nvmlDevice_t, nvmlGpmSample_t))                \
	S(nvmlGpmMetricsGet, nvmlReturn_t, (nvmlGpmMetricsGet_t *))

static struct {
	void *lib;
#define S(name, ret, args) ret(*name) args;
	SYMS
#undef S
	unsigned count;
	nvmlDevice_t dev[GW_MAX_GPUS];
	nvmlGpmSample_t gpm[GW_MAX_GPUS][2];
	int gpm_have[GW_MAX_GPUS]; /* samples taken so far (0, 1, 2+) */
	int gpm_cur[GW_MAX_GPUS];
} nv;

#define OK(call) (nv.call == NVML_SUCCESS)
#define HAVE(fn) (nv.fn != NULL)

int gpu_open(char *why, size_t whylen)
{
	unsigned n = 0;
	int r;

	if (nv.lib)
		return (int)nv.count;
	nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv.lib) {
		snprintf(why, whylen,
			 "no NVIDIA driver found (libnvidia-ml.so.1 cannot be loaded)");
		return -ENOENT;
	}
#define S(name, ret, args) nv.name = (ret(*) args)dlsym(nv.lib, #name);
	SYMS
#undef S
	if (!nv.nvmlInit_v2)
		nv.nvmlInit_v2 = (nvmlReturn_t(*)(void))dlsym(nv.lib, "nvmlInit");
	if (!nv.nvmlDeviceGetCount_v2 || !nv.nvmlDeviceGetHandleByIndex_v2 || !nv.nvmlInit_v2) {
		snprintf(why, whylen, "libnvidia-ml.so.1 lacks the basic NVML functions: "
				      "the NVIDIA driver is too old or damaged");
		goto out_close;
	}
	r = nv.nvmlInit_v2();
	if (r != NVML_SUCCESS) {
		snprintf(why, whylen,
			 "NVML did not start (error %d%s)", r,
			 r == 9 ? ", driver not loaded" : "");
		goto out_close;
	}
	if (!OK(nvmlDeviceGetCount_v2(&n)) || n == 0) {
		snprintf(why, whylen, "NVML sees no GPU");
		nv.nvmlShutdown();
		goto out_close;
	}
	if (n > GW_MAX_GPUS)
		n = GW_MAX_GPUS;
	for (unsigned i = 0; i < n; i++)
		if (!OK(nvmlDeviceGetHandleByIndex_v2(i, &nv.dev[i])))
			nv.dev[i] = NULL;
	nv.count = n;
	return (int)n;
out_close:
	dlclose(nv.lib);
	nv.lib = NULL;
	return -ENODEV;
}

void gpu_close(void)
{
	if (!nv.lib)
		return;
	for (unsigned i = 0; i < nv.count; i++)
		for (int k = 0; k < 2; k++)
			if (nv.gpm[i][k] && HAVE(nvmlGpmSampleFree))
				nv.nvmlGpmSampleFree(nv.gpm[i][k]);
	if (nv.nvmlShutdown)
		nv.nvmlShutdown();
	dlclose(nv.lib);
	memset(&nv, 0, sizeof(nv));
}

int gpu_driver_version(char *buf, size_t len)
{
	if (!nv.lib || !HAVE(nvmlSystemGetDriverVersion) ||
	    !OK(nvmlSystemGetDriverVersion(buf, (unsigned)len)))
		return -ENOTSUP;
	return 0;
}

int gpu_cuda_version(int *v)
{
	if (!nv.lib || !HAVE(nvmlSystemGetCudaDriverVersion_v2) ||
	    !OK(nvmlSystemGetCudaDriverVersion_v2(v)))
		return -ENOTSUP;
	return 0;
}

#define GI(field) GW_VALID_BIT(field, GW_GINFO_VALID)

static void sysfs_numa(struct gpu_static *s)
{
	char path[128];
	uint64_t node;
	char buf[256];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", s->sysfs_bdf);
	/* numa_node reads -1 on single-node machines: a real answer, not absence */
	if (gw_read_file(path, buf, sizeof(buf)) > 0) {
		s->numa_node = atoi(buf);
		s->valid |= GI(GW_GINFO_NUMA);
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/local_cpulist", s->sysfs_bdf);
	if (gw_read_file(path, buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = 0;
		snprintf(s->cpus, sizeof(s->cpus), "%s", buf);
		s->valid |= GI(GW_GINFO_CPUS);
	}
	(void)node;
}

int gpu_read_static(unsigned i, struct gpu_static *s)
{
	nvmlDevice_t d;
	nvmlPciInfo_t pci;
	nvmlMemory_t mem;
	unsigned u, u2;
	int x;

	memset(s, 0, sizeof(*s));
	s->index = i;
	s->numa_node = -1;
	if (!nv.lib || i >= nv.count || !nv.dev[i])
		return -ENODEV;
	d = nv.dev[i];
	if (HAVE(nvmlDeviceGetName) && OK(nvmlDeviceGetName(d, s->name, sizeof(s->name))))
		s->valid |= GI(GW_GINFO_NAME);
	if (HAVE(nvmlDeviceGetUUID) && OK(nvmlDeviceGetUUID(d, s->uuid, sizeof(s->uuid))))
		s->valid |= GI(GW_GINFO_UUID);
	if (HAVE(nvmlDeviceGetPciInfo_v3) && OK(nvmlDeviceGetPciInfo_v3(d, &pci))) {
		snprintf(s->bus_id, sizeof(s->bus_id), "%s", pci.busId);
		snprintf(s->sysfs_bdf, sizeof(s->sysfs_bdf), "%04x:%02x:%02x.0", pci.domain & 0xffff,
			 pci.bus & 0xff, pci.device & 0xff);
		s->valid |= GI(GW_GINFO_BUSID);
		sysfs_numa(s);
	}
	if (HAVE(nvmlDeviceGetAttributes_v2)) {
		unsigned attr[64] = { 0 }; /* multiprocessorCount is the first member */

		if (OK(nvmlDeviceGetAttributes_v2(d, attr)) && attr[0]) {
			s->sm_count = attr[0];
			s->valid |= GI(GW_GINFO_SMS);
		}
	}
	if (!(s->valid & GI(GW_GINFO_SMS)) && (s->valid & GI(GW_GINFO_BUSID))) {
		int sms = cuda_sm_count(s->bus_id);

		if (sms > 0) {
			s->sm_count = (unsigned)sms;
			s->valid |= GI(GW_GINFO_SMS);
		}
	}
	if (HAVE(nvmlDeviceGetMemoryInfo) && OK(nvmlDeviceGetMemoryInfo(d, &mem))) {
		s->mem_total_mib = mem.total >> 20;
		s->valid |= GI(GW_GINFO_MEM_MIB);
	}
	if (HAVE(nvmlDeviceGetCurrPcieLinkGeneration) &&
	    OK(nvmlDeviceGetCurrPcieLinkGeneration(d, &s->pcie_gen)))
		s->valid |= GI(GW_GINFO_PCIE_GEN);
	if (HAVE(nvmlDeviceGetMaxPcieLinkGeneration) &&
	    OK(nvmlDeviceGetMaxPcieLinkGeneration(d, &s->pcie_gen_max)))
		s->valid |= GI(GW_GINFO_PCIE_GEN_MAX);
	if (HAVE(nvmlDeviceGetCurrPcieLinkWidth) &&
	    OK(nvmlDeviceGetCurrPcieLinkWidth(d, &s->pcie_width)))
		s->valid |= GI(GW_GINFO_PCIE_WIDTH);
	if (HAVE(nvmlDeviceGetMaxPcieLinkWidth) &&
	    OK(nvmlDeviceGetMaxPcieLinkWidth(d, &s->pcie_width_max)))
		s->valid |= GI(GW_GINFO_PCIE_WIDTH_MAX);
	if (HAVE(nvmlDeviceGetPersistenceMode) && OK(nvmlDeviceGetPersistenceMode(d, &x))) {
		s->persistence = (unsigned)x;
		s->valid |= GI(GW_GINFO_PERSIST);
	}
	if (HAVE(nvmlDeviceGetEnforcedPowerLimit) &&
	    OK(nvmlDeviceGetEnforcedPowerLimit(d, &s->power_limit_mw)))
		s->valid |= GI(GW_GINFO_POWER_LIMIT_MW);
	if (HAVE(nvmlDeviceGetPowerManagementDefaultLimit) &&
	    OK(nvmlDeviceGetPowerManagementDefaultLimit(d, &s->power_default_mw)))
		s->valid |= GI(GW_GINFO_POWER_DEFAULT_MW);
	if (HAVE(nvmlDeviceGetPowerManagementLimitConstraints) &&
	    OK(nvmlDeviceGetPowerManagementLimitConstraints(d, &u, &u2))) {
		s->power_min_mw = u;
		s->power_max_mw = u2;
		s->valid |= GI(GW_GINFO_POWER_MAX_MW);
	}
	if (HAVE(nvmlDeviceGetCudaComputeCapability) &&
	    OK(nvmlDeviceGetCudaComputeCapability(d, &s->cc_major, &s->cc_minor)))
		s->valid |= GI(GW_GINFO_CC_MAJOR) | GI(GW_GINFO_CC_MINOR);
	/* Extra facts for `gpuwhy check`. */
	if (HAVE(nvmlDeviceGetTotalEccErrors) &&
	    OK(nvmlDeviceGetTotalEccErrors(d, 1 /* uncorrected */, 1 /* aggregate */,
					   (unsigned long long *)&s->ecc_uncorrected)))
		s->have_ecc = 1;
	if (HAVE(nvmlDeviceGetComputeMode) && OK(nvmlDeviceGetComputeMode(d, &s->compute_mode)))
		s->have_compute_mode = 1;
	if (HAVE(nvmlDeviceGetMigMode) && OK(nvmlDeviceGetMigMode(d, &u, &u2))) {
		s->mig_mode = (int)u;
		s->have_mig = 1;
	}
	if (HAVE(nvmlDeviceGetTemperatureThreshold) &&
	    OK(nvmlDeviceGetTemperatureThreshold(d, 1 /* slowdown */, &s->temp_slowdown_c)))
		s->have_temp_slowdown = 1;
	if (HAVE(nvmlDeviceGetMaxClockInfo) &&
	    OK(nvmlDeviceGetMaxClockInfo(d, 1 /* SM */, &s->sm_clock_max_mhz)))
		s->have_sm_clock_max = 1;
	if (HAVE(nvmlDeviceGetComputeRunningProcesses_v3)) {
		unsigned cnt = 0;
		int r = nv.nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, NULL);

		if (r == NVML_SUCCESS || r == 7 /* insufficient size: cnt holds the count */) {
			s->nprocs = cnt;
			s->have_nprocs = 1;
		}
	}
	return 0;
}

#define GS(bit) (1u << (bit))

int gpu_read_sample(unsigned i, struct gpu_sample *s)
{
	nvmlDevice_t d;
	nvmlMemory_t mem;
	nvmlUtilization_t ut;
	unsigned long long reasons;

	memset(s, 0, sizeof(*s));
	if (!nv.lib || i >= nv.count || !(d = nv.dev[i]))
		return -ENODEV;
	if (HAVE(nvmlDeviceGetClockInfo) && OK(nvmlDeviceGetClockInfo(d, 1, &s->sm_mhz)))
		s->valid |= GS(0);
	if (HAVE(nvmlDeviceGetClockInfo) && OK(nvmlDeviceGetClockInfo(d, 2, &s->mem_mhz)))
		s->valid |= GS(1);
	if (HAVE(nvmlDeviceGetCurrentClocksEventReasons) &&
	    OK(nvmlDeviceGetCurrentClocksEventReasons(d, &reasons))) {
		s->reasons = reasons;
		s->valid |= GS(2);
	}
	if (HAVE(nvmlDeviceGetPowerUsage) && OK(nvmlDeviceGetPowerUsage(d, &s->power_mw)))
		s->valid |= GS(3);
	if (HAVE(nvmlDeviceGetTemperature) && OK(nvmlDeviceGetTemperature(d, 0, &s->temp_c)))
		s->valid |= GS(4);
	if (HAVE(nvmlDeviceGetMemoryInfo) && OK(nvmlDeviceGetMemoryInfo(d, &mem))) {
		s->mem_used_mib = mem.used >> 20;
		s->valid |= GS(5);
	}
	if (HAVE(nvmlDeviceGetUtilizationRates) && OK(nvmlDeviceGetUtilizationRates(d, &ut))) {
		s->util = ut.gpu;
		s->mem_util = ut.memory;
		s->valid |= GS(6) | GS(7);
	}
	return 0;
}

int gpu_read_pcie(unsigned i, unsigned *tx, unsigned *rx)
{
	if (!nv.lib || i >= nv.count || !nv.dev[i] || !HAVE(nvmlDeviceGetPcieThroughput))
		return -ENOTSUP;
	if (!OK(nvmlDeviceGetPcieThroughput(nv.dev[i], 0, tx)) ||
	    !OK(nvmlDeviceGetPcieThroughput(nv.dev[i], 1, rx)))
		return -ENOTSUP;
	return 0;
}

int gpu_read_link(unsigned i, unsigned *gen, unsigned *width)
{
	if (!nv.lib || i >= nv.count || !nv.dev[i] || !HAVE(nvmlDeviceGetCurrPcieLinkGeneration) ||
	    !HAVE(nvmlDeviceGetCurrPcieLinkWidth))
		return -ENOTSUP;
	if (!OK(nvmlDeviceGetCurrPcieLinkGeneration(nv.dev[i], gen)) ||
	    !OK(nvmlDeviceGetCurrPcieLinkWidth(nv.dev[i], width)))
		return -ENOTSUP;
	return 0;
}

int gpu_read_throttle_ns(unsigned i, uint64_t *power_ns, uint64_t *thermal_ns)
{
	nvmlFieldValue_t f[3];

	if (!nv.lib || i >= nv.count || !nv.dev[i] || !HAVE(nvmlDeviceGetFieldValues))
		return -ENOTSUP;
	memset(f, 0, sizeof(f));
	f[0].fieldId = 74;  /* SW power cap ns */
	f[1].fieldId = 251; /* SW thermal ns */
	f[2].fieldId = 252; /* HW thermal ns */
	if (!OK(nvmlDeviceGetFieldValues(nv.dev[i], 3, f)) || f[0].nvmlReturn != NVML_SUCCESS)
		return -ENOTSUP;
	*power_ns = f[0].value.ullVal;
	*thermal_ns = (f[1].nvmlReturn == NVML_SUCCESS ? f[1].value.ullVal : 0) +
		      (f[2].nvmlReturn == NVML_SUCCESS ? f[2].value.ullVal : 0);
	return 0;
}

int gpm_supported(unsigned i)
{
	nvmlGpmSupport_t sup = { 1, 0 };

	if (!nv.lib || i >= nv.count || !nv.dev[i] || !HAVE(nvmlGpmQueryDeviceSupport) ||
	    !HAVE(nvmlGpmSampleAlloc) || !HAVE(nvmlGpmSampleGet) || !HAVE(nvmlGpmMetricsGet))
		return 0;
	return OK(nvmlGpmQueryDeviceSupport(nv.dev[i], &sup)) && sup.isSupportedDevice;
}

static const unsigned gpm_ids[] = { 2, 3, 5, 10, 12, 13, 11, 20, 21 };

int gpm_poll(unsigned i, struct gpm_sample *out)
{
	static nvmlGpmMetricsGet_t mg; /* large: keep it off the stack */
	int cur, prev;

	memset(out, 0, sizeof(*out));
	if (!gpm_supported(i))
		return -ENOTSUP;
	for (int k = 0; k < 2; k++)
		if (!nv.gpm[i][k] && !OK(nvmlGpmSampleAlloc(&nv.gpm[i][k])))
			return -ENOMEM;
	cur = nv.gpm_cur[i];
	if (!OK(nvmlGpmSampleGet(nv.dev[i], nv.gpm[i][cur])))
		return -EIO;
	nv.gpm_cur[i] ^= 1;
	if (nv.gpm_have[i]++ == 0)
		return 0;
	prev = cur ^ 1;
	memset(&mg, 0, sizeof(mg));
	mg.version = 1;
	mg.numMetrics = ARRAY_SIZE(gpm_ids);
	mg.sample1 = nv.gpm[i][prev];
	mg.sample2 = nv.gpm[i][cur];
	for (unsigned k = 0; k < ARRAY_SIZE(gpm_ids); k++)
		mg.metrics[k].metricId = gpm_ids[k];
	if (!OK(nvmlGpmMetricsGet(&mg)))
		return -EIO;
	double *dst[] = { &out->sm_util, &out->sm_occ, &out->tensor, &out->dram, &out->fp32,
			  &out->fp16, &out->fp64, &out->pcie_tx, &out->pcie_rx };
	for (unsigned k = 0; k < ARRAY_SIZE(gpm_ids); k++) {
		if (mg.metrics[k].nvmlReturn == NVML_SUCCESS) {
			*dst[k] = mg.metrics[k].value;
			out->valid |= 1u << k;
		}
	}
	return 1;
}

int gpu_topology(unsigned a, unsigned b, int *level)
{
	if (!nv.lib || a >= nv.count || b >= nv.count || !nv.dev[a] || !nv.dev[b] ||
	    !HAVE(nvmlDeviceGetTopologyCommonAncestor) ||
	    !OK(nvmlDeviceGetTopologyCommonAncestor(nv.dev[a], nv.dev[b], level)))
		return -ENOTSUP;
	return 0;
}

int gpu_remapped_rows(unsigned i, unsigned *corr, unsigned *unc, unsigned *pending,
		      unsigned *failure)
{
	if (!nv.lib || i >= nv.count || !nv.dev[i] || !HAVE(nvmlDeviceGetRemappedRows) ||
	    !OK(nvmlDeviceGetRemappedRows(nv.dev[i], corr, unc, pending, failure)))
		return -ENOTSUP;
	return 0;
}
