/* The samplers: /proc for the target's process tree, NVML at a fast rate,
 * GPM every 100 ms, and the slow PCIe throughput query on its own thread so
 * its ~20 ms block never delays the others. All share one clock
 * (CLOCK_MONOTONIC, as the injection library) and one writer (stream 0). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../gpu/gpu.h"
#include "../util/util.h"
#include "../procfs/procfs.h"
#include "proclibs.h"
#include "record.h"

#define MAX_PIDS 1024
#define MAX_TIDS 8192

/* A new process's command line. It reads empty while the process is in
 * exec (its old memory gone, the new not yet set up) and for a zombie:
 * read again, up to 5 times 2 ms apart, before settling for its name. */
static int read_cmdline(pid_t pid, char *cmd, size_t len)
{
	const struct timespec pause = { 0, 2000000 };
	int rc = procfs_read_cmdline(pid, cmd, len);

	for (int k = 0; k < 5 && rc == 0 && !cmd[0]; k++) {
		nanosleep(&pause, NULL);
		rc = procfs_read_cmdline(pid, cmd, len);
	}
	return rc;
}

static pthread_t threads[4];
static int nthreads;

static void sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ---- /proc --------------------------------------------------------- */

struct tstate {
	uint32_t tid; /* 0 = empty */
	uint32_t pid;
	char state;
	uint64_t utime, stime, vcsw, ivcsw;
	uint64_t seen_tick;
	uint64_t run_delay; /* ns waiting on a run queue (schedstat), cumulative */
};

struct pstate {
	uint32_t pid;
	uint64_t seen_tick;
	struct proc_io io;
	int io_ok;
	struct proc_libs_state libs;
};

static struct tstate *tslot(struct tstate *t, uint32_t tid)
{
	size_t i = (tid * 2654435761u) & (MAX_TIDS - 1);

	while (t[i].tid && t[i].tid != tid)
		i = (i + 1) & (MAX_TIDS - 1);
	return &t[i];
}

/* Drops the threads not seen since min_tick (gone, or tids the kernel may
 * hand out again): the table stays open to new threads for the whole run. */
static uint64_t tcompact(struct tstate **t, struct tstate **spare, uint64_t min_tick)
{
	struct tstate *from = *t, *to = *spare;
	uint64_t n = 0;

	memset(to, 0, MAX_TIDS * sizeof(*to));
	for (size_t i = 0; i < MAX_TIDS; i++) {
		if (from[i].tid && from[i].seen_tick >= min_tick) {
			*tslot(to, from[i].tid) = from[i];
			n++;
		}
	}
	*t = to;
	*spare = from;
	return n;
}

/* When the next /proc pass starts: one period after the last, but never
 * sooner than three times the last pass's CPU cost after it ended, so that
 * sampling a job of thousands of threads takes at most a quarter of a core
 * (the rate drops instead). Times in ns. */
uint64_t sampler_next_tick(uint64_t next, uint64_t now, uint64_t period, uint64_t cost)
{
	next += period;
	if (next < now)
		next = now + period / 2; /* fell behind: do not burst */
	if (next < now + 3 * cost)
		next = now + 3 * cost;
	return next;
}

