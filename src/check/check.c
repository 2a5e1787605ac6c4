/* gpuwhy check: reads and measures the machine, never changes a setting. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../gpu/gpu.h"
#include "../procfs/procfs.h"
#include "../util/escape.h"
#include "../util/json.h"
#include "../util/util.h"
#include "check.h"

struct check *check_add(struct check_list *l, const char *scope, const char *name)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 32;
		struct check *nv = realloc(l->v, ncap * sizeof(*nv));

		if (!nv) {
			l->err = -ENOMEM;
			memset(&l->spare, 0, sizeof(l->spare));
			return &l->spare;
		}
		l->v = nv;
		l->cap = ncap;
	}
	struct check *c = &l->v[l->n++];

	memset(c, 0, sizeof(*c));
	snprintf(c->scope, sizeof(c->scope), "%s", scope);
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->status = CK_NA;
	return c;
}

const char *check_status_name(enum check_status s)
{
	static const char *const n[] = { "pass", "warn", "fail", "not-assessed" };

	return s <= CK_NA ? n[s] : "?";
}

#define SET(field, ...) snprintf(c->field, sizeof(c->field), __VA_ARGS__)

static void first_line(char *s)
{
	s[strcspn(s, "\n")] = 0;
}

static void host_checks(struct check_list *l)
{
	char buf[4096], nodes[1024] = "";
	struct check *c;
	int nn = 0;

	for (int n = 0; n < 64; n++) {
		char path[96];

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", n);
		if (gw_read_file(path, buf, sizeof(buf)) <= 0)
			continue;
		first_line(buf);
		snprintf(nodes + strlen(nodes), sizeof(nodes) - strlen(nodes), "%snode%d: %.100s", nn ? ", " : "",
			 n, buf);
		nn++;
	}
	c = check_add(l, "host", "cpu.cores");
	c->status = CK_PASS;
	SET(measured, "%ld cores online, %d NUMA node%s%s%s%s", sysconf(_SC_NPROCESSORS_ONLN), nn ? nn : 1,
	    nn > 1 ? "s" : "", nn ? " (" : "", nodes, nn ? ")" : "");
	SET(why, "Data loading, Python and launch overhead all run on these cores; with several "
		 "NUMA nodes, the job should run on the node of its GPU.");

	c = check_add(l, "host", "cpu.governor");
	if (gw_read_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", buf, sizeof(buf)) > 0) {
		first_line(buf);
		c->status = verdict_governor(buf);
		SET(measured, "%.150s", buf);
	} else {
		SET(measured, "no cpufreq interface (a VM, or fixed frequency)");
	}
	SET(expected, "performance (or schedutil)");
	SET(why, "A power-saving governor slows the host side: launches, data loading and "
		 "Python run at a lower clock.");
	SET(fix, "cpupower frequency-set -g performance (as root), or ask the admins.");

	c = check_add(l, "host", "memory");
	uint64_t total = 0, avail = 0;

	if (gw_meminfo(&total, &avail) == 0) {
		c->status = total && avail * 10 < total ? CK_WARN : CK_PASS;
		SET(measured, "%.1f GiB total, %.1f GiB available", total / 1073741824.0,
		    avail / 1073741824.0);
		SET(expected, "at least 10%% available");
		SET(why, "Without free memory the page cache cannot hold the data set and pinned "
			 "buffers compete with loader workers.");
		SET(fix, "Free memory, or use fewer / smaller loader workers.");
	}

	c = check_add(l, "host", "transparent_hugepages");
	if (gw_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf)) > 0) {
		first_line(buf);
		c->status = verdict_thp(buf);
		SET(measured, "%.150s", buf);
		SET(expected, "[always] or [madvise]");
		SET(why, "Huge pages cut TLB misses for large host buffers (pinned staging, data "
			 "loaders).");
		SET(fix, "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (as root).");
	}
}

struct link_probe {
	unsigned index, gen, width;
	int ok;
};

static void read_link(void *arg)
{
	struct link_probe *p = arg;

	p->ok = gpu_read_link(p->index, &p->gen, &p->width) == 0;
}

/* The fixed texts of the GPU checks, one row per kind of check: what is
 * expected, why it matters for GPU utilization, the fix. NULL: set by the
 * check from measured values, or not given. */
