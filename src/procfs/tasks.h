/* A process's threads from /proc/PID/task: shared by the recorder's /proc
 * sampler (procfs.h) and the Python stack reader (src/pystack/), which the
 * injection library and the stack reader's own builds compile without the
 * rest of gpuwhy: so it is defined here, in the header, on libc alone. */
#ifndef GPUWHY_PROCFS_TASKS_H
#define GPUWHY_PROCFS_TASKS_H

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* Fills tids[] with the threads of pid (at most max); returns the count or -errno. */
static inline int procfs_list_threads(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max)
		if (isdigit((unsigned char)de->d_name[0]))
			tids[n++] = (pid_t)atoi(de->d_name);
	closedir(d);
	return n;
}

#endif
