/* LD_PRELOAD shim that makes writes fail with ENOSPC (a full disk) once
 * GW_FAIL_AFTER bytes have been written to files whose path contains
 * GW_FAIL_PATH. With GW_FAIL_MODE=hang, writes to such files from any thread
 * but the main one block forever instead (a hung network filesystem under a
 * background writer). Used by tests/cli/test_cli.sh to test error paths. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static long long written;

static int matches(int fd)
{
	const char *pat = getenv("GW_FAIL_PATH");
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

static int over(size_t len)
{
	const char *a = getenv("GW_FAIL_AFTER");
	long long after = a ? atoll(a) : 0;

	if (written + (long long)len > after)
		return 1;
	written += (long long)len;
	return 0;
}

/* Whether this write fails; in hang mode, blocks other threads for good. */
static int fail_now(int fd, size_t len)
{
	const char *m = getenv("GW_FAIL_MODE");

	if (!matches(fd))
		return 0;
	if (!m || strcmp(m, "hang"))
		return over(len);
	while (syscall(SYS_gettid) != getpid())
		pause();
	return 0;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (fail_now(fd, len)) {
		errno = ENOSPC;
		return -1;
	}
	return real(fd, buf, len);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	static ssize_t (*real)(int, const struct iovec *, int);
	size_t len = 0;

	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	if (fail_now(fd, len)) {
		errno = ENOSPC;
		return -1;
	}
	return real(fd, iov, cnt);
}