enum gpu_text_id {
	GT_NO_DRIVER, GT_DRIVER, GT_PCIE, GT_PINNED, GT_PAGEABLE, GT_NOT_MEASURED, GT_PERSISTENCE,
	GT_POWER, GT_CLOCKS, GT_TEMPERATURE, GT_ECC, GT_ROW_REMAP, GT_MIG, GT_OTHERS, GT_NUMA,
	GT_NUMA_PID, GT_PAIR, GT_ONE_GPU,
};

static const struct gpu_text {
	const char *name, *expected, *why, *fix;
} gpu_text[] = {
	[GT_NO_DRIVER] = { "driver", NULL,
		"Without the NVIDIA driver no GPU check can run.",
		"Install the NVIDIA driver, or run gpuwhy check on the GPU machine." },
	[GT_DRIVER] = { "driver", NULL, NULL, NULL },
	[GT_PCIE] = { "pcie.link", NULL,
		"A link below its generation or width caps host<->GPU copies (input batches, .item(), "
		"checkpoints).",
		"Move the card to a full-width slot of the right generation, reseat it, check BIOS PCIe "
		"settings and risers." },
	[GT_PINNED] = { "bandwidth.pinned", NULL,
		"Pinned copies are the fastest the link allows; far below it means a degraded link, a "
		"NUMA hop or a contended switch.",
		"Check the link (above), bind the job to the GPU's NUMA node, look for other traffic on "
		"the same switch." },
	[GT_PAGEABLE] = { "bandwidth.pageable", NULL,
		"Copies from pageable memory are staged through a driver buffer and block the host: "
		"this ratio is what pin_memory=True buys here.",
		"Use pinned host buffers (DataLoader(pin_memory=True), tensor.pin_memory(), "
		"cudaMallocHost) and non_blocking copies." },
	[GT_NOT_MEASURED] = { "bandwidth.pinned", NULL, NULL, NULL },
	[GT_PERSISTENCE] = { "persistence", "on (or nvidia-persistenced running)",
		"Without persistence each new process pays driver initialization, and clocks and "
		"settings may reset between jobs.",
		"Run nvidia-persistenced (or nvidia-smi -pm 1 as root)." },
	[GT_POWER] = { "power.limit", "the default limit",
		"A lowered power limit caps clocks under load: everything runs slower.",
		"Restore it with nvidia-smi -pl (root), or ask the admins why it is capped." },
	[GT_CLOCKS] = { "clocks", "no power, thermal or hardware slowdown reasons",
		"Power and thermal limits lower the clocks while the GPU works.",
		"Improve cooling/airflow, restore the power limit, check for a hardware slowdown "
		"(power brake, PSU)." },
	[GT_TEMPERATURE] = { "temperature", NULL,
		"Near the slowdown threshold the GPU lowers its clocks.",
		"Improve cooling; check fans and airflow." },
	[GT_ECC] = { "ecc", NULL,
		"Uncorrected memory errors crash jobs and retire pages.",
		"Report the GPU to the admins; it may need row remapping or replacement." },
	[GT_ROW_REMAP] = { "ecc.row_remapping", NULL,
		"A pending remap needs a GPU reset to take effect; a failed one means the memory is "
		"wearing out.",
		"Ask the admins to reset the GPU when idle (pending) or replace it (failed). gpuwhy "
		"never resets a GPU." },
	[GT_MIG] = { "mig.compute_mode", NULL,
		"With MIG the job sees only a slice of the GPU; utilization of the whole card is then "
		"not what the job can reach.",
		"Ask for a full GPU, or size the batch for the slice." },
	[GT_OTHERS] = { "other_processes", "none while you measure",
		"Other jobs share the SMs, memory and copy engines.",
		"Find them with nvidia-smi and wait, or use another GPU." },
	[GT_NUMA] = { "numa", NULL,
		"Processes feeding this GPU should run on these CPUs; run with --pid to check a job.",
		NULL },
	[GT_NUMA_PID] = { "numa.pid", NULL, NULL, NULL },
	[GT_PAIR] = { NULL, "no pair across NUMA nodes for data-parallel training",
		"Collectives between GPUs on different sockets cross the inter-socket link: slower "
		"all-reduce, stragglers.",
		"Use GPUs of one NUMA node per job (CUDA_VISIBLE_DEVICES), or NVLink-connected pairs." },
	[GT_ONE_GPU] = { "topology", NULL, NULL, NULL },
};

