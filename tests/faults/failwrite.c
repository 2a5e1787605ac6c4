/* LD_PRELOAD shim that makes writes fail with ENOSPC (a full disk) once
 * GW_FAIL_AFTER bytes have been written to files whose path contains
 * GW_FAIL_PATH. With GW_FAIL_COUNT=N the disk fills and then frees: the
 * write that crosses the limit writes what fits (a short write, as a full
 * disk does), the next N writes fail, and every later one succeeds. With
 * GW_FAIL_MODE=hang, writes to such files from any thread but the main one
 * block forever instead (a hung network filesystem under a background
 * writer). With GW_FAIL_MKDIR, making a folder whose path contains it fails
 * with ENOSPC (a disk with no block left for a new folder). Used by
 * tests/cli/test_cli.sh and tests/cli/test_harm.sh to test error paths. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* GW_FAIL_COUNT: -1 not reached yet, then the failures left; freed: space is back */
static long long fails_left = -1;
static int freed;

/* 0: write all, -1: fail, n > 0: write only n bytes (a short write) */
static long long over(size_t len)
{
	const char *a = getenv("GW_FAIL_AFTER"), *c = getenv("GW_FAIL_COUNT");
	long long after = a ? atoll(a) : 0;

	if (freed)
		return 0;
	if (c && fails_left == 0) {
		freed = 1;
		return 0;
	}
	if (c && fails_left > 0) {
		fails_left--;
		return -1;
	}
	if (written + (long long)len > after) {
		if (!c)
			return -1;
		fails_left = atoll(c);
		if (after > written) { /* what still fits */
			long long n = after - written;

			written = after;
			return n;
		}
		fails_left--;
		return -1;
	}
	written += (long long)len;
	return 0;
}

/* Whether this write fails; in hang mode, blocks other threads for good. */
static long long fail_now(int fd, size_t len)
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
	long long f = fail_now(fd, len);

	if (f < 0) {
		errno = ENOSPC;
		return -1;
	}
	return real(fd, buf, f > 0 ? (size_t)f : len);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	static ssize_t (*real)(int, const struct iovec *, int);
	size_t len = 0;

	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	long long f = fail_now(fd, len);

	if (f < 0) {
		errno = ENOSPC;
		return -1;
	}
	if (f > 0) { /* a short write: the first f bytes of the vector */
		struct iovec part[16];
		int n = 0;

		for (int i = 0; i < cnt && i < 16 && f > 0; i++, n++) {
			part[i] = iov[i];
			if ((long long)part[i].iov_len > f)
				part[i].iov_len = (size_t)f;
			f -= (long long)part[i].iov_len;
		}
		return real(fd, part, n);
	}
	return real(fd, iov, cnt);
}

static int mkdir_fails(const char *path)
{
	const char *pat = getenv("GW_FAIL_MKDIR");

	return pat && *pat && strstr(path, pat);
}

int mkdirat(int dfd, const char *path, mode_t mode)
{
	static int (*real)(int, const char *, mode_t);

	if (!real)
		real = (int (*)(int, const char *, mode_t))dlsym(RTLD_NEXT, "mkdirat");
	if (mkdir_fails(path)) {
		errno = ENOSPC;
		return -1;
	}
	return real(dfd, path, mode);
}

int mkdir(const char *path, mode_t mode)
{
	return mkdirat(AT_FDCWD, path, mode);
}
