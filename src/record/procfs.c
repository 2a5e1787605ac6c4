#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"
#include "procfs.h"

int procfs_parse_stat(const char *text, struct proc_stat *st)
{
	/* comm may contain spaces and parentheses: it ends at the last ')'. */
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	unsigned long long v[52];
	int n = 0;
	const char *p;

	memset(st, 0, sizeof(*st));
	if (!open || !close || close < open)
		return -EINVAL;
	size_t cl = (size_t)(close - open - 1);

	if (cl >= sizeof(st->comm))
		cl = sizeof(st->comm) - 1;
	memcpy(st->comm, open + 1, cl);
	st->comm[cl] = 0;
	p = close + 1;
	while (*p == ' ')
		p++;
	if (!*p)
		return -EINVAL;
	st->state = *p++;
	/* Fields from 4 (ppid) on, numbered as in proc(5). */
	while (n < 50 && *p) {
		char *end;

		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		v[n++] = strtoull(p, &end, 10);
		if (end == p) /* a negative number: strtoull handles '-', so this is junk */
			return -EINVAL;
		p = end;
	}
	if (n < 19)
		return -EINVAL;
	st->ppid = (int)v[0];
	st->utime = v[10];
	st->stime = v[11];
	st->num_threads = (long)v[16];
	st->starttime = v[18];
	return 0;
}

static int find_u64(const char *text, const char *key, uint64_t *out)
{
	const char *p = text;
	size_t kl = strlen(key);

	while ((p = strstr(p, key))) {
		if ((p == text || p[-1] == '\n') && p[kl] == ':') {
			*out = strtoull(p + kl + 1, NULL, 10);
			return 0;
		}
		p += kl;
	}
	return -ENOENT;
}

int procfs_parse_csw(const char *text, uint64_t *vol, uint64_t *invol)
{
	if (find_u64(text, "voluntary_ctxt_switches", vol) < 0 ||
	    find_u64(text, "nonvoluntary_ctxt_switches", invol) < 0)
		return -EINVAL;
	return 0;
}

int procfs_parse_io(const char *text, struct proc_io *io)
{
	memset(io, 0, sizeof(*io));
	if (find_u64(text, "rchar", &io->rchar) < 0 || find_u64(text, "wchar", &io->wchar) < 0 ||
	    find_u64(text, "read_bytes", &io->read_bytes) < 0 ||
	    find_u64(text, "write_bytes", &io->write_bytes) < 0)
		return -EINVAL;
	return 0;
}

int procfs_parse_sys_cpu(const char *text, struct sys_cpu *c)
{
	const char *line;

	memset(c, 0, sizeof(*c));
	if (sscanf(text, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
		   (unsigned long long *)&c->user, (unsigned long long *)&c->nice,
		   (unsigned long long *)&c->system, (unsigned long long *)&c->idle,
		   (unsigned long long *)&c->iowait, (unsigned long long *)&c->irq,
		   (unsigned long long *)&c->softirq, (unsigned long long *)&c->steal) < 5)
		return -EINVAL;
	for (line = strchr(text, '\n'); line; line = strchr(line + 1, '\n'))
		if (line[1] == 'c' && line[2] == 'p' && line[3] == 'u' && isdigit((unsigned char)line[4]))
			c->ncpu++;
	return 0;
}

static void task_path(char *buf, size_t len, pid_t pid, pid_t tid, const char *file)
{
	if (tid)
		snprintf(buf, len, "/proc/%d/task/%d/%s", (int)pid, (int)tid, file);
	else
		snprintf(buf, len, "/proc/%d/%s", (int)pid, file);
}

int procfs_read_stat(pid_t pid, pid_t tid, struct proc_stat *st)
{
	char path[96], buf[1024];
	ssize_t n;

	task_path(path, sizeof(path), pid, tid, "stat");
	n = gw_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return procfs_parse_stat(buf, st);
}

int procfs_read_csw(pid_t pid, pid_t tid, uint64_t *vol, uint64_t *invol)
{
	char path[96], buf[4096];
	ssize_t n;

	task_path(path, sizeof(path), pid, tid, "status");
	n = gw_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return procfs_parse_csw(buf, vol, invol);
}

int procfs_read_io(pid_t pid, struct proc_io *io)
{
	char path[64], buf[512];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	n = gw_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return procfs_parse_io(buf, io);
}

int procfs_read_sys_cpu(struct sys_cpu *c)
{
	static char buf[65536];
	ssize_t n = gw_read_file("/proc/stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return procfs_parse_sys_cpu(buf, c);
}

int procfs_read_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = gw_read_file(path, buf, len);
	if (n < 0)
		return (int)n;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
	buf[n] = 0;
	return 0;
}

int procfs_list_threads(pid_t pid, pid_t *tids, int max)
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

/* Children through /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN);
 * returns -ENOENT where the kernel lacks it. */
static int children_of(pid_t pid, pid_t *out, int max)
{
	pid_t tids[512];
	int nt = procfs_list_threads(pid, tids, 512), n = 0;

	if (nt < 0)
		return nt;
	for (int i = 0; i < nt; i++) {
		char path[96], buf[4096], *p, *end;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tids[i]);
		ssize_t r = gw_read_file(path, buf, sizeof(buf));

		if (r < 0) {
			if (r == -ENOENT && i == 0)
				return -ENOENT;
			continue;
		}
		for (p = buf; *p && n < max; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			out[n++] = (pid_t)c;
		}
	}
	return n;
}

static int scan_all(pid_t root, pid_t *pids, int max)
{
	/* Full /proc scan: parent links of every process, then a walk from root. */
	struct dirent *de;
	DIR *d = opendir("/proc");
	pid_t all[8192], par[8192];
	int na = 0, n = 1;

	if (!d)
		return 1;
	while ((de = readdir(d)) && na < 8192) {
		struct proc_stat st;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t p = (pid_t)atoi(de->d_name);

		if (procfs_read_stat(p, 0, &st) == 0) {
			all[na] = p;
			par[na++] = st.ppid;
		}
	}
	closedir(d);
	pids[0] = root;
	for (int i = 0; i < n && n < max; i++)
		for (int j = 0; j < na && n < max; j++)
			if (par[j] == pids[i])
				pids[n++] = all[j];
	return n;
}

int procfs_descendants(pid_t root, pid_t *pids, int max)
{
	int n = 1;

	if (max < 1)
		return 0;
	pids[0] = root;
	for (int i = 0; i < n && n < max; i++) {
		int c = children_of(pids[i], pids + n, max - n);

		if (c == -ENOENT && i == 0)
			return scan_all(root, pids, max);
		if (c > 0)
			n += c;
	}
	return n;
}
