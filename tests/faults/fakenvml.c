/* A stand-in libnvidia-ml.so.1 (put its folder on LD_LIBRARY_PATH) for the
 * tests of `gpuwhy check` on a machine without a GPU: two synthetic GPUs with
 * fixed values. GPU 0 is healthy; GPU 1 has every fault the GPU checks know
 * (link trained down, power capped, clock events, hot, ECC errors, a pending
 * row remap, MIG on, other processes), so that every verdict and every text
 * of the GPU checks is printed (FAKE_NVML_ONE_GPU=1: GPU 0 alone). Functions
 * it lacks are absent, as in an old driver. Built by tests/cli/test_check.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *dev_t_;
enum { OK = 0, BAD = 2 };

static const char *const names[2] = { "Synthetic GPU A", "Synthetic GPU B" };

#define IDX(d) ((int)(long)(d) - 1)

int nvmlInit_v2(void) { return OK; }
int nvmlShutdown(void) { return OK; }
int nvmlDeviceGetCount_v2(unsigned *n)
{
	const char *one = getenv("FAKE_NVML_ONE_GPU");

	*n = one && *one ? 1 : 2;
	return OK;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, dev_t_ *d)
{
	if (i > 1)
		return BAD;
	*d = (dev_t_)(long)(i + 1);
	return OK;
}
int nvmlSystemGetDriverVersion(char *b, unsigned n) { snprintf(b, n, "999.1.2"); return OK; }
int nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 13000; return OK; }
int nvmlDeviceGetName(dev_t_ d, char *b, unsigned n) { snprintf(b, n, "%s", names[IDX(d)]); return OK; }
int nvmlDeviceGetAttributes_v2(dev_t_ d, unsigned *attr) { (void)d; attr[0] = 132; return OK; }

struct mem { unsigned long long total, free, used; };
int nvmlDeviceGetMemoryInfo(dev_t_ d, struct mem *m)
{
	(void)d;
	m->total = 143771ull << 20;
	m->used = 1024ull << 20;
	m->free = m->total - m->used;
	return OK;
}
int nvmlDeviceGetClockInfo(dev_t_ d, int type, unsigned *mhz) { *mhz = type == 1 ? (IDX(d) ? 1200 : 1980) : 2619; return OK; }
int nvmlDeviceGetMaxClockInfo(dev_t_ d, int type, unsigned *mhz) { (void)d; (void)type; *mhz = 1980; return OK; }
int nvmlDeviceGetCurrentClocksEventReasons(dev_t_ d, unsigned long long *r)
{
	*r = IDX(d) ? 0x4 | 0x20 : 0; /* SW power cap, SW thermal slowdown */
	return OK;
}
int nvmlDeviceGetPowerUsage(dev_t_ d, unsigned *mw) { (void)d; *mw = 350000; return OK; }
int nvmlDeviceGetTemperature(dev_t_ d, int s, unsigned *c) { (void)s; *c = IDX(d) ? 88 : 45; return OK; }
int nvmlDeviceGetTemperatureThreshold(dev_t_ d, int t, unsigned *c) { (void)d; (void)t; *c = 90; return OK; }
int nvmlDeviceGetCurrPcieLinkGeneration(dev_t_ d, unsigned *g) { *g = IDX(d) ? 3 : 5; return OK; }
int nvmlDeviceGetMaxPcieLinkGeneration(dev_t_ d, unsigned *g) { (void)d; *g = 5; return OK; }
int nvmlDeviceGetCurrPcieLinkWidth(dev_t_ d, unsigned *w) { *w = IDX(d) ? 8 : 16; return OK; }
int nvmlDeviceGetMaxPcieLinkWidth(dev_t_ d, unsigned *w) { (void)d; *w = 16; return OK; }
int nvmlDeviceGetPersistenceMode(dev_t_ d, int *on) { *on = !IDX(d); return OK; }
int nvmlDeviceGetEnforcedPowerLimit(dev_t_ d, unsigned *mw) { *mw = IDX(d) ? 400000 : 700000; return OK; }
int nvmlDeviceGetPowerManagementDefaultLimit(dev_t_ d, unsigned *mw) { (void)d; *mw = 700000; return OK; }
int nvmlDeviceGetPowerManagementLimitConstraints(dev_t_ d, unsigned *lo, unsigned *hi)
{
	(void)d;
	*lo = 200000;
	*hi = 700000;
	return OK;
}
int nvmlDeviceGetComputeMode(dev_t_ d, int *m) { (void)d; *m = 0; return OK; }
int nvmlDeviceGetMigMode(dev_t_ d, unsigned *cur, unsigned *pend) { *cur = *pend = (unsigned)IDX(d); return OK; }
int nvmlDeviceGetTotalEccErrors(dev_t_ d, int t, int c, unsigned long long *n) { (void)t; (void)c; *n = IDX(d) ? 3 : 0; return OK; }
int nvmlDeviceGetComputeRunningProcesses_v3(dev_t_ d, unsigned *n, void *v) { (void)v; *n = IDX(d) ? 2 : 0; return OK; }

struct field {
	unsigned id, scope;
	long long ts, lat;
	int type, ret;
	union { double d; unsigned long long ull; } v;
};
int nvmlDeviceGetFieldValues(dev_t_ d, int n, struct field *f)
{
	for (int k = 0; k < n; k++) {
		f[k].ret = OK;
		f[k].v.ull = IDX(d) ? 2500000000ull * (unsigned long long)(k + 1) : 0;
	}
	return OK;
}
int nvmlDeviceGetTopologyCommonAncestor(dev_t_ a, dev_t_ b, int *level) { (void)a; (void)b; *level = 50; return OK; }
int nvmlDeviceGetRemappedRows(dev_t_ d, unsigned *corr, unsigned *unc, unsigned *pend, unsigned *fail)
{
	*corr = IDX(d) ? 4 : 0;
	*unc = IDX(d) ? 1 : 0;
	*pend = (unsigned)IDX(d);
	*fail = 0;
	return OK;
}
