/* The timeline export's own reading of the recording (export.h): counters
 * from the NVML, GPM and PCIe samples, kernel launch arguments, and launch
 * -> kernel flows by correlation id. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "internal.h"

static uint32_t u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static uint16_t u16(uint64_t v)
{
	return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

static int push_counter(struct trace_export *x, uint64_t ts, uint64_t gpu, int what, double v, double v2)
{
	struct trace_counter c = { ts, (uint8_t)gpu, (uint8_t)what, v, v2 };

	if (!ts || gpu >= GW_MAX_GPUS)
		return 0;
	return VEC_PUSH(x->counters, c);
}

/* Launch calls by (pid, correlation id): sorted keys for a binary search. */
struct call_key {
	uint64_t key;
	uint32_t call;
};

static int cmp_call_key(const void *x, const void *y)
{
	const struct call_key *a = x, *b = y;

	return a->key < b->key ? -1 : a->key > b->key;
}

/* The kept operation a kernel record is: t->ops is in (device, start) order. */
static long find_op(const struct trace *t, uint64_t dev, uint64_t start, uint32_t pid, uint64_t stream)
{
	size_t lo = 0, hi = t->ops.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct gpu_op *m = &t->ops.v[mid];

		if (m->dev < dev || (m->dev == dev && m->start < start))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->ops.n && t->ops.v[lo].dev == dev && t->ops.v[lo].start == start; lo++)
		if (t->ops.v[lo].pid == pid && t->ops.v[lo].stream == stream &&
		    t->ops.v[lo].kind == OP_KERNEL)
			return (long)lo;
	return -1;
}

/* The launch calls' keys, sorted; *n 0 (and NULL) when there are none or no
 * memory: the flows are then left out. */
static struct call_key *launch_keys(const struct trace *t, size_t *n)
{
	struct call_key *keys;

	*n = 0;
	for (size_t i = 0; i < t->calls.n; i++)
		*n += t->calls.v[i].cls == HC_LAUNCH && t->calls.v[i].corr;
	if (!*n || !(keys = malloc(*n * sizeof(*keys)))) {
		*n = 0;
		return NULL;
	}
	*n = 0;
	for (size_t i = 0; i < t->calls.n; i++)
		if (t->calls.v[i].cls == HC_LAUNCH && t->calls.v[i].corr)
			keys[(*n)++] = (struct call_key){ (uint64_t)t->calls.v[i].pid << 32 | t->calls.v[i].corr,
							  (uint32_t)i };
	qsort(keys, *n, sizeof(*keys), cmp_call_key);
	return keys;
}

/* One sample record's counters, by its validity bits (internal.h). */
static int sample_counters(struct trace_export *x, const struct gw_record *rec)
{
	const uint64_t *v = rec->v;
	int r = 0;

	switch (rec->type) {
	case GW_REC_GPU:
		if (v[GW_GPU_VALID] & GPU_VALID_SMCLK)
			r |= push_counter(x, v[GW_GPU_TS], v[GW_GPU_INDEX], CT_SMCLK, (double)v[GW_GPU_SMCLK], 0);
		if (v[GW_GPU_VALID] & GPU_VALID_POWER)
			r |= push_counter(x, v[GW_GPU_TS], v[GW_GPU_INDEX], CT_POWER, (double)v[GW_GPU_POWER_MW] / 1e3, 0);
		if (v[GW_GPU_VALID] & GPU_VALID_UTIL)
			r |= push_counter(x, v[GW_GPU_TS], v[GW_GPU_INDEX], CT_UTIL, (double)v[GW_GPU_UTIL], 0);
		break;
	case GW_REC_GPM:
		if (v[GW_GPM_VALID] & GPM_VALID_SM_UTIL)
			r |= push_counter(x, v[GW_GPM_TS], v[GW_GPM_INDEX], CT_SM, (double)v[GW_GPM_SM_UTIL] / 100, 0);
		if (v[GW_GPM_VALID] & GPM_VALID_TENSOR)
			r |= push_counter(x, v[GW_GPM_TS], v[GW_GPM_INDEX], CT_TENSOR, (double)v[GW_GPM_TENSOR] / 100, 0);
		if (v[GW_GPM_VALID] & GPM_VALID_DRAM)
			r |= push_counter(x, v[GW_GPM_TS], v[GW_GPM_INDEX], CT_DRAM, (double)v[GW_GPM_DRAM] / 100, 0);
		break;
	case GW_REC_PCIE:
		if ((v[GW_PCIE_VALID] & PCIE_VALID_BOTH) == PCIE_VALID_BOTH) {
			r |= push_counter(x, v[GW_PCIE_TS], v[GW_PCIE_INDEX], CT_PCIE, (double)v[GW_PCIE_TX_KBS] / 1e3,
					  (double)v[GW_PCIE_RX_KBS] / 1e3);
			x->has_pcie = 1;
		}
		break;
	default:
		break;
	}
	return r;
}