uint64_t sampler_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *proc_thread(void *arg)
{
	struct recorder *r = arg;
	uint64_t period = 1000000000ull / (r->opts->proc_hz ? r->opts->proc_hz : 50);
	uint64_t next = gw_now_ns(), tick = 0, nthreads_known = 0, slowest = 0;
	struct tstate *ts = calloc(MAX_TIDS, sizeof(*ts)), *spare = calloc(MAX_TIDS, sizeof(*ts));
	struct pstate *ps = calloc(MAX_PIDS, sizeof(*ps));
	pid_t *pids = calloc(MAX_PIDS, sizeof(pid_t)), *tids = calloc(4096, sizeof(pid_t));
	int np_known = 0;

	if (!ts || !spare || !ps || !pids || !tids)
		goto out;
	{ /* whether threads' run-queue waits are recorded (old kernels lack schedstat) */
		struct sched_stat ss;

		rec_meta(r, "record.schedstat",
			 procfs_read_schedstat(getpid(), 0, &ss) == 0 ? "yes" : "no");
	}
	while (!r->stop) {
		uint64_t now = gw_now_ns(), cpu0 = sampler_thread_cpu_ns();
		struct sys_cpu sc;
		int np = procfs_descendants(r->target, pids, MAX_PIDS);

		tick++;
		if (procfs_read_sys_cpu(&sc) == 0) {
			uint64_t v[GW_SCPU_NF] = { now, sc.user, sc.nice, sc.system, sc.idle,
						   sc.iowait, sc.irq, sc.softirq, sc.steal, sc.ncpu };
			rec_emit(r, GW_REC_SYS_CPU, v, GW_SCPU_NF);
		}
		for (int i = 0; i < np; i++) {
			struct pstate *p = NULL;
			struct proc_io io;
			int nt;

			for (int k = 0; k < np_known; k++)
				if (ps[k].pid == (uint32_t)pids[i])
					p = &ps[k];
			if (!p && np_known < MAX_PIDS) {
				struct proc_stat st;
				char cmd[4096];

				p = &ps[np_known++];
				memset(p, 0, sizeof(*p));
				p->pid = (uint32_t)pids[i];
				/* the target was recorded at spawn; a re-exec'd target keeps its pid */
				if (pids[i] != r->target && procfs_read_stat(pids[i], 0, &st) == 0) {
					if (r->opts->redact || read_cmdline(pids[i], cmd, sizeof(cmd)) < 0 || !cmd[0])
						snprintf(cmd, sizeof(cmd), "%s", r->opts->redact ? "[redacted]" : st.comm);
					uint64_t v[GW_PROC_NF] = { now, p->pid, (uint64_t)st.ppid, st.starttime,
								   rec_intern(r, cmd), pids[i] == r->target };
					rec_emit(r, GW_REC_PROCESS, v, GW_PROC_NF);
				}
			}
			if (!p)
				continue;
			p->seen_tick = tick;
			proc_libs_poll(r, &p->libs, pids[i], tick, (unsigned)(1000000000ull / period), now);
			/* I/O counters change slowly: 10 Hz is enough, and only on change. */
			if (tick % 5 == 1 && procfs_read_io(pids[i], &io) == 0 &&
			    (!p->io_ok || memcmp(&io, &p->io, sizeof(io)) != 0)) {
				uint64_t v[GW_PIO_NF] = { now, p->pid, io.read_bytes, io.write_bytes,
							  io.rchar, io.wchar };
				rec_emit(r, GW_REC_PROC_IO, v, GW_PIO_NF);
				p->io = io;
				p->io_ok = 1;
			}
			nt = procfs_list_threads(pids[i], tids, 4096);
			for (int k = 0; k < nt; k++) {
				struct proc_stat st;
				struct tstate *t;
				uint64_t vcsw = 0, ivcsw = 0;
				struct sched_stat ss = { 0 };

				if (procfs_read_stat(pids[i], tids[k], &st) < 0)
					continue;
				/* a runnable thread waiting for a core changes only here */
				procfs_read_schedstat(pids[i], tids[k], &ss);
				t = tslot(ts, (uint32_t)tids[k]);
				if (!t->tid && nthreads_known >= MAX_TIDS / 2) {
					nthreads_known = tcompact(&ts, &spare, tick - 1);
					t = tslot(ts, (uint32_t)tids[k]);
				}
				if (!t->tid) {
					if (nthreads_known >= MAX_TIDS / 2)
						continue; /* table full of live threads: sample those only */
					nthreads_known++;
					t->tid = (uint32_t)tids[k];
					t->pid = p->pid;
					t->state = 0;
					uint64_t v[GW_TNAME_NF] = { p->pid, t->tid, rec_intern(r, st.comm) };
					rec_emit(r, GW_REC_THREAD_NAME, v, GW_TNAME_NF);
				}
				t->seen_tick = tick;
				/* Context switches come from the larger status file: read at 10 Hz. */
				if (tick % 5 == 0)
					procfs_read_csw(pids[i], tids[k], &vcsw, &ivcsw);
				else
					vcsw = t->vcsw, ivcsw = t->ivcsw;
				if (st.state == t->state && st.utime == t->utime && st.stime == t->stime &&
				    vcsw == t->vcsw && ivcsw == t->ivcsw && ss.wait_ns == t->run_delay)
					continue; /* unchanged: readers carry the last value forward */
				t->state = st.state;
				t->utime = st.utime;
				t->stime = st.stime;
				t->vcsw = vcsw;
				t->ivcsw = ivcsw;
				t->run_delay = ss.wait_ns;
				uint64_t v[GW_THREAD_NF] = { now, p->pid, t->tid, (uint64_t)st.state,
							     st.utime, st.stime, vcsw, ivcsw, ss.wait_ns };
				rec_emit(r, GW_REC_THREAD, v, GW_THREAD_NF);
			}
		}
		/* Processes gone from the tree (workers that exited) leave the table,
		 * so that new ones always find room and a reused pid is a new process. */
		for (int k = 0; k < np_known; k++) {
			if (ps[k].seen_tick != tick && ps[k].pid != (uint32_t)r->target) {
				uint64_t v[GW_PEXIT_NF] = { now, ps[k].pid, (uint64_t)-1 };

				rec_emit(r, GW_REC_PROC_EXIT, v, GW_PEXIT_NF);
				ps[k--] = ps[--np_known];
			}
		}
		uint64_t cost = sampler_thread_cpu_ns() - cpu0;

		now = gw_now_ns();
		next = sampler_next_tick(next, now, period, cost);
		if (next - now > slowest)
			slowest = next - now;
		sleep_until(next);
	}
	if (slowest > 2 * period) {
		char buf[32];

		/* the /proc rate had to drop below the one asked for */
		snprintf(buf, sizeof(buf), "%.1f", 1e9 / (double)slowest);
		rec_meta(r, "record.proc_hz_lowest", buf);
	}
out:
	free(ts);
	free(spare);
	free(ps);
	free(pids);
	free(tids);
	return NULL;
}