/* Adds a GPU check with its fixed texts; name overrides the row's (pairs). */
static struct check *gpu_add(struct check_list *l, const char *scope, enum gpu_text_id id,
			     const char *name)
{
	const struct gpu_text *t = &gpu_text[id];
	struct check *c = check_add(l, scope, name ? name : t->name);

	if (t->expected)
		SET(expected, "%s", t->expected);
	if (t->why)
		SET(why, "%s", t->why);
	if (t->fix)
		SET(fix, "%s", t->fix);
	return c;
}

/* The PCIe link (read under the copy test's load when it runs) and the
 * pinned and pageable copy bandwidth. */
static void gpu_link_checks(struct check_list *l, const struct check_opts *o, const char *scope,
			    unsigned i, const struct gpu_static *s)
{
	struct link_probe lp = { i, 0, 0, 0 };
	struct copy_bw bw;
	struct check *c;
	int have_bw = !o->no_bandwidth && cuda_measure_bandwidth(s->bus_id, 256u << 20, &bw, read_link, &lp) == 0;
	double expect = pcie_practical_gbs(s->pcie_gen_max, s->pcie_width_max);

	c = gpu_add(l, scope, GT_PCIE, NULL);
	if (lp.ok) {
		c->status = verdict_pcie(lp.gen, s->pcie_gen_max, lp.width, s->pcie_width_max);
		SET(measured, "Gen%u x%u under load (idle: Gen%u x%u)", lp.gen, lp.width, s->pcie_gen,
		    s->pcie_width);
	} else {
		c->status = verdict_pcie(s->pcie_gen, s->pcie_gen_max, s->pcie_width, s->pcie_width_max);
		if (c->status != CK_PASS && c->status != CK_NA)
			c->status = CK_WARN; /* idle links train down: not proof */
		SET(measured, "Gen%u x%u (read idle: links train down when idle)", s->pcie_gen,
		    s->pcie_width);
	}
	SET(expected, "Gen%u x%u", s->pcie_gen_max, s->pcie_width_max);

	if (!have_bw) {
		c = gpu_add(l, scope, GT_NOT_MEASURED, NULL);
		SET(measured, o->no_bandwidth ? "skipped (--no-bandwidth)"
					      : "could not measure (CUDA driver unusable or GPU busy)");
		return;
	}
	c = gpu_add(l, scope, GT_PINNED, NULL);
	c->status = verdict_bandwidth(bw.htod_pinned < bw.dtoh_pinned ? bw.htod_pinned : bw.dtoh_pinned,
				      expect);
	SET(measured, "host-to-device %.1f GB/s, device-to-host %.1f GB/s (pinned, 256 MiB)",
	    bw.htod_pinned, bw.dtoh_pinned);
	SET(expected, "about %.0f GB/s for Gen%u x%u", expect, s->pcie_gen_max, s->pcie_width_max);
	c = gpu_add(l, scope, GT_PAGEABLE, NULL);
	c->status = CK_PASS;
	SET(measured, "host-to-device %.1f GB/s, device-to-host %.1f GB/s: pinned is %.1fx faster",
	    bw.htod_pageable, bw.dtoh_pageable, bw.htod_pageable > 0 ? bw.htod_pinned / bw.htod_pageable : 0);
}

