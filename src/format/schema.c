/* The record schema: the single description of every record's fields, used by
 * the writer, the reader, `gpuwhy dump` and docs/FORMAT.md. Fields may only
 * be appended to a record type (readers ignore trailing fields they do not
 * know and read missing ones as 0); anything else needs a new major version. */
#include <string.h>

#include "format.h"

#define F(n, k) { n, k }

static const struct gw_rec_desc descs[GW_REC_TYPE_MAX] = {
	[GW_REC_STRING] = { "string", 1, { F("id", 'u') } },
	[GW_REC_META] = { "meta", 0, { { 0, 0 } } },
	[GW_REC_KERNEL] = { "kernel", GW_KERNEL_NF,
		{ F("start", 't'), F("end", 'd'), F("name", 's'), F("device", 'u'),
		  F("context", 'u'), F("stream", 'u'), F("grid_x", 'u'), F("grid_y", 'u'),
		  F("grid_z", 'u'), F("block_x", 'u'), F("block_y", 'u'), F("block_z", 'u'),
		  F("correlation", 'u'), F("registers", 'u'), F("shared_bytes", 'u'),
		  F("graph_id", 'u') } },
	[GW_REC_MEMCPY] = { "memcpy", GW_MEMCPY_NF,
		{ F("start", 't'), F("end", 'd'), F("copy_kind", 'u'), F("src_kind", 'u'),
		  F("dst_kind", 'u'), F("bytes", 'u'), F("async", 'u'), F("device", 'u'),
		  F("stream", 'u'), F("correlation", 'u') } },
	[GW_REC_MEMSET] = { "memset", GW_MEMSET_NF,
		{ F("start", 't'), F("end", 'd'), F("bytes", 'u'), F("mem_kind", 'u'),
		  F("async", 'u'), F("device", 'u'), F("stream", 'u'), F("correlation", 'u') } },
	[GW_REC_SYNC] = { "sync", GW_SYNC_NF,
		{ F("start", 't'), F("end", 'd'), F("sync_type", 'u'), F("stream", 'u'),
		  F("correlation", 'u') } },
	[GW_REC_API] = { "api", GW_API_NF,
		{ F("start", 't'), F("end", 'd'), F("cbid", 'u'), F("tid", 'u'),
		  F("correlation", 'u'), F("name", 's'), F("domain", 'u'), F("py_stack", 'u') } },
	[GW_REC_MARKER] = { "marker", GW_MARKER_NF,
		{ F("ts", 't'), F("flags", 'u'), F("id", 'u'), F("name", 's'), F("tid", 'u'),
		  F("domain", 's') } },
	[GW_REC_OVERHEAD] = { "overhead", GW_OVERHEAD_NF,
		{ F("start", 't'), F("end", 'd'), F("overhead_kind", 'u') } },
	[GW_REC_DROPS] = { "drops", GW_DROPS_NF,
		{ F("ts", 't'), F("activity_dropped", 'u'), F("api_dropped", 'u'),
		  F("write_dropped", 'u') } },
	[GW_REC_INJECT_EVENT] = { "inject_event", GW_IEV_NF,
		{ F("ts", 't'), F("code", 'u'), F("detail", 's'), F("value", 'u') } },
	[GW_REC_THREAD] = { "thread", GW_THREAD_NF,
		{ F("ts", 't'), F("pid", 'u'), F("tid", 'u'), F("state", 'u'),
		  F("utime_ticks", 'u'), F("stime_ticks", 'u'), F("voluntary_csw", 'u'),
		  F("involuntary_csw", 'u'), F("run_delay_ns", 'u') } },
	[GW_REC_THREAD_NAME] = { "thread_name", GW_TNAME_NF,
		{ F("pid", 'u'), F("tid", 'u'), F("name", 's') } },
	[GW_REC_PROCESS] = { "process", GW_PROC_NF,
		{ F("ts", 't'), F("pid", 'u'), F("ppid", 'u'), F("start_ticks", 'u'),
		  F("cmdline", 's'), F("is_target", 'u') } },
	[GW_REC_PROC_IO] = { "proc_io", GW_PIO_NF,
		{ F("ts", 't'), F("pid", 'u'), F("read_bytes", 'u'), F("write_bytes", 'u'),
		  F("rchar", 'u'), F("wchar", 'u') } },
	[GW_REC_PROC_EXIT] = { "proc_exit", GW_PEXIT_NF,
		{ F("ts", 't'), F("pid", 'u'), F("status", 'i') } },
	[GW_REC_SYS_CPU] = { "sys_cpu", GW_SCPU_NF,
		{ F("ts", 't'), F("user", 'u'), F("nice", 'u'), F("system", 'u'), F("idle", 'u'),
		  F("iowait", 'u'), F("irq", 'u'), F("softirq", 'u'), F("steal", 'u'),
		  F("ncpu", 'u') } },
	[GW_REC_PROC_LIBS] = { "proc_libs", GW_PLIBS_NF,
		{ F("ts", 't'), F("pid", 'u'), F("flags", 'u'), F("python", 's') } },
	[GW_REC_GPU] = { "gpu", GW_GPU_NF,
		{ F("ts", 't'), F("gpu", 'u'), F("valid", 'u'), F("sm_clock_mhz", 'u'),
		  F("mem_clock_mhz", 'u'), F("clock_event_reasons", 'u'), F("power_mw", 'u'),
		  F("temp_c", 'u'), F("mem_used_mib", 'u'), F("util_pct", 'u'),
		  F("mem_util_pct", 'u') } },
	[GW_REC_GPM] = { "gpm", GW_GPM_NF,
		{ F("ts", 't'), F("gpu", 'u'), F("valid", 'u'), F("sm_util_x100", 'u'),
		  F("sm_occupancy_x100", 'u'), F("tensor_util_x100", 'u'),
		  F("dram_bw_util_x100", 'u'), F("fp32_util_x100", 'u'), F("fp16_util_x100", 'u'),
		  F("fp64_util_x100", 'u'), F("pcie_tx_mibs_x100", 'u'),
		  F("pcie_rx_mibs_x100", 'u') } },
	[GW_REC_PCIE] = { "pcie", GW_PCIE_NF,
		{ F("ts", 't'), F("gpu", 'u'), F("valid", 'u'), F("tx_kbs", 'u'),
		  F("rx_kbs", 'u') } },
	[GW_REC_GPU_INFO] = { "gpu_info", GW_GINFO_NF,
		{ F("gpu", 'u'), F("valid", 'u'), F("name", 's'), F("uuid", 's'), F("bus_id", 's'),
		  F("sm_count", 'u'), F("mem_total_mib", 'u'), F("pcie_gen", 'u'),
		  F("pcie_gen_max", 'u'), F("pcie_width", 'u'), F("pcie_width_max", 'u'),
		  F("numa_node", 'i'), F("persistence", 'u'), F("power_limit_mw", 'u'),
		  F("power_default_mw", 'u'), F("power_max_mw", 'u'), F("cc_major", 'u'),
		  F("cc_minor", 'u'), F("cpu_affinity", 's') } },
	[GW_REC_PY_FRAME] = { "py_frame", GW_PYF_NF,
		{ F("id", 'u'), F("file", 's'), F("function", 's'), F("line", 'u') } },
	[GW_REC_PY_STACK] = { "py_stack", GW_PYK_NF,
		{ F("id", 'u'), F("parent", 'u'), F("frame", 'u') } },
	[GW_REC_PY_SAMPLE] = { "py_sample", GW_PYS_NF,
		{ F("ts", 't'), F("pid", 'u'), F("tid", 'u'), F("stack", 'u'), F("state", 'u') } },
	[GW_REC_PY_STATUS] = { "py_status", GW_PYST_NF,
		{ F("ts", 't'), F("pid", 'u'), F("code", 'u'), F("detail", 's'), F("samples", 'u'),
		  F("dropped", 'u') } },
};

const struct gw_rec_desc *gw_rec_desc(unsigned type)
{
	if (type >= GW_REC_TYPE_MAX || !descs[type].name)
		return NULL;
	return &descs[type];
}

int gw_field_index(unsigned type, const char *name)
{
	const struct gw_rec_desc *d = gw_rec_desc(type);

	if (!d)
		return -1;
	for (unsigned i = 0; i < d->nfields; i++)
		if (strcmp(d->fields[i].name, name) == 0)
			return (int)i;
	return -1;
}
