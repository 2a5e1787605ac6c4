/* LD_PRELOAD shim for reads of files whose path contains GW_SLOW_PATH, so
 * that tests can make a regular file behave like the files that hang a
 * naive reader, without waiting:
 *   GW_SLOW_MODE=block  a read blocks for good unless the descriptor is
 *                       non-blocking, where it fails with EAGAIN (as
 *                       /proc/kmsg does with no new message);
 *   GW_SLOW_MODE=slow   each read takes one second of CLOCK_MONOTONIC, which
 *                       the shim advances instead of sleeping (a very slow
 *                       network file system).
 * Used by tests/cli/test_check.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long skew_s; /* seconds added to CLOCK_MONOTONIC */

static int matches(int fd)
{
	const char *pat = getenv("GW_SLOW_PATH");
	char link[64], path[4096];
	ssize_t n;

	if (!pat || !*pat)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	return strstr(path, pat) != NULL;
}

ssize_t read(int fd, void *buf, size_t len)
{
	static ssize_t (*real)(int, void *, size_t);
	const char *m = getenv("GW_SLOW_MODE");

	if (!real)
		real = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	if (m && matches(fd)) {
		if (!strcmp(m, "block")) {
			if (fcntl(fd, F_GETFL) & O_NONBLOCK) {
				errno = EAGAIN;
				return -1;
			}
			for (;;)
				pause();
		}
		if (!strcmp(m, "slow"))
			__atomic_add_fetch(&skew_s, 1, __ATOMIC_SEQ_CST);
	}
	return real(fd, buf, len);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	int r;

	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	r = real(id, ts);
	if (r == 0 && id == CLOCK_MONOTONIC)
		ts->tv_sec += __atomic_load_n(&skew_s, __ATOMIC_SEQ_CST);
	return r;
}