/* Persistence, power limit, clocks, temperature, ECC and row remapping. */
static void gpu_health_checks(struct check_list *l, const char *scope, unsigned i,
			      const struct gpu_static *s, const struct gpu_sample *smp)
{
	unsigned rc_ = 0, ru = 0, rp = 0, rf = 0;
	uint64_t pw = 0, th = 0;
	struct check *c;

	c = gpu_add(l, scope, GT_PERSISTENCE, NULL);
	c->status = (s->valid & GW_VALID_BIT(GW_GINFO_PERSIST, GW_GINFO_VALID)) ? (s->persistence ? CK_PASS : CK_WARN) : CK_NA;
	SET(measured, "%s", (s->valid & GW_VALID_BIT(GW_GINFO_PERSIST, GW_GINFO_VALID)) ? (s->persistence ? "on" : "off") : "unknown");

	c = gpu_add(l, scope, GT_POWER, NULL);
	c->status = verdict_power_limit(s->power_limit_mw / 1e3, s->power_default_mw / 1e3);
	SET(measured, "enforced %.0f W (default %.0f W, max %.0f W)", s->power_limit_mw / 1e3,
	    s->power_default_mw / 1e3, s->power_max_mw / 1e3);

	c = gpu_add(l, scope, GT_CLOCKS, NULL);
	c->status = (smp->valid & GW_VALID_BIT(GW_GPU_REASONS, GW_GPU_VALID)) ? verdict_throttle(smp->reasons) : CK_NA;
	SET(measured, "SM %u MHz (max %u), clock event reasons 0x%llx", smp->sm_mhz, s->sm_clock_max_mhz,
	    (unsigned long long)smp->reasons);
	if (gpu_read_throttle_ns(i, &pw, &th) == 0)
		snprintf(c->measured + strlen(c->measured), sizeof(c->measured) - strlen(c->measured),
			 "; throttled so far: power %.1f s, thermal %.1f s", pw / 1e9, th / 1e9);

	c = gpu_add(l, scope, GT_TEMPERATURE, NULL);
	c->status = s->have_temp_slowdown && (smp->valid & GW_VALID_BIT(GW_GPU_TEMP, GW_GPU_VALID)) ? verdict_temperature(smp->temp_c, s->temp_slowdown_c)
								: CK_NA;
	SET(measured, "%u C", smp->temp_c);
	SET(expected, "below the %u C slowdown threshold", s->temp_slowdown_c);

	c = gpu_add(l, scope, GT_ECC, NULL);
	c->status = s->have_ecc ? (s->ecc_uncorrected ? CK_FAIL : CK_PASS) : CK_NA;
	SET(measured, s->have_ecc ? "%llu uncorrected errors (aggregate)" : "not supported",
	    (unsigned long long)s->ecc_uncorrected);

	c = gpu_add(l, scope, GT_ROW_REMAP, NULL);
	if (gpu_remapped_rows(i, &rc_, &ru, &rp, &rf) == 0) {
		c->status = verdict_row_remap(rp, rf);
		SET(measured, "%u rows remapped (correctable), %u (uncorrectable); remap pending %s, failed %s",
		    rc_, ru, rp ? "yes" : "no", rf ? "yes" : "no");
	} else {
		SET(measured, "not supported");
	}
}

/* Whether the CPUs pid may run on are the GPU's local CPUs. */
static void gpu_numa_pid_check(struct check_list *l, const char *scope, int pid, const struct gpu_static *s)
{
	struct check *c = gpu_add(l, scope, GT_NUMA_PID, NULL);
	char aff[1024] = "";
	size_t off = 0;
	cpu_set_t set;
	int nodes = 0;

	if (sched_getaffinity(pid, sizeof(set), &set) != 0) {
		SET(measured, "cannot read the affinity of pid %d: %s", pid, strerror(errno));
		return;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE && off < sizeof(aff) - 8; cpu++)
		if (CPU_ISSET(cpu, &set))
			off += (size_t)snprintf(aff + off, sizeof(aff) - off, "%s%d", off ? "," : "", cpu);
	for (int nd = 0; nd < 64; nd++) {
		char p2[96];

		snprintf(p2, sizeof(p2), "/sys/devices/system/node/node%d", nd);
		nodes += access(p2, F_OK) == 0;
	}
	c->status = nodes <= 1 || !s->cpus[0] || cpulist_subset(aff, s->cpus) ? CK_PASS : CK_WARN;
	SET(measured, "pid %d may run on CPUs %.100s", pid, aff);
	SET(expected, "a subset of %.120s", s->cpus);
	SET(why, "CPUs on another NUMA node reach the GPU through the inter-socket link: slower "
		 "copies, more latency.");
	SET(fix, "numactl --cpunodebind=%d --membind=%d, or taskset -c %s.", s->numa_node, s->numa_node,
	    s->cpus);
}

