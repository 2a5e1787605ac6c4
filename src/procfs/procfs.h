/* Parsers for the /proc files gpuwhy samples (the recorder, `gpuwhy check`;
 * the thread listing, which the Python stack reader shares, is tasks.h). Each takes the file's text
 * (so tests can feed real and synthetic contents) or reads it by pid/tid. */
#ifndef GPUWHY_PROCFS_H
#define GPUWHY_PROCFS_H

#include <stdint.h>
#include <sys/types.h>

#include "../format/format.h"
#include "tasks.h"

struct proc_stat {
	char comm[64];
	char state; /* R, S, D, Z, T, I, ... */
	int ppid;
	uint64_t utime, stime; /* clock ticks */
	uint64_t starttime;    /* clock ticks after boot */
	long num_threads;
};

struct proc_io {
	uint64_t rchar, wchar, read_bytes, write_bytes;
};

struct sys_cpu {
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
	unsigned ncpu;
};

int procfs_parse_stat(const char *text, struct proc_stat *st);
/* voluntary_ctxt_switches / nonvoluntary_ctxt_switches from a status file. */
int procfs_parse_csw(const char *text, uint64_t *vol, uint64_t *invol);
int procfs_parse_io(const char *text, struct proc_io *io);
int procfs_parse_sys_cpu(const char *text, struct sys_cpu *c);

/* tid == 0: the process itself. Return 0 or -errno. */
int procfs_read_stat(pid_t pid, pid_t tid, struct proc_stat *st);
int procfs_read_csw(pid_t pid, pid_t tid, uint64_t *vol, uint64_t *invol);
int procfs_read_io(pid_t pid, struct proc_io *io);
int procfs_read_sys_cpu(struct sys_cpu *c);
/* The command line with NULs turned into spaces. */
int procfs_read_cmdline(pid_t pid, char *buf, size_t len);

/* Fills pids[] with root and all its descendants; returns the count. */
int procfs_descendants(pid_t root, pid_t *pids, int max);

/* /proc/PID/task/TID/schedstat: time on a CPU, time waiting on a run queue
 * (both ns, cumulative) and timeslices run. Absent without CONFIG_SCHED_INFO. */
struct sched_stat {
	uint64_t run_ns, wait_ns, slices;
};
int procfs_parse_schedstat(const char *text, struct sched_stat *s);
int procfs_read_schedstat(pid_t pid, pid_t tid, struct sched_stat *s);

/* Runtime libraries mapped into a process (/proc/PID/maps): the GW_LIB_*
 * bits of format.h. */
/* The library bits of one maps line's path (0 for none); a Python version
 * ("3.11") goes to pyver when the path names one. */
unsigned procfs_lib_of_path(const char *path, char *pyver, size_t len);
/* Every line of a maps text (NUL-terminated); returns the OR of the bits. */
unsigned procfs_parse_maps(const char *text, char *pyver, size_t len);
/* Reads /proc/PID/maps line by line (it can be megabytes): the bits, or -errno. */
int procfs_read_libs(pid_t pid, char *pyver, size_t len);

#endif
