#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../format/format.h"
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
	char path[64], *raw = len ? malloc(len) : NULL;
	ssize_t n;

	if (!raw)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = gw_read_file(path, raw, len);
	if (n < 0) {
		free(raw);
		return (int)n;
	}
	while (n > 0 && raw[n - 1] == 0)
		n--;
	/* arguments joined by spaces, secrets out (format/envlist.c) */
	gw_cmdline_scrubbed(raw, (size_t)n, buf, len);
	free(raw);
	return 0;
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

int procfs_parse_schedstat(const char *text, struct sched_stat *s)
{
	unsigned long long run, wait, slices;

	memset(s, 0, sizeof(*s));
	if (sscanf(text, "%llu %llu %llu", &run, &wait, &slices) != 3)
		return -EINVAL;
	s->run_ns = run;
	s->wait_ns = wait;
	s->slices = slices;
	return 0;
}

int procfs_read_schedstat(pid_t pid, pid_t tid, struct sched_stat *s)
{
	char path[96], buf[128];
	ssize_t n;

	task_path(path, sizeof(path), pid, tid, "schedstat");
	n = gw_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return procfs_parse_schedstat(buf, s);
}

/* "3.11" from the text after "python" in a name ("3.11.so.1.0", "3.11"),
 * or nothing when no major.minor follows. */
static void python_version(const char *after, char *pyver, size_t len)
{
	size_t n = 0;

	if (!isdigit((unsigned char)after[0]) || after[1] != '.' || !isdigit((unsigned char)after[2]))
		return;
	n = 3;
	while (isdigit((unsigned char)after[n]))
		n++;
	if (pyver && len > n) {
		memcpy(pyver, after, n);
		pyver[n] = 0;
	}
}

unsigned procfs_lib_of_path(const char *path, char *pyver, size_t len)
{
	const char *base = strrchr(path, '/'), *py;
	unsigned f = 0;

	base = base ? base + 1 : path;
	if (starts_with(base, "libtorch") || starts_with(base, "libc10"))
		f |= GW_LIB_TORCH;
	if (strstr(path, "/jaxlib/") || strstr(path, "/jax_plugins/") || starts_with(base, "xla_extension") ||
	    starts_with(base, "libjax") || strstr(base, "xla_cuda_plugin"))
		f |= GW_LIB_JAX;
	if (strstr(path, "/cupy/_core/") || strstr(path, "/cupy_backends/"))
		f |= GW_LIB_CUPY;
	if (starts_with(base, "libtensorflow_framework") || starts_with(base, "libtensorflow_cc") ||
	    strstr(base, "_pywrap_tensorflow"))
		f |= GW_LIB_TF;
	if (starts_with(base, "libtriton"))
		f |= GW_LIB_TRITON;
	if (starts_with(base, "libcuda.so"))
		f |= GW_LIB_CUDA;
	if (starts_with(base, "libcudart"))
		f |= GW_LIB_CUDART;
	if (starts_with(base, "libpython3")) {
		f |= GW_LIB_PYTHON;
		python_version(base + 9, pyver, len);
	} else if (gw_is_python_name(base)) {
		f |= GW_LIB_PYTHON;
		python_version(base + 6, pyver, len);
	} else if ((py = strstr(path, "/lib/python3.")) != NULL) { /* the standard library's modules */
		f |= GW_LIB_PYTHON;
		python_version(py + 11, pyver, len);
	}
	return f;
}

/* A maps line's path starts at its first '/' (addresses, permissions and
 * device numbers have none); [heap], [stack] and anonymous maps have none. */
static unsigned lib_of_line(const char *line, char *pyver, size_t len)
{
	const char *p = strchr(line, '/');

	return p ? procfs_lib_of_path(p, pyver, len) : 0;
}

unsigned procfs_parse_maps(const char *text, char *pyver, size_t len)
{
	char line[4096];
	unsigned f = 0;

	while (*text) {
		size_t n = strcspn(text, "\n");
		size_t k = n < sizeof(line) - 1 ? n : sizeof(line) - 1;

		memcpy(line, text, k);
		line[k] = 0;
		f |= lib_of_line(line, pyver, len);
		text += n + (text[n] == '\n');
	}
	return f;
}

int procfs_read_libs(pid_t pid, char *pyver, size_t len)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	unsigned f = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	ssize_t n;

	while ((n = getline(&line, &cap, fp)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		f |= lib_of_line(line, pyver, len);
	}
	free(line);
	fclose(fp);
	return (int)(f & 0x7fffffff);
}