/* Every check of GPU i. */
static void gpu_check_one(struct check_list *l, const struct check_opts *o, unsigned i, const char *drv,
			  int cv)
{
	struct gpu_static s;
	struct gpu_sample smp;
	char scope[32];
	struct check *c;

	gpu_read_static(i, &s);
	gpu_read_sample(i, &smp);
	snprintf(scope, sizeof(scope), "gpu%u", i);

	c = gpu_add(l, scope, GT_DRIVER, NULL);
	c->status = CK_PASS;
	SET(measured, "%s, driver %s, CUDA %d.%d, %u SMs, %.0f GiB", s.name, drv, cv / 1000, (cv % 1000) / 10,
	    s.sm_count, s.mem_total_mib / 1024.0);
	gpu_link_checks(l, o, scope, i, &s);
	gpu_health_checks(l, scope, i, &s, &smp);

	c = gpu_add(l, scope, GT_MIG, NULL);
	c->status = (s.have_mig && s.mig_mode) ? CK_WARN : CK_PASS;
	SET(measured, "MIG %s, compute mode %d", s.have_mig ? (s.mig_mode ? "on" : "off") : "n/a",
	    s.compute_mode);

	c = gpu_add(l, scope, GT_OTHERS, NULL);
	c->status = s.have_nprocs ? (s.nprocs ? CK_WARN : CK_PASS) : CK_NA;
	SET(measured, "%u compute process%s on this GPU", s.nprocs, s.nprocs == 1 ? "" : "es");

	c = gpu_add(l, scope, GT_NUMA, NULL);
	c->status = CK_PASS;
	SET(measured, "NUMA node %d, local CPUs %.100s", s.numa_node, s.cpus[0] ? s.cpus : "unknown");
	if (o->pid > 0)
		gpu_numa_pid_check(l, scope, o->pid, &s);
}

static void gpu_checks(struct check_list *l, const struct check_opts *o)
{
	char why[256], drv[96] = "";
	int n = gpu_open(why, sizeof(why)), cv = 0;
	struct check *c;

	if (n <= 0) {
		c = gpu_add(l, "gpu", GT_NO_DRIVER, NULL);
		c->status = CK_NA;
		SET(measured, "%.150s", why);
		return;
	}
	gpu_driver_version(drv, sizeof(drv));
	gpu_cuda_version(&cv);
	for (int i = 0; i < n; i++)
		gpu_check_one(l, o, (unsigned)i, drv, cv);
	/* GPU-to-GPU topology, like `nvidia-smi topo -m`, with a verdict per pair */
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			int level;
			char nm[48];

			snprintf(nm, sizeof(nm), "topology.gpu%d-gpu%d", a, b);
			c = gpu_add(l, "gpus", GT_PAIR, nm);
			if (gpu_topology((unsigned)a, (unsigned)b, &level) == 0) {
				c->status = verdict_topology(level);
				SET(measured, "%s", topology_name(level));
			} else {
				SET(measured, "unknown (NVML cannot tell)");
			}
		}
	if (n == 1) {
		c = gpu_add(l, "gpus", GT_ONE_GPU, NULL);
		SET(measured, "one GPU: no GPU-to-GPU links to check");
	}
	gpu_close();
}

static const char *fs_kind(long type)
{
	switch ((unsigned long)type) {
	case 0x6969: return "NFS";
	case 0xFF534D42: return "CIFS/SMB";
	case 0xFE534D42: return "SMB2";
	case 0x65735546: return "FUSE";
	case 0x5346414F: return "AFS";
	case 0x47504653: return "GPFS";
	case 0x0BD00BD0: return "Lustre";
	case 0x01021994: return "tmpfs";
	default: return NULL;
	}
}

