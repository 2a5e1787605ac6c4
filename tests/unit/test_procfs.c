/* The /proc parsers, on this machine's real files and on synthetic text. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record/procfs.h"
#include "record/record.h"
#include "t.h"

static volatile int stop;
static volatile pid_t busy_tid, sleepy_tid;

static void *busy(void *arg)
{
	volatile double x = 0;

	(void)arg;
	busy_tid = (pid_t)syscall(SYS_gettid);
	while (!stop)
		x += 1.0;
	return NULL;
}

static void *sleepy(void *arg)
{
	(void)arg;
	sleepy_tid = (pid_t)syscall(SYS_gettid);
	while (!stop)
		usleep(10000);
	return NULL;
}

static void test_real_threads(void)
{
	pthread_t a, b;
	struct proc_stat st_busy, st_sleep, st_self;
	struct timespec ts = { 0, 300 * 1000000L };
	int tries = 0;

	pthread_create(&a, NULL, busy, NULL);
	pthread_create(&b, NULL, sleepy, NULL);
	nanosleep(&ts, NULL);
	/* states are a snapshot: a busy thread may be preempted for an instant */
	do {
		CHECK(procfs_read_stat(getpid(), busy_tid, &st_busy) == 0, "busy thread stat");
	} while (st_busy.state != 'R' && ++tries < 50);
	tries = 0;
	do {
		CHECK(procfs_read_stat(getpid(), sleepy_tid, &st_sleep) == 0, "sleepy thread stat");
	} while (st_sleep.state != 'S' && ++tries < 50);
	CHECK(st_busy.state == 'R', "busy thread state %c", st_busy.state);
	CHECK(st_busy.utime + st_busy.stime >= 10, "busy thread CPU ticks %llu",
	      (unsigned long long)(st_busy.utime + st_busy.stime));
	CHECK(st_sleep.state == 'S', "sleeping thread state %c", st_sleep.state);
	CHECK(st_sleep.utime + st_sleep.stime < st_busy.utime + st_busy.stime, "sleeper used less CPU");
	CHECK(procfs_read_stat(getpid(), 0, &st_self) == 0 && st_self.num_threads >= 3 &&
	      st_self.ppid == getppid(), "self: %ld threads, ppid %d", st_self.num_threads, st_self.ppid);

	pid_t tids[64];
	int n = procfs_list_threads(getpid(), tids, 64), seen = 0;

	for (int i = 0; i < n; i++)
		seen += tids[i] == busy_tid || tids[i] == sleepy_tid;
	CHECK(n >= 3 && seen == 2, "threads listed: %d, ours %d", n, seen);

	uint64_t vol = 0, invol = 0;

	CHECK(procfs_read_csw(getpid(), sleepy_tid, &vol, &invol) == 0 && vol > 5,
	      "sleeper's voluntary switches %llu", (unsigned long long)vol);
	stop = 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
}

static void test_real_files(void)
{
	struct proc_io io;
	struct sys_cpu c;
	char cmd[256];
	pid_t pids[16];

	CHECK(procfs_read_io(getpid(), &io) == 0, "/proc/self/io");
	CHECK(procfs_read_sys_cpu(&c) == 0 && c.ncpu >= 1 && c.user + c.system + c.idle > 0,
	      "/proc/stat: %u cpus", c.ncpu);
	CHECK(procfs_read_cmdline(getpid(), cmd, sizeof(cmd)) == 0 && strstr(cmd, "test_procfs"),
	      "cmdline '%s'", cmd);
	pid_t child = fork();

	if (child == 0) {
		sleep(2);
		_exit(0);
	}
	usleep(100000);
	int n = procfs_descendants(getpid(), pids, 16), found = 0;

	for (int i = 0; i < n; i++)
		found += pids[i] == child;
	CHECK(n >= 2 && pids[0] == getpid() && found == 1, "descendants: %d, child found %d", n, found);
	kill(child, 9);
	waitpid(child, NULL, 0);
}

static void test_synthetic(void)
{
	struct proc_stat st;
	struct proc_io io;
	struct sys_cpu c;
	uint64_t v, iv;
	/* synthetic: a comm with spaces and parentheses */
	const char *stat = "1234 (my (odd) name) D 1 1234 1234 0 -1 4194304 100 0 0 0 "
			   "250 75 0 0 20 0 9 0 5555 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0";

	CHECK(procfs_parse_stat(stat, &st) == 0, "parse");
	CHECK(!strcmp(st.comm, "my (odd) name") && st.state == 'D' && st.ppid == 1 && st.utime == 250 &&
	      st.stime == 75 && st.num_threads == 9 && st.starttime == 5555,
	      "comm '%s' state %c ppid %d utime %llu", st.comm, st.state, st.ppid,
	      (unsigned long long)st.utime);
	CHECK(procfs_parse_stat("garbage", &st) < 0, "garbage rejected");
	CHECK(procfs_parse_csw("Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n",
			       &v, &iv) == 0 && v == 12 && iv == 3, "csw");
	CHECK(procfs_parse_io("rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 1\nread_bytes: 4096\n"
			      "write_bytes: 8192\ncancelled_write_bytes: 0\n", &io) == 0 &&
	      io.read_bytes == 4096 && io.write_bytes == 8192 && io.rchar == 10, "io");
	CHECK(procfs_parse_sys_cpu("cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n"
				   "cpu1 1 1 1 1 1 1 1 1 0 0\nintr 5\n", &c) == 0 &&
	      c.user == 1 && c.iowait == 5 && c.steal == 8 && c.ncpu == 2, "sys cpu");
}

/* The /proc sampler's pace: its period while a pass is cheap, a quarter of a
 * core at most when passes get costly (thousands of threads). */
static void test_sampler_pace(void)
{
	const uint64_t ms = 1000000;
	uint64_t n;

	n = sampler_next_tick(100 * ms, 101 * ms, 20 * ms, 1 * ms);
	CHECK(n == 120 * ms, "cheap pass: next at %llu ms, want 120",
	      (unsigned long long)(n / ms));
	n = sampler_next_tick(100 * ms, 130 * ms, 20 * ms, 30 * ms);
	CHECK(n == 220 * ms, "30 ms pass: next at %llu ms, want 220 (3x its cost later)",
	      (unsigned long long)(n / ms));
	n = sampler_next_tick(100 * ms, 200 * ms, 20 * ms, 0);
	CHECK(n == 210 * ms, "fell behind: next at %llu ms, want 210 (no burst)",
	      (unsigned long long)(n / ms));
}

int main(void)
{
	test_sampler_pace();
	test_synthetic();
	test_real_threads();
	test_real_files();
	T_DONE();
}