/* ---- NVML ------------------------------------------------------------ */

static void *gpu_fast_thread(void *arg)
{
	struct recorder *r = arg;
	uint64_t period = 1000000000ull / (r->opts->gpu_hz ? r->opts->gpu_hz : 50);
	uint64_t next = gw_now_ns();

	while (!r->stop) {
		for (unsigned i = 0; i < r->ngpus; i++) {
			struct gpu_sample s;
			uint64_t now = gw_now_ns();

			if (gpu_read_sample(i, &s) < 0)
				continue;
			uint64_t v[GW_GPU_NF] = { now, i, s.valid, s.sm_mhz, s.mem_mhz, s.reasons,
						  s.power_mw, s.temp_c, s.mem_used_mib, s.util,
						  s.mem_util };
			rec_emit(r, GW_REC_GPU, v, GW_GPU_NF);
		}
		next += period;
		if (next < gw_now_ns())
			next = gw_now_ns() + period / 2;
		sleep_until(next);
	}
	return NULL;
}

static uint64_t x100(double v)
{
	return v > 0 ? (uint64_t)(v * 100.0 + 0.5) : 0;
}

static void *gpm_thread(void *arg)
{
	struct recorder *r = arg;
	uint64_t next = gw_now_ns();
	int supported[GW_MAX_GPUS];

	for (unsigned i = 0; i < r->ngpus; i++)
		supported[i] = gpm_supported(i);
	while (!r->stop) {
		for (unsigned i = 0; i < r->ngpus; i++) {
			struct gpm_sample s;

			if (!supported[i] || gpm_poll(i, &s) != 1)
				continue;
			uint64_t v[GW_GPM_NF] = { gw_now_ns(), i, s.valid, x100(s.sm_util),
						  x100(s.sm_occ), x100(s.tensor), x100(s.dram),
						  x100(s.fp32), x100(s.fp16), x100(s.fp64),
						  x100(s.pcie_tx), x100(s.pcie_rx) };
			rec_emit(r, GW_REC_GPM, v, GW_GPM_NF);
		}
		next += 100000000ull;
		if (next < gw_now_ns())
			next = gw_now_ns() + 50000000ull;
		sleep_until(next);
	}
	return NULL;
}

static void *pcie_thread(void *arg)
{
	struct recorder *r = arg;
	uint64_t next = gw_now_ns();

	while (!r->stop) {
		for (unsigned i = 0; i < r->ngpus && !r->stop; i++) {
			unsigned tx = 0, rx = 0;
			uint64_t t = gw_now_ns();
			int ok = gpu_read_pcie(i, &tx, &rx) == 0;
			uint64_t v[GW_PCIE_NF] = { t, i, ok ? 3u : 0u, tx, rx };

			rec_emit(r, GW_REC_PCIE, v, GW_PCIE_NF);
		}
		next += 1000000000ull;
		/* wake every 100 ms to notice the end of the recording promptly */
		while (!r->stop && gw_now_ns() < next)
			sleep_until(gw_now_ns() + 100000000ull < next ? gw_now_ns() + 100000000ull : next);
	}
	return NULL;
}

int samplers_start(struct recorder *r)
{
	nthreads = 0;
	if (pthread_create(&threads[nthreads], NULL, proc_thread, r) == 0)
		nthreads++;
	if (r->ngpus) {
		if (pthread_create(&threads[nthreads], NULL, gpu_fast_thread, r) == 0)
			nthreads++;
		if (pthread_create(&threads[nthreads], NULL, gpm_thread, r) == 0)
			nthreads++;
		if (pthread_create(&threads[nthreads], NULL, pcie_thread, r) == 0)
			nthreads++;
	}
	py_sampler_start(r); /* says in the recording's metadata when it could not */
	return nthreads ? 0 : -EAGAIN;
}

void samplers_stop(struct recorder *r)
{
	r->stop = 1;
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	nthreads = 0;
	py_sampler_stop(r);
}