static void data_checks(struct check_list *l, const char *dir, const char *shown)
{
	struct statfs sf;
	struct stat st;
	struct check *c;
	char sys[128];
	uint64_t rot;

	c = check_add(l, "data", "storage.device");
	if (stat(dir, &st) < 0 || statfs(dir, &sf) < 0) {
		SET(measured, "cannot read %s: %s", shown, strerror(errno));
		c->status = CK_FAIL;
		return;
	}
	const char *net = fs_kind(sf.f_type);

	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/queue/rotational", major(st.st_dev), minor(st.st_dev));
	if (gw_read_u64(sys, &rot) < 0) {
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/../queue/rotational", major(st.st_dev),
			 minor(st.st_dev));
		if (gw_read_u64(sys, &rot) < 0)
			rot = 2;
	}
	/* a virtual machine's disk (virtio, Xen) reports itself rotational
	 * whatever stores it: the flag says nothing, the read test below does */
	char dev[PATH_MAX];
	int virt = 0;

	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	if (realpath(sys, dev))
		virt = strstr(dev, "/virtio") || strstr(dev, "/xen") || strstr(dev, "/vbd-");
	c->status = net && strcmp(net, "tmpfs") ? CK_WARN : rot == 1 && !virt ? CK_WARN : CK_PASS;
	SET(measured, "%s on %s", shown,
	    net     ? net
	    : virt  ? "a virtual disk (its rotational flag means nothing: see storage.read)"
	    : rot == 1 ? "a rotational disk (HDD)"
	    : rot == 0 ? "a solid-state device"
		       : "an unknown device");
	SET(expected, "local SSD/NVMe or RAM");
	SET(why, "Reading training data from an HDD or a network file system often starves "
		 "the GPU (threads wait in uninterruptible sleep).");
	SET(fix, "Copy the data set to local NVMe or /dev/shm, shard it into large files, or "
		 "cache it in RAM.");

	data_read_check(l, dir, shown, sf.f_type);
}

static void pid_checks(struct check_list *l, int pid)
{
	struct check *c;
	char scope[32], buf[4096];
	pid_t tids[4096];
	cpu_set_t set;
	unsigned runnable = 0, cores = 0;
	int n;

	snprintf(scope, sizeof(scope), "pid %d", pid);
	c = check_add(l, scope, "threads");
	n = procfs_list_threads(pid, tids, 4096);
	if (n < 0) {
		if (n == -ENOMEM)
			l->err = n; /* not a verdict on the process */
		c->status = CK_FAIL;
		SET(measured, "no process %d: %s", pid, strerror(-n));
		return;
	}
	for (int i = 0; i < n; i++) {
		struct proc_stat st;

		if (procfs_read_stat(pid, tids[i], &st) == 0 && st.state == 'R')
			runnable++;
	}
	if (sched_getaffinity(pid, sizeof(set), &set) == 0)
		cores = (unsigned)CPU_COUNT(&set);
	c->status = verdict_threads(runnable, cores);
	SET(measured, "%d threads, %u runnable now, on %u allowed CPUs", n, runnable, cores);
	SET(expected, "runnable threads at most the allowed CPUs");
	SET(why, "More runnable threads than cores makes them wait for each other: data "
		 "loading and launches slow down.");
	SET(fix, "torch.set_num_threads / OMP_NUM_THREADS per process, fewer loader workers.");

	c = check_add(l, scope, "memory_nodes");
	snprintf(buf, sizeof(buf), "/proc/%d/status", pid);
	static char st[16384];

	if (gw_read_file(buf, st, sizeof(st)) > 0) {
		char *p = strstr(st, "Mems_allowed_list:");

		if (p) {
			p += 18;
			while (*p == ' ' || *p == '\t')
				p++;
			first_line(p);
			c->status = CK_PASS;
			SET(measured, "memory nodes %s", p);
			SET(why, "Host buffers should live on the GPU's NUMA node.");
		}
	}
}

/* Without an NVIDIA driver: the GPU checks that did not run, by their ids
 * (those gpu_checks would add for one GPU), and the exact command that
 * shows a diagnosis on this machine, on the recording shipped with gpuwhy. */
static const enum gpu_text_id gpu_unchecked[] = {
	GT_PCIE, GT_PINNED, GT_PAGEABLE, GT_PERSISTENCE, GT_POWER, GT_CLOCKS, GT_TEMPERATURE,
	GT_ECC, GT_ROW_REMAP, GT_MIG, GT_OTHERS, GT_NUMA,
};

static int no_driver(const struct check_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].scope, "gpu") && !strcmp(l->v[i].name, "driver") &&
		    l->v[i].status == CK_NA)
			return 1;
	return 0;
}

