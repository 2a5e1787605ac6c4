/* LD_PRELOAD shim that makes one allocation fail: the GW_FAIL_MALLOC_AT-th
 * call (counted from 1) of malloc, calloc or realloc returns NULL with
 * ENOMEM; every other call succeeds. With GW_FAIL_MALLOC_COUNT=FILE it
 * writes the number of calls to FILE at exit instead, so that a test can
 * sweep every allocation of a run (tests/cli/test_cli.sh: a failed
 * allocation must end in an error, never in a different report). glibc's
 * __libc_* entry points do the work. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static unsigned long calls, fail_at;
static const char *count_file;

__attribute__((constructor)) static void init(void)
{
	const char *a = getenv("GW_FAIL_MALLOC_AT");

	fail_at = a ? strtoul(a, NULL, 10) : 0;
	count_file = getenv("GW_FAIL_MALLOC_COUNT");
	calls = 0;
}

__attribute__((destructor)) static void fini(void)
{
	if (count_file) {
		FILE *f = fopen(count_file, "w");

		if (f) {
			fprintf(f, "%lu\n", calls);
			fclose(f);
		}
	}
}

/* GW_FAIL_MALLOC_WHERE set: says on stderr which code the failed call came
 * from (object and offset, for addr2line). */
static int fail(void *caller)
{
	if (++calls != fail_at || !fail_at)
		return 0;
	if (getenv("GW_FAIL_MALLOC_WHERE")) {
		Dl_info di;
		char buf[512];

		if (dladdr(caller, &di) && di.dli_fname) {
			int n = snprintf(buf, sizeof(buf), "failmalloc: call %lu from %s+0x%lx\n", calls,
					 di.dli_fname, (unsigned long)((char *)caller - (char *)di.dli_fbase));

			if (write(2, buf, (size_t)n) < 0)
				return 1;
		}
	}
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	return fail(__builtin_return_address(0)) ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	return fail(__builtin_return_address(0)) ? NULL : __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	return fail(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}