/* A kernel record: its launch arguments, and the flow from its launch. */
static int kernel_record(struct trace_export *x, const struct trace *t, const struct gw_record *rec,
			 const struct call_key *keys, size_t nkeys)
{
	const uint64_t *v = rec->v;
	struct call_key k = { (uint64_t)rec->stream << 32 | (uint32_t)v[GW_KERNEL_CORR], 0 }, *hit;
	long op = find_op(t, v[GW_KERNEL_DEVICE], v[GW_KERNEL_START], rec->stream, v[GW_KERNEL_STREAM]);

	if (op >= 0 && x->kargs)
		x->kargs[op] = (struct kernel_args){
			{ u32(v[GW_KERNEL_GX]), u32(v[GW_KERNEL_GY]), u32(v[GW_KERNEL_GZ]) },
			u32(v[GW_KERNEL_CORR]), u32(v[GW_KERNEL_SHMEM]),
			{ u16(v[GW_KERNEL_BX]), u16(v[GW_KERNEL_BY]), u16(v[GW_KERNEL_BZ]) },
			u16(v[GW_KERNEL_REGS]), 1 };
	if (!nkeys || !v[GW_KERNEL_CORR] || op < 0)
		return 0;
	hit = bsearch(&k, keys, nkeys, sizeof(*keys), cmp_call_key);
	return hit ? VEC_PUSH(x->flows, ((struct trace_flow){ (uint32_t)op, hit->call })) : 0;
}

int trace_export_read(const struct trace *t, struct trace_export *x)
{
	struct call_key *keys = NULL;
	size_t nkeys = 0;
	struct gw_reader *rd;
	struct gw_record rec;
	char path[64], err[256];
	int ret = 0;

	memset(x, 0, sizeof(*x));
	for (size_t i = 0; i < t->ops.n && !x->kargs; i++)
		if (t->ops.v[i].kind == OP_KERNEL)
			x->kargs = calloc(t->ops.n, sizeof(*x->kargs)); /* none: kernels without args */
	keys = launch_keys(t, &nkeys);
	if (t->spooled)
		snprintf(path, sizeof(path), "/proc/self/fd/%d", t->spool_fd);
	if (gw_reader_open(&rd, t->spooled ? path : t->path, err, sizeof(err)) < 0) {
		ret = -EIO;
		goto out;
	}
	for (unsigned type = 0; type < GW_REC_TYPE_MAX; type++)
		gw_reader_fields(rd, type, 0);
	gw_reader_fields(rd, GW_REC_GPU, GW_GPU_NF);
	gw_reader_fields(rd, GW_REC_GPM, GW_GPM_NF);
	gw_reader_fields(rd, GW_REC_PCIE, GW_PCIE_NF);
	if (nkeys || x->kargs)
		gw_reader_fields(rd, GW_REC_KERNEL, GW_KERNEL_SHMEM + 1);
	while (gw_reader_next(rd, &rec) == 1) {
		int r = rec.type == GW_REC_KERNEL ? kernel_record(x, t, &rec, keys, nkeys) : sample_counters(x, &rec);

		if (r < 0) {
			ret = -ENOMEM;
			break;
		}
	}
	gw_reader_close(rd);
out:
	free(keys);
	return ret;
}

void trace_export_free(struct trace_export *x)
{
	free(x->counters.v);
	free(x->flows.v);
	free(x->kargs);
	memset(x, 0, sizeof(*x));
}