/* path as a shell word: quoted unless it needs none */
static void shell_word(char *buf, size_t len, const char *path)
{
	if (strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+") ==
	    strlen(path) && !strchr(path, '\''))
		snprintf(buf, len, "%s", path);
	else if (!strchr(path, '\''))
		snprintf(buf, len, "'%s'", path);
	else
		snprintf(buf, len, "\"%s\"", path);
}

/* How the user reaches this binary: ./gpuwhy from its own folder, gpuwhy when
 * PATH finds this one, else its full path. */
static void self_command(char *buf, size_t len, const char *exe, const char *cwd)
{
	const char *path = getenv("PATH");
	char cand[4096], real[4096];
	size_t n = strlen(cwd);

	if (!strncmp(exe, cwd, n) && exe[n] == '/' && !strchr(exe + n + 1, '/')) {
		snprintf(buf, len, "./%s", exe + n + 1);
		return;
	}
	for (const char *p = path; p && *p;) {
		size_t k = strcspn(p, ":");

		snprintf(cand, sizeof(cand), "%.*s/gpuwhy", (int)k, p);
		if (k && realpath(cand, real) && !strcmp(real, exe)) {
			snprintf(buf, len, "gpuwhy");
			return;
		}
		p += k + (p[k] == ':');
	}
	shell_word(buf, len, exe);
}

/* "gpuwhy report RECORDING" for the case study's H200 recording beside the
 * binary (a source tree's tests/fixtures, from the root or a build folder
 * in it; make install's share/gpuwhy); "" when none is there (a wheel). */
static void next_command(char *buf, size_t len)
{
	static const char *const where[] = { "/tests/fixtures/case_study.gwr",
					     "/../tests/fixtures/case_study.gwr",
					     "/../share/gpuwhy/case_study.gwr" };
	char exe[4096], dir[4096], cand[4200], real[4096], cwd[4096], self[4200], word[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	buf[0] = 0;
	if (n <= 0 || !getcwd(cwd, sizeof(cwd)))
		return;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s", exe);
	*strrchr(dir, '/') = 0;
	for (size_t i = 0; i < ARRAY_SIZE(where); i++) {
		snprintf(cand, sizeof(cand), "%s%s", dir, where[i]);
		if (!realpath(cand, real) || access(real, R_OK) != 0)
			continue;
		size_t c = strlen(cwd);
		const char *shown = !strncmp(real, cwd, c) && real[c] == '/' ? real + c + 1 : real;

		self_command(self, sizeof(self), exe, cwd);
		shell_word(word, sizeof(word), shown);
		snprintf(buf, len, "%s report %s", self, word);
		return;
	}
}

static void print_no_driver(FILE *f)
{
	char list[512] = "", cmd[1024];
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(gpu_unchecked) && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
				      gpu_text[gpu_unchecked[i]].name);
	fprintf(f, "\nnot checked without a driver: ");
	fprint_wrapped(f, list, 2, 30);
	next_command(cmd, sizeof(cmd));
	fprintf(f, "next: run gpuwhy check on the GPU machine; to see a diagnosis here, %s\n",
		cmd[0] ? "report\non the bundled recording of an H200 run (the source article's case study):"
		       : "record\nthe job there (gpuwhy record -o run.gwr -- COMMAND), then run here:");
	fprintf(f, "  %s\n", cmd[0] ? cmd : "gpuwhy report run.gwr");
}

