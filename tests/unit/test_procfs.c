/* The /proc parsers, on this machine's real files and on synthetic text. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procfs/procfs.h"
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
	/* on a loaded machine the spinner may need longer for its 10 ticks: wait
	 * for them (up to 15 s) rather than for a fixed time */
	do {
		CHECK(procfs_read_stat(getpid(), busy_tid, &st_busy) == 0, "busy thread stat");
		if (st_busy.utime + st_busy.stime < 10)
			nanosleep(&ts, NULL);
	} while (st_busy.utime + st_busy.stime < 10 && ++tries < 50);
	tries = 0;
	/* states are a snapshot: a busy thread may be preempted for an instant */
	do {
		CHECK(procfs_read_stat(getpid(), busy_tid, &st_busy) == 0, "busy thread stat");
	} while (st_busy.state != 'R' && ++tries < 50);
	tries = 0;
	/* ... and a sleeper is runnable for an instant each time it wakes,
	 * longer on a loaded machine: look again for up to 5 s */
	do {
		struct timespec pause = { 0, 10 * 1000000L };

		CHECK(procfs_read_stat(getpid(), sleepy_tid, &st_sleep) == 0, "sleepy thread stat");
		if (st_sleep.state != 'S')
			nanosleep(&pause, NULL);
	} while (st_sleep.state != 'S' && ++tries < 500);
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

/* schedstat: synthetic texts, and this machine's: a spinning thread runs,
 * and the run-queue wait of a thread that cannot get a core grows. */
static void test_schedstat(void)
{
	struct sched_stat ss;
	pthread_t a;
	struct timespec ts = { 0, 20 * 1000000L };

	CHECK(procfs_parse_schedstat("75956355 90713806 202\n", &ss) == 0 && ss.run_ns == 75956355 &&
	      ss.wait_ns == 90713806 && ss.slices == 202, "schedstat fields");
	CHECK(procfs_parse_schedstat("18446744073709551615 0 1", &ss) == 0 &&
	      ss.run_ns == 18446744073709551615ull && ss.wait_ns == 0, "schedstat: large values");
	CHECK(procfs_parse_schedstat("12 34", &ss) < 0 && procfs_parse_schedstat("", &ss) < 0,
	      "schedstat: short text rejected");
	if (procfs_read_schedstat(getpid(), 0, &ss) == -ENOENT) {
		printf("note: this kernel has no /proc/PID/schedstat: live part skipped\n");
		return;
	}
	stop = 0;
	busy_tid = 0;
	pthread_create(&a, NULL, busy, NULL);
	while (!busy_tid)
		nanosleep(&ts, NULL);
	/* a spinning thread's time on a CPU grows (however loaded the machine) */
	struct sched_stat first = { 0 };
	int tries = 0, ok0 = procfs_read_schedstat(getpid(), busy_tid, &first) == 0;

	do {
		nanosleep(&ts, NULL);
		CHECK(procfs_read_schedstat(getpid(), busy_tid, &ss) == 0, "spinning thread's schedstat");
	} while (ss.run_ns <= first.run_ns && ++tries < 50);
	CHECK(ok0 && ss.run_ns > first.run_ns && ss.slices >= first.slices && ss.slices >= 1,
	      "a spinning thread's time on a CPU grows: %llu -> %llu ns",
	      (unsigned long long)first.run_ns, (unsigned long long)ss.run_ns);
	stop = 1;
	pthread_join(a, NULL);
	stop = 0;
}

/* Synthetic maps lines: each framework's libraries, Python versions, lines
 * without a path. */
