/* STUB Python stack reader (the API of pystack.h): every open fails. Replaced by the
 * `pyreader` branch's reader: delete this file when merging it. */
#include <errno.h>
#include <stdio.h>

#include "pystack.h"

int py_proc_open(struct py_proc **pp, pid_t pid, char *why, size_t whylen)
{
	(void)pid;
	*pp = NULL;
	snprintf(why, whylen, "this gpuwhy was built without the Python stack reader");
	return -ENOTSUP;
}

void py_proc_close(struct py_proc *p)
{
	(void)p;
}

const char *py_proc_version(const struct py_proc *p)
{
	(void)p;
	return "";
}

int py_proc_threads(struct py_proc *p, pid_t *tids, int max)
{
	(void)p;
	(void)tids;
	(void)max;
	return -ENOTSUP;
}

int py_proc_stack(struct py_proc *p, pid_t tid, struct py_frame *frames, int max)
{
	(void)p;
	(void)tid;
	(void)frames;
	(void)max;
	return -ESRCH;
}