static void print_text(FILE *f, const struct check_list *l, int color)
{
	const char *scope = "";
	int counts[4] = { 0 };

	for (size_t i = 0; i < l->n; i++) {
		const struct check *c = &l->v[i];
		const char *col = !color ? "" : c->status == CK_FAIL ? "\033[31m" : c->status == CK_WARN ? "\033[33m"
								  : c->status == CK_PASS ? "\033[32m" : "\033[2m";

		counts[c->status]++;
		if (strcmp(scope, c->scope)) {
			scope = c->scope;
			fprintf(f, "\n%s\n", scope);
		}
		fprintf(f, "  %s%-4s%s %-22s ", col, c->status == CK_NA ? "n/a" : check_status_name(c->status),
		       color ? "\033[0m" : "", c->name);
		fprint_wrapped(f, c->measured, 30, 30);
		if (c->status == CK_WARN || c->status == CK_FAIL) {
			if (c->expected[0]) {
				fprintf(f, "       expected: ");
				fprint_wrapped(f, c->expected, 17, 17);
			}
			if (c->why[0]) {
				fprintf(f, "       why: ");
				fprint_wrapped(f, c->why, 12, 12);
			}
			if (c->fix[0]) {
				fprintf(f, "       fix: ");
				fprint_wrapped(f, c->fix, 12, 12);
			}
		}
	}
	fprintf(f, "\n%d pass, %d warn, %d fail, %d not assessed\n", counts[CK_PASS], counts[CK_WARN],
	       counts[CK_FAIL], counts[CK_NA]);
	if (no_driver(l))
		print_no_driver(f);
}

static void print_json(const struct check_list *l)
{
	struct json j;
	int counts[4] = { 0 };

	json_init(&j, stdout, 1);
	json_obj_begin(&j, NULL);
	json_str(&j, "schema", "gpuwhy.check/1");
	json_arr_begin(&j, "checks");
	for (size_t i = 0; i < l->n; i++) {
		const struct check *c = &l->v[i];

		counts[c->status]++;
		json_obj_begin(&j, NULL);
		json_str(&j, "scope", c->scope);
		json_str(&j, "name", c->name);
		json_str(&j, "status", check_status_name(c->status));
		json_str(&j, "measured", c->measured);
		json_str(&j, "expected", c->expected);
		json_str(&j, "why", c->why);
		json_str(&j, "fix", c->fix);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_begin(&j, "summary");
	json_u64(&j, "pass", (uint64_t)counts[CK_PASS]);
	json_u64(&j, "warn", (uint64_t)counts[CK_WARN]);
	json_u64(&j, "fail", (uint64_t)counts[CK_FAIL]);
	json_u64(&j, "not_assessed", (uint64_t)counts[CK_NA]);
	json_obj_end(&j);
	if (no_driver(l)) {
		char cmd[1024];

		json_arr_begin(&j, "not_checked");
		for (size_t i = 0; i < ARRAY_SIZE(gpu_unchecked); i++)
			json_str(&j, NULL, gpu_text[gpu_unchecked[i]].name);
		json_arr_end(&j);
		next_command(cmd, sizeof(cmd));
		json_str(&j, "next", cmd[0] ? cmd : NULL);
	}
	json_obj_end(&j);
	json_done(&j);
}

int check_run(const struct check_opts *o)
{
	struct check_list l = { 0 };
	int fails = 0;

	host_checks(&l);
	gpu_checks(&l, o);
	if (o->data_dir) {
		/* the folder's name as the text table shows it: one line, no
		 * control characters (JSON escapes it itself) */
		char *shown = NULL;
		size_t len = 0;
		FILE *m = o->json ? NULL : open_memstream(&shown, &len);

		if (m) {
			fput_escaped(m, o->data_dir, strlen(o->data_dir), 0);
			if (fclose(m) != 0) {
				free(shown);
				shown = NULL;
			}
		}
		if (!o->json && !shown)
			l.err = -ENOMEM;
		data_checks(&l, o->data_dir, shown ? shown : o->data_dir);
		free(shown);
	}
	if (o->pid > 0)
		pid_checks(&l, o->pid);
	if (l.err) {
		gw_error("out of memory while running the checks: no table printed (%s); free some memory "
			 "and run gpuwhy check again", strerror(-l.err));
		free(l.v);
		return 1;
	}
	if (o->json) {
		print_json(&l);
	} else {
		/* folder names reach the terminal escaped, as in the report */
		int color = gw_color_auto(STDOUT_FILENO);
		FILE *term = term_filter_open(stdout, color);

		if (!term) {
			gw_error("out of memory while printing the checks");
			free(l.v);
			return 1;
		}
		print_text(term, &l, color);
		fclose(term);
	}
	for (size_t i = 0; i < l.n; i++)
		fails += l.v[i].status == CK_FAIL;
	free(l.v);
	return fails ? 1 : 0;
}