static void test_maps_synthetic(void)
{
	char v[16];
	const char *jax = "7f0000000000-7f0000100000 r-xp 00000000 fe:00 1 "
			  "/venv/lib/python3.12/site-packages/jaxlib/xla_extension.so\n"
			  "7f0000200000-7f0000300000 r--p 00000000 fe:00 2 /usr/lib/libpython3.12.so.1.0\n"
			  "7f0000300000-7f0000400000 rw-p 00000000 00:00 0 [heap]\n"
			  "7f0000400000-7f0000500000 r-xp 00000000 fe:00 3 /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n"
			  "7f0000600000-7f0000700000 r-xp 00000000 00:00 0 \n";

	v[0] = 0;
	CHECK(procfs_parse_maps(jax, v, sizeof(v)) == (GW_LIB_JAX | GW_LIB_PYTHON | GW_LIB_CUDA) &&
	      !strcmp(v, "3.12"), "JAX maps: flags and Python %s", v);
	v[0] = 0;
	CHECK(procfs_lib_of_path("/opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so", v,
				 sizeof(v)) == (GW_LIB_TORCH | GW_LIB_PYTHON) && !strcmp(v, "3.10"),
	      "libtorch_cuda under a python3.10 tree (%s)", v);
	CHECK(procfs_lib_of_path("/x/torch/lib/libtorch_python.so", NULL, 0) == GW_LIB_TORCH, "libtorch_python");
	CHECK(procfs_lib_of_path("/x/site-packages/cupy/_core/core.cpython-311-x86_64-linux-gnu.so", NULL, 0) ==
		      GW_LIB_CUPY && procfs_lib_of_path("/x/cupy_backends/cuda/api/runtime.so", NULL, 0) == GW_LIB_CUPY,
	      "CuPy");
	CHECK(procfs_lib_of_path("/x/tensorflow/libtensorflow_framework.so.2", NULL, 0) == GW_LIB_TF, "TensorFlow");
	CHECK(procfs_lib_of_path("/x/triton/_C/libtriton.so", NULL, 0) == GW_LIB_TRITON, "Triton");
	CHECK(procfs_lib_of_path("/x/jax_plugins/xla_cuda12/xla_cuda_plugin.so", NULL, 0) == GW_LIB_JAX,
	      "JAX's CUDA plugin");
	v[0] = 0;
	CHECK(procfs_lib_of_path("/root/.pyenv/versions/3.11.7/bin/python3.11", v, sizeof(v)) == GW_LIB_PYTHON &&
	      !strcmp(v, "3.11"), "python3.11 executable (%s)", v);
	v[0] = 0;
	CHECK(procfs_lib_of_path("/usr/bin/python3", v, sizeof(v)) == GW_LIB_PYTHON && v[0] == 0,
	      "python3 executable, version unknown");
	CHECK(procfs_lib_of_path("/usr/bin/python3-config-helper", NULL, 0) == 0 &&
	      procfs_lib_of_path("/usr/lib/libz.so.1.2.13", NULL, 0) == 0 &&
	      procfs_lib_of_path("/usr/local/cuda/lib64/libcudart.so.12", NULL, 0) == GW_LIB_CUDART,
	      "other libraries: no framework");
	CHECK(procfs_parse_maps("", NULL, 0) == 0, "empty maps");
}

/* Live: this test (a C program, zlib linked) maps neither Python nor a
 * framework; a python3 child maps Python, of the version it reports. */
static void test_maps_live(void)
{
	char v[16] = "", want[16] = "";
	int self = procfs_read_libs(getpid(), v, sizeof(v)), fds[2];
	pid_t child;

	CHECK(self >= 0 && !(self & (GW_LIB_PYTHON | GW_LIB_FRAMEWORKS)), "this C program: flags 0x%x", self);
	CHECK(procfs_read_libs(999999999, v, sizeof(v)) < 0, "no such process: an error");
	if (pipe(fds) < 0)
		return;
	child = fork();
	if (child == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execlp("python3", "python3", "-c",
		       "import sys, time; print('%d.%d' % sys.version_info[:2], flush=True); time.sleep(10)",
		       (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], want, sizeof(want) - 1);

	if (n <= 0) {
		printf("note: no python3 here: the live Python part is skipped\n");
	} else {
		want[strcspn(want, "\n")] = 0;
		v[0] = 0;
		int f = procfs_read_libs(child, v, sizeof(v));

		CHECK(f >= 0 && (f & GW_LIB_PYTHON) && !(f & GW_LIB_FRAMEWORKS) && !strcmp(v, want),
		      "python3 child: flags 0x%x, Python '%s' (it says %s)", f, v, want);
	}
	close(fds[0]);
	kill(child, 9);
	waitpid(child, NULL, 0);
}

int main(void)
{
	test_sampler_pace();
	test_synthetic();
	test_schedstat();
	test_maps_synthetic();
	test_maps_live();
	test_real_threads();
	test_real_files();
	T_DONE();
}
