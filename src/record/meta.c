/* Static metadata: what the analysis needs to know about the machine, the
 * GPUs and the target, stored as meta records and gpu_info records.
 * Environment variables are stored only when allowlisted (format/envlist.c):
 * the rest may hold secrets. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../gpu/gpu.h"
#include "../util/util.h"
#include "ranks.h"
#include "record.h"

extern char **environ;

static void meta_u64(struct recorder *r, const char *key, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	rec_meta(r, key, buf);
}

/* The block device under a path: "rotational" = 1 for spinning disks. */
static void record_storage(struct recorder *r, const char *path)
{
	struct stat st;
	char sys[128], buf[64];
	uint64_t rot;

	if (stat(path, &st) < 0)
		return;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/queue/rotational", major(st.st_dev),
		 minor(st.st_dev));
	if (gw_read_u64(sys, &rot) < 0) {
		/* a partition: the queue belongs to the parent device */
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/../queue/rotational",
			 major(st.st_dev), minor(st.st_dev));
		if (gw_read_u64(sys, &rot) < 0) {
			rec_meta(r, "storage.rotational", "unknown");
			return;
		}
	}
	snprintf(buf, sizeof(buf), "%u:%u", major(st.st_dev), minor(st.st_dev));
	rec_meta(r, "storage.device", buf);
	meta_u64(r, "storage.rotational", rot);
}

static void cpuset_string(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;
	int start = -1;

	buf[0] = 0;
	for (int c = 0; c <= CPU_SETSIZE; c++) {
		int in = c < CPU_SETSIZE && CPU_ISSET(c, set);

		if (in && start < 0)
			start = c;
		if (!in && start >= 0) {
			int n = (start == c - 1) ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", start)
						 : snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "",
							    start, c - 1);
			if (n < 0 || (size_t)n >= len - off)
				return;
			off += (size_t)n;
			start = -1;
		}
	}
}

void meta_record_host(struct recorder *r, char **argv)
{
	struct utsname u;
	char buf[4096];
	cpu_set_t set;
	int nodes = 0;

	rec_meta(r, "format.clock", "CLOCK_MONOTONIC ns");
	rec_meta(r, "gpuwhy.version", GPUWHY_VERSION);
	meta_u64(r, "record.start_ns", gw_now_ns());
	meta_u64(r, "record.start_unix", (uint64_t)time(NULL));
	meta_record_rank(r);
	meta_u64(r, "record.proc_hz", r->opts->proc_hz);
	meta_u64(r, "record.gpu_hz", r->opts->gpu_hz);
	if (r->opts->duty_period_ms) {
		meta_u64(r, "record.duty_on_ms", r->opts->duty_on_ms);
		meta_u64(r, "record.duty_period_ms", r->opts->duty_period_ms);
	}
	if (uname(&u) == 0) {
		rec_meta(r, "host.kernel", u.release);
		rec_meta(r, "host.machine", u.machine);
	}
	meta_u64(r, "host.cpus", (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
	/* the CPU's model: two recordings of one job on two hosts issue work at
	 * different speeds (gpuwhy diff says so) */
	if (gw_read_file("/proc/cpuinfo", buf, sizeof(buf)) > 0) {
		/* "model name\t: ..." at a line's start, its value up to the line's end */
		char *m = !strncmp(buf, "model name", 10) ? buf : strstr(buf, "\nmodel name");
		char *end = m ? m + 1 + strcspn(m + 1, "\n") : NULL, *v = m ? memchr(m, ':', (size_t)(end - m)) : NULL;

		if (v) {
			v += 1 + strspn(v + 1, " \t");
			while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
				end--;
			*end = 0;
			if (*v)
				rec_meta(r, "host.cpu_model", v);
		}
	}
	meta_u64(r, "host.mem_bytes",
		 (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE));
	meta_u64(r, "host.clk_tck", (uint64_t)sysconf(_SC_CLK_TCK));
	for (int n = 0; n < 64; n++) {
		char path[96], key[48];

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", n);
		if (gw_read_file(path, buf, sizeof(buf)) <= 0)
			continue;
		buf[strcspn(buf, "\n")] = 0;
		snprintf(key, sizeof(key), "host.numa.node%d.cpus", n);
		rec_meta(r, key, buf);
		nodes++;
	}
	meta_u64(r, "host.numa_nodes", (uint64_t)(nodes ? nodes : 1));
	if (r->opts->redact) {
		rec_meta(r, "target.cmdline", "[redacted]");
	} else {
		/* secret-looking values out (format/envlist.c) */
		size_t n = gw_argv_scrubbed(argv, NULL, 0) + 1;
		char *cmd = malloc(n);

		if (cmd)
			gw_argv_scrubbed(argv, cmd, n);
		rec_meta(r, "target.cmdline", cmd ? cmd : "[out of memory]");
		free(cmd);
	}
	if (getcwd(buf, sizeof(buf))) {
		rec_meta(r, "target.cwd", r->opts->redact ? "[redacted]" : buf);
		record_storage(r, buf);
	}
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		cpuset_string(&set, buf, sizeof(buf));
		rec_meta(r, "target.cpu_affinity", buf);
		meta_u64(r, "target.cpu_count", (uint64_t)CPU_COUNT(&set));
	}
	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256], key[300];

		if (!eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		memcpy(name, *e, (size_t)(eq - *e));
		name[eq - *e] = 0;
		if (!gw_env_keep(name, eq + 1))
			continue;
		snprintf(key, sizeof(key), "env.%s", name);
		rec_meta(r, key, eq + 1);
	}
}

void meta_record_gpus(struct recorder *r)
{
	char buf[128];
	int cv;

	if (gpu_driver_version(buf, sizeof(buf)) == 0)
		rec_meta(r, "gpu.driver", buf);
	if (gpu_cuda_version(&cv) == 0) {
		snprintf(buf, sizeof(buf), "%d.%d", cv / 1000, (cv % 1000) / 10);
		rec_meta(r, "gpu.cuda", buf);
	}
	meta_u64(r, "gpu.count", r->ngpus);
	for (unsigned i = 0; i < r->ngpus; i++) {
		struct gpu_static s;

		if (gpu_read_static(i, &s) < 0)
			continue;
		uint64_t v[GW_GINFO_NF] = {
			i, s.valid, rec_intern(r, s.name), rec_intern(r, s.uuid),
			rec_intern(r, s.bus_id), s.sm_count, s.mem_total_mib, s.pcie_gen,
			s.pcie_gen_max, s.pcie_width, s.pcie_width_max, (uint64_t)(int64_t)s.numa_node,
			s.persistence, s.power_limit_mw, s.power_default_mw, s.power_max_mw,
			(uint64_t)s.cc_major, (uint64_t)s.cc_minor, rec_intern(r, s.cpus),
		};
		rec_emit(r, GW_REC_GPU_INFO, v, GW_GINFO_NF);
	}
}
