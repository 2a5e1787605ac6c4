/* The in-process path, for tests: a Python program loads this library with
 * ctypes and calls pystack_self(), which reads the calling thread's own
 * Python stack through py_proc_open(getpid()) as the injection library
 * does, and writes it as text: "DEPTH\n" then "func|file|line\n" per frame. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../src/pystack/pystack.h"

__attribute__((visibility("default"))) int pystack_self(char *out, size_t len)
{
	struct py_frame f[64];
	struct py_proc *p;
	char why[256];
	size_t pos = 0;
	int d = -EAGAIN, err;

	err = py_proc_open(&p, getpid(), why, sizeof(why));
	if (err) {
		snprintf(out, len, "%d\n%s\n", err, why);
		return err;
	}
	for (int t = 0; t < 20 && d == -EAGAIN; t++)
		d = py_proc_stack(p, (pid_t)syscall(SYS_gettid), f, 64);
	pos += (size_t)snprintf(out, len, "%d\n", d);
	for (int i = 0; i < d && pos < len; i++)
		pos += (size_t)snprintf(out + pos, len - pos, "%s|%s|%u\n", f[i].func, f[i].file, f[i].line);
	py_proc_close(p);
	return d;
}
