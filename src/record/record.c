/* gpuwhy record: start the target with the injection library, sample while
 * it runs, forward signals, and finalize one recording file in every case:
 * normal exit, crash, SIGKILL of the target, Ctrl-C or SIGTERM to gpuwhy.
 *
 * Layout while recording: gpuwhy's samplers append chunks to the output
 * file itself; each traced process writes <output>.parts/inject-<pid>.gws;
 * at the end those chunks are appended (recompressed) to the output and the
 * parts folder is removed (parts.c: only what gpuwhy and the injection made).
 * The job's signals: jobsig.c. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../format/contract.h"
#include "../gpu/gpu.h"
#include "../util/args.h"
#include "../format/cupti_find.h"
#include "../util/util.h"
#include "jobsig.h"
#include "parts.h"
#include "ranks.h"
#include "record.h"


/* Periodic samples carry no strings: in ring mode they go to the segments,
 * everything else (metadata, processes, thread names, GPU facts) stays in the
 * output file, so the newest samples always have their context. */
static int is_periodic(unsigned type)
{
	return type == GW_REC_THREAD || type == GW_REC_SYS_CPU || type == GW_REC_GPU ||
	       type == GW_REC_GPM || type == GW_REC_PCIE || type == GW_REC_PROC_IO ||
	       type == GW_REC_PY_SAMPLE;
}

void rec_emit(struct recorder *r, unsigned type, const uint64_t *v, unsigned n)
{
	pthread_mutex_lock(&r->lock);
	gw_emit(r->ring && is_periodic(type) ? &r->ring_w : &r->w, type, v, n);
	pthread_mutex_unlock(&r->lock);
}

static void flush_all(struct recorder *r)
{
	pthread_mutex_lock(&r->lock);
	gw_flush(&r->w);
	if (r->ring) {
		gw_flush(&r->ring_w);
		gw_seg_rotate_if_full(&r->seg, &r->ring_w);
	}
	pthread_mutex_unlock(&r->lock);
}

uint64_t rec_intern(struct recorder *r, const char *s)
{
	uint64_t id;

	pthread_mutex_lock(&r->lock);
	id = gw_intern(&r->w, s);
	pthread_mutex_unlock(&r->lock);
	return id;
}

void rec_meta(struct recorder *r, const char *key, const char *value)
{
	pthread_mutex_lock(&r->lock);
	gw_emit_meta(&r->w, key, value);
	pthread_mutex_unlock(&r->lock);
}

/* The job may change directory before CUDA starts (Hydra does): the paths
 * handed to it must not depend on the working directory. */
static void absolute(char *buf, size_t len)
{
	char cwd[PATH_MAX], tmp[PATH_MAX];

	if (buf[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return;
	snprintf(tmp, sizeof(tmp), "%s/%s", cwd, buf);
	snprintf(buf, len, "%s", tmp);
}

/* The CUPTI the job will find first (src/format/cupti_find.h), looked for
 * with the job's own program; a bare name (the loader's path) is left to the
 * job's own search. */
struct cupti_pick {
	char path[PATH_MAX];
	unsigned major;
};

static int pick_cupti(const char *path, const char *source, void *ud)
{
	struct cupti_pick *p = ud;

	(void)source;
	if (!strchr(path, '/'))
		return 0;
	snprintf(p->path, sizeof(p->path), "%s", path);
	p->major = gw_cupti_file_major(path);
	return 1;
}

/* The job's program as the shell would find it (not resolved: a venv's
 * bin/python names the venv). */
static void job_program(const char *argv0, char *buf, size_t len)
{
	const char *path = getenv("PATH");

	buf[0] = 0;
	if (strchr(argv0, '/')) {
		snprintf(buf, len, "%s", argv0);
		absolute(buf, len);
		return;
	}
	for (const char *p = path; p && *p;) {
		const char *e = strchr(p, ':');
		int n = e ? (int)(e - p) : (int)strlen(p);

		snprintf(buf, len, "%.*s/%s", n, p, argv0);
		if (n && access(buf, X_OK) == 0)
			return;
		p += n + (e != NULL);
	}
	buf[0] = 0;
}

/* The injection library for a CUPTI major (0: unknown, the newest built):
 * GPUWHY_INJECT_LIB, else next to gpuwhy or in ../lib/gpuwhy (make install,
 * make dist and the wheel all use one of these). */
static int find_inject_lib(char *buf, size_t len, unsigned major)
{
	const char *env = getenv(GW_ENV_INJECT_LIB);
	const unsigned majors[] = { major, 13, 12 };
	char exe[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		absolute(buf, len);
		return access(buf, R_OK) == 0 ? 0 : -ENOENT;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -ENOENT;
	exe[n] = 0;
	char *dir = dirname(exe);
	const char *cands[] = { "%s/libgpuwhy-inject-cu%u.so", "%s/../lib/gpuwhy/libgpuwhy-inject-cu%u.so" };

	for (size_t m = 0; m < ARRAY_SIZE(majors); m++) {
		for (size_t i = 0; majors[m] && i < ARRAY_SIZE(cands); i++) {
			snprintf(buf, len, cands[i], dir, majors[m]);
			if (access(buf, R_OK) == 0) {
				char *real = realpath(buf, NULL);

				if (real) {
					snprintf(buf, len, "%s", real);
					free(real);
				}
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* The descriptors gpuwhy was started with belong to the user and pass to the
 * job as they are; any other one open without close-on-exec when the job
 * starts was opened by a library gpuwhy loaded (the driver, NVML) and must
 * not reach the job. */
struct fdset {
	int *fd;
	int n;
};

static void list_fds(struct fdset *s)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int cap = 0;

	s->fd = NULL;
	s->n = 0;
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9' || atoi(de->d_name) == dirfd(d))
			continue;
		if (s->n == cap) {
			int *p = realloc(s->fd, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(*p));

			if (!p)
				break;
			s->fd = p;
		}
		s->fd[s->n++] = atoi(de->d_name);
	}
	closedir(d);
}

static void cloexec_all_but(const struct fdset *user)
{
	struct fdset now;

	list_fds(&now);
	for (int i = 0; i < now.n; i++) {
		int mine = 1, fl;

		for (int k = 0; k < user->n && mine; k++)
			mine = user->fd[k] != now.fd[i];
		if (mine && (fl = fcntl(now.fd[i], F_GETFD)) >= 0 && !(fl & FD_CLOEXEC))
			fcntl(now.fd[i], F_SETFD, fl | FD_CLOEXEC);
	}
	free(now.fd);
}

static int have_cuda_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);

	if (!h)
		return 0;
	dlclose(h);
	return 1;
}

static void default_name(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	snprintf(buf, len, "gpuwhy-%04d%02d%02d-%02d%02d%02d-%d.gwr", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)getpid());
}

/* Where the job's signals come from decides its process group. In the
 * foreground of a terminal the job shares gpuwhy's group, so that it can
 * read the terminal and the keys (Ctrl-C, Ctrl-\) reach it from the kernel;
 * anywhere else (no terminal, in the background, under timeout or a batch
 * system) it gets a group of its own, so that a signal sent to gpuwhy's
 * group reaches it once, through gpuwhy (docs/RELIABILITY.md). */
static int job_needs_own_group(void)
{
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	pid_t fg;

	if (fd < 0)
		return 1; /* no controlling terminal */
	fg = tcgetpgrp(fd);
	close(fd);
	return fg != getpgrp();
}

static void set_job_env(const struct record_opts *o, const char *inject, const char *parts)
{
	char buf[32];

	setenv("CUDA_INJECTION64_PATH", inject, 1);
	setenv(GW_ENV_PARTS_DIR, parts, 1);
	if (o->trace_launches)
		setenv(GW_ENV_TRACE_LAUNCHES, "1", 1);
	if (o->sync_records)
		setenv(GW_ENV_SYNC_RECORDS, "1", 1);
	if (o->no_py)
		setenv(GW_ENV_PY_SITES, "0", 1);
	if (o->ring) {
		/* each traced process keeps about half the budget */
		uint64_t b = o->max_size / 2;

		snprintf(buf, sizeof(buf), "%llu",
			 (unsigned long long)(b > 4000000000ull ? 4000000000ull : b));
		setenv(GW_ENV_RING_BYTES, buf, 1);
	}
	if (o->duty_period_ms) {
		snprintf(buf, sizeof(buf), "%u", o->duty_on_ms);
		setenv(GW_ENV_DUTY_ON_MS, buf, 1);
		snprintf(buf, sizeof(buf), "%u", o->duty_period_ms);
		setenv(GW_ENV_DUTY_PERIOD_MS, buf, 1);
	}
}

/* The caught signals are blocked from before fork() until the job's pid is
 * known: one that arrives while the job starts stays pending and is
 * forwarded then, instead of finding no job to forward to (and being lost,
 * with the job in a group of its own). The child takes the caller's
 * dispositions and mask (jobsig_child_reset). Without a descriptor left
 * for the pipe that reports a failed exec (ulimit -n), the job still
 * starts: a failed exec then says so itself and exits 126 or 127. */
static int spawn(const struct record_opts *o, const char *inject, const char *parts,
		 int own_group, pid_t *pid_out)
{
	int pfd[2] = { -1, -1 }, err = 0;
	pid_t pid;
	ssize_t n = 0;
	sigset_t old;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		pfd[0] = pfd[1] = -1;
	jobsig_block(&old);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (pfd[0] >= 0) {
			close(pfd[0]);
			close(pfd[1]);
		}
		return err;
	}
	if (pid == 0) {
		jobsig_child_reset();
		if (pfd[0] >= 0)
			close(pfd[0]);
		if (own_group)
			setpgid(0, 0);
		if (inject)
			set_job_env(o, inject, parts);
		/* descriptors 0-2 that the user closed reach the job closed */
		for (int fd = 0; fd < 3; fd++)
			if (gw_std_filled & (1u << fd))
				close(fd);
		if (o->job_stdout_to_stderr) {
			/* onto stderr; where the user closed that, nowhere */
			int fd = gw_std_filled & 4u ? open("/dev/null", O_WRONLY | O_CLOEXEC) : 2;

			if (fd >= 0 && dup2(fd, 1) >= 0 && fd != 2)
				close(fd);
		}
		execvp(o->argv[0], o->argv);
		err = errno;
		if (pfd[1] < 0 || write(pfd[1], &err, sizeof(err)) < 0) {
			char msg[512];
			int len = snprintf(msg, sizeof(msg), "gpuwhy: error: cannot run '%s': %s\n",
					   o->argv[0], strerror(err));

			if (!(gw_std_filled & 4u) && len > 0 && write(2, msg, (size_t)len) < 0)
				_exit(127);
		}
		_exit(err == ENOENT ? 127 : 126);
	}
	/* both sides set the group: whichever runs first, it is set before exec */
	if (own_group)
		setpgid(pid, pid);
	jobsig_job_started(pid, &old);
	if (pfd[0] >= 0) {
		close(pfd[1]);
		do
			n = read(pfd[0], &err, sizeof(err));
		while (n < 0 && errno == EINTR);
		close(pfd[0]);
	}
	if (n == sizeof(err)) {
		waitpid(pid, NULL, 0);
		jobsig_job_gone();
		return -err;
	}
	*pid_out = pid;
	return 0;
}

/* One recording from start to end: the state the steps of record_run share. */

struct session {
	struct recorder r;
	const struct record_opts *o;
	char path[PATH_MAX], inject[PATH_MAX];
	char why[PATH_MAX + 128]; /* the recording could not be set up: why */
	struct parts parts;
	struct cupti_pick cupti; /* the CUPTI the job should find */
	struct fdset user_fds;
	int made_output, made_parts, have_inject, refused;
	pid_t pid;
	int status, exit_code, merged, stopped_tracing;
	uint64_t lost, t_start;
};

/* The output name, and OUTPUT.parts beside it, must fit the file system's
 * limits: checked before anything is created or run. */
static int record__check_name(struct session *s)
{
	const char *base;
	size_t len;

	if (s->o->output && strlen(s->o->output) >= sizeof(s->path) - strlen(GW_PARTS_SUFFIX)) {
		gw_error("the output name is %zu characters long: at most %zu fit; choose a shorter "
			 "one with -o", strlen(s->o->output),
			 sizeof(s->path) - strlen(GW_PARTS_SUFFIX) - 1);
		return -ENAMETOOLONG;
	}
	if (s->o->output)
		snprintf(s->path, sizeof(s->path), "%s", s->o->output);
	else
		default_name(s->path, sizeof(s->path));
	base = strrchr(s->path, '/');
	base = base ? base + 1 : s->path;
	len = strlen(base);
	if (len + strlen(GW_PARTS_SUFFIX) > NAME_MAX) {
		gw_error("the output file name is %zu characters long: while recording gpuwhy also "
			 "makes NAME%s beside it, so a name may have at most %zu; choose a shorter "
			 "one with -o", len, GW_PARTS_SUFFIX, (size_t)NAME_MAX - strlen(GW_PARTS_SUFFIX));
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Where the line is between a recording gpuwhy refuses (the job does not
 * run: exit 125) and one it cannot make (the job runs untraced): an error
 * about the name the user chose (it exists, its folder is missing or not
 * writable, it is read-only) is the user's to fix before the job starts; a
 * resource that ran out (a full disk or quota, the file size limit, no
 * descriptor or memory left) or a failing device is not, and must never
 * cost the job its run. */
static int user_fault(int err)
{
	switch (err) {
	case EEXIST: case ENOENT: case ENOTDIR: case EISDIR: case EACCES: case EPERM:
	case EROFS: case ELOOP: case ENAMETOOLONG: case ETXTBSY:
		return 1;
	default:
		return 0;
	}
}

/* A failed step of record__open: refused (said here) or not set up (s->why). */
static int record__open_failed(struct session *s, int err, const char *what, const char *name,
			       const char *hint)
{
	if (user_fault(err)) {
		s->refused = 1;
		/* refused before the job started: say so, and where to record */
		if (!*hint)
			hint = err == ENOENT || err == ENOTDIR
				       ? " (nothing was run: its folder does not exist; create it, or name another "
					 "with -o DIR/NAME.gwr)"
			       : err == EACCES || err == EPERM || err == EROFS
				       ? " (nothing was run: record into a folder you can write, with -o "
					 "DIR/NAME.gwr)"
				       : " (nothing was run: choose another name with -o)";
		gw_error("%s %s: %s%s", what, name, strerror(err), hint);
	} else {
		snprintf(s->why, sizeof(s->why), "%s %s: %s", what, name, strerror(err));
	}
	return -err;
}

/* Creates the output file (never over an existing one) and the parts folder
 * (never over an existing one either: what gpuwhy did not make, it does not
 * remove), and in ring mode the samplers' segments. */
static int record__open(struct session *s)
{
	struct recorder *r = &s->r;
	int ret;

	r->fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (r->fd < 0) {
		if (errno == EEXIST) {
			s->refused = 1;
			gw_error("%s already exists: choose another name with -o, or remove it", s->path);
			return -EEXIST;
		}
		return record__open_failed(s, errno, "cannot create", s->path, "");
	}
	s->made_output = 1;
	ret = gw_write_file_header(r->fd);
	if (ret == 0)
		ret = gw_writer_init(&r->w, r->fd, 0, 3, 256 << 10);
	if (ret < 0) /* a write that failed is a resource (the disk), never the name */
		return record__open_failed(s, user_fault(-ret) ? EIO : -ret, "cannot write", s->path, "");
	ret = parts_create(&s->parts, s->path);
	if (ret < 0)
		return record__open_failed(s, -ret, "cannot create", s->parts.path[0] ? s->parts.path : s->path,
					   ret == -EEXIST ? " (left by a gpuwhy that was killed? read it with "
							    "'gpuwhy report', then remove it, or choose "
							    "another name)" : "");
	s->made_parts = 1;
	if (s->o->ring) {
		/* the samplers keep their newest quarter of the budget in 8 segments */
		int sfd = gw_seg_open_at(&r->seg, s->parts.dfd, GW_PARTS_SAMPLER_PREFIX,
					 s->o->max_size / 32, 8);

		ret = sfd < 0 ? sfd : gw_writer_init(&r->ring_w, sfd, 0, 3, 256 << 10);
		if (ret < 0)
			return record__open_failed(s, user_fault(-ret) ? EIO : -ret,
						   "cannot create the ring segments in", s->parts.path, "");
		r->ring = 1;
	}
	return 0;
}

/* Whether the job gets the injection library: not when another tool already
 * injects, when there is no driver, or when the library is not found. */
static void record__find_inject(struct session *s)
{
	unsigned major;
	const char *user_inject = getenv("CUDA_INJECTION64_PATH");
	char *mine = NULL, *theirs = NULL, prog[PATH_MAX], dirs[4096];

	if (s->o->no_inject)
		return;
	/* the CUPTI the job will find decides the library's CUDA major; the
	 * job's site-packages reach the library's own search in GW_ENV_CUPTI_DIRS
	 * (set here, before any thread starts, and inherited by the job) */
	job_program(s->o->argv[0], prog, sizeof(prog));
	gw_cupti_site_dirs(prog[0] ? prog : NULL, dirs, sizeof(dirs));
	if (dirs[0])
		setenv(GW_ENV_CUPTI_DIRS, dirs, 0);
	gw_cupti_search(prog[0] ? prog : NULL, pick_cupti, &s->cupti, NULL);
	major = s->cupti.major;
	if (user_inject && *user_inject && find_inject_lib(s->inject, sizeof(s->inject), major) == 0) {
		mine = realpath(s->inject, NULL);
		theirs = realpath(user_inject, NULL);
	}
	if (user_inject && *user_inject && !(mine && theirs && !strcmp(mine, theirs)))
		/* Another tool (Nsight, a profiler) injects into the job: its
		 * setting is the user's, kept as it is; CUPTI serves one tool. */
		gw_warn("CUDA_INJECTION64_PATH is already set (%s): that tool is left in place "
			"and gpuwhy records NVML and host data only; unset it to let gpuwhy "
			"trace the GPU", user_inject);
	else if (!have_cuda_driver())
		gw_note("no NVIDIA driver found (libcuda.so.1 cannot be loaded): recording "
			"host-side data only");
	else if (find_inject_lib(s->inject, sizeof(s->inject), major) < 0)
		gw_warn("libgpuwhy-inject-cu*.so not found next to gpuwhy or in ../lib/gpuwhy (it "
			"is built only where CUPTI headers are installed): recording NVML and host "
			"data only; set " GW_ENV_INJECT_LIB " to its path if it lives elsewhere");
	else
		s->have_inject = 1;
	/* NVTX ranges reach CUPTI through NVTX's hook: the injection library
	 * passes them to the very CUPTI it traces with (inject.c); a user's own
	 * setting (another tool's) stays */
	if (s->have_inject)
		setenv("NVTX_INJECTION64_PATH", s->inject, 0);
	free(mine);
	free(theirs);
}

/* NVML, then the metadata that describes how the recording is made. */
static void record__write_meta(struct session *s)
{
	struct recorder *r = &s->r;
	char why[256], buf[32];
	int ngpu = have_cuda_driver() ? gpu_open(why, sizeof(why)) : -ENOENT;

	if (ngpu < 0 && have_cuda_driver())
		gw_note("%s: NVML samples are not recorded", why);
	r->ngpus = ngpu > 0 ? (unsigned)ngpu : 0;
	meta_record_host(r, s->o->argv);
	meta_record_gpus(r);
	rec_meta(r, "record.inject", s->have_inject ? "yes" : "no");
	if (s->have_inject) /* what the job should find; the library records what it used */
		rec_meta(r, "record.cupti", s->cupti.path[0] ? s->cupti.path : "none before the loader's path");
	rec_meta(r, "record.launch_calls", s->o->trace_launches ? "traced" : "not traced");
	rec_meta(r, "record.sync_records",
		 s->o->sync_records ? "on request" : "only without host calls");
	if (s->o->ring) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)s->o->max_size);
		rec_meta(r, "record.ring_bytes", buf);
	}
	pthread_mutex_lock(&r->lock);
	gw_flush(&r->w);
	pthread_mutex_unlock(&r->lock);
}

/* Says why the job could not start; the exit status for it. */
static int cannot_run(const char *prog, int err)
{
	gw_error("cannot run '%s': %s%s", prog, strerror(-err),
		 err == -ENOENT ? " (is it installed and on PATH?)" : "");
	return err == -ENOENT ? 127 : 126;
}

/* Starts the job, records it as the first process, starts the samplers. */
static int record__start(struct session *s)
{
	struct recorder *r = &s->r;
	const struct record_opts *o = s->o;
	char *cmd = NULL;
	int own_group = job_needs_own_group(), ret;

	jobsig_catch(own_group);
	cloexec_all_but(&s->user_fds);
	ret = spawn(o, s->have_inject ? s->inject : NULL, s->parts.path, own_group, &s->pid);
	if (ret < 0) {
		s->exit_code = cannot_run(o->argv[0], ret);
		return ret;
	}
	r->target = s->pid;
	/* The target itself, now: a short job may be gone before the first sample. */
	if (!o->redact) { /* secret-looking values out (format/envlist.c) */
		size_t n = gw_argv_scrubbed(o->argv, NULL, 0) + 1;

		if ((cmd = malloc(n)))
			gw_argv_scrubbed(o->argv, cmd, n);
	}
	uint64_t v[GW_PROC_NF] = { gw_now_ns(), (uint64_t)s->pid, (uint64_t)getpid(), 0,
				   rec_intern(r, o->redact ? "[redacted]" : cmd ? cmd : ""), 1 };
	rec_emit(r, GW_REC_PROCESS, v, GW_PROC_NF);
	free(cmd);
	s->t_start = gw_now_ns();
	if (samplers_start(r) < 0)
		gw_warn("could not start the samplers: recording the CUDA timeline only");
	return 0;
}

/* Bound the recording, never the job: past --duration or --max-size the
 * injection library is told to stop and the target runs on untraced. */
static void record__check_limits(struct session *s, uint64_t now)
{
	const struct record_opts *o = s->o;
	int by_time = o->duration_s > 0 && (double)(now - s->t_start) / 1e9 >= o->duration_s;

	if (s->stopped_tracing)
		return;
	if (!by_time && !(o->max_size && !o->ring &&
			  s->r.w.bytes_written + parts_size(&s->parts) >= o->max_size))
		return;
	parts_stop(&s->parts);
	samplers_stop(&s->r);
	rec_meta(&s->r, "record.stopped_early", by_time ? "duration" : "max-size");
	gw_note("recording limit reached: the target keeps running, no longer traced");
	s->stopped_tracing = 1;
}

/* The status gpuwhy exits with for the job's: its exit code, or 128+N
 * after signal N. */
static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 125;
}

/* Waits for the job, flushing every second; returns its exit status. */
static void record__wait(struct session *s)
{
	uint64_t last_flush = gw_now_ns();

	for (;;) {
		struct timespec nap = { 0, 50 * 1000000L };
		pid_t w = waitpid(s->pid, &s->status, WNOHANG);
		uint64_t now;

		if (w == s->pid)
			break;
		if (w < 0 && errno != EINTR) {
			gw_error("lost track of the target: %s", strerror(errno));
			break;
		}
		nanosleep(&nap, NULL);
		now = gw_now_ns();
		if (now - last_flush < 1000000000ull)
			continue;
		last_flush = now;
		flush_all(&s->r);
		record__check_limits(s, now);
	}
	samplers_stop(&s->r);
	s->exit_code = exit_code(s->status);
}

static void meta_u64(struct recorder *r, const char *key, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", v);
	rec_meta(r, key, buf);
}

/* Merges the parts folder into the output through the descriptor held
 * since its creation, whatever its name points to now; removes it when
 * nothing else is left in it. */
static void record__merge(struct session *s)
{
	struct parts_merge m;
	int renamed = !parts_still_named(&s->parts);
	int ret = parts_merge(s->parts.dfd, &s->r.w, &m);

	if (ret < 0) {
		/* nothing merged: the report reads the folder */
		gw_warn("cannot read %s (%s): its traced streams stay in it, which 'gpuwhy report %s' "
			"reads too", s->parts.path, strerror(-ret), s->path);
		s->lost = 1;
		return;
	}
	s->merged = (int)m.streams;
	s->lost = m.lost;
	if (m.lost)
		gw_warn("could not merge %s: %s", m.lost_name, m.lost_why);
	if (m.damaged)
		gw_note("%s was damaged (%s): its damaged bytes were left out, every valid chunk "
			"before and after them was kept%s", m.damaged_name, m.damaged_why,
			m.damaged > 1 ? " (and so for other streams)" : "");
	if (renamed)
		gw_warn("%s was renamed or replaced while the job ran: gpuwhy merged the streams of "
			"the folder it made and left what the name points to now untouched", s->parts.path);
	if (m.foreign)
		gw_warn("%s holds %u entr%s gpuwhy did not make (%s): left as %s, and so is the folder",
			s->parts.path, m.foreign, m.foreign == 1 ? "y" : "ies", m.foreign_name,
			m.foreign == 1 ? "it is" : "they are");
	if (s->lost)
		return;
	ret = parts_remove(&s->parts, 0);
	/* an entry the merge did not see (a stop file the job made) */
	if (ret < 0 && !m.foreign)
		gw_warn("%s is left: %s", s->parts.path,
			ret == -ENOTEMPTY || ret == -EEXIST ? "it holds an entry gpuwhy did not make"
							    : strerror(-ret));
}

/* The job's end, the merged streams, and the metadata that says the file is
 * complete. */
static void record__finish(struct session *s)
{
	struct recorder *r = &s->r;
	int st = s->status;
	char buf[16];
	uint64_t v[GW_PEXIT_NF] = { gw_now_ns(), (uint64_t)s->pid,
				    (uint64_t)(int64_t)(WIFSIGNALED(st) ? -WTERMSIG(st) : WEXITSTATUS(st)) };

	rec_emit(r, GW_REC_PROC_EXIT, v, GW_PEXIT_NF);
	flush_all(r);
	if (r->ring) {
		gw_seg_close(&r->seg);
		meta_u64(r, "record.ring_sampler_segments_dropped", r->seg.dropped);
	}
	record__merge(s);
	meta_u64(r, "record.inject_streams", (unsigned long long)s->merged);
	meta_record_clock(r, "end"); /* with the start pair: the clock's drift (src/job/align.c) */
	meta_u64(r, "record.end_ns", gw_now_ns());
	snprintf(buf, sizeof(buf), "%d", s->exit_code);
	rec_meta(r, "record.exit_status", buf);
	meta_u64(r, "record.sampler_records_lost", r->w.records_lost);
	if (jobsig_last())
		meta_u64(r, "record.signal", (unsigned long long)jobsig_last());
	/* with streams left in the parts folder, the report must read it too */
	if (!s->lost)
		rec_meta(r, "record.complete", "1");
	pthread_mutex_lock(&r->lock);
	gw_flush(&r->w);
	pthread_mutex_unlock(&r->lock);
	if (r->w.error)
		gw_warn("writing %s failed (%s): %llu records were lost; the file holds what was "
			"written before", s->path, strerror(-r->w.error),
			(unsigned long long)r->w.records_lost);
	if (s->lost)
		gw_warn("%llu traced stream(s) could not be merged into %s: they are kept in %s, "
			"which 'gpuwhy report %s' reads too; keep that folder next to the file",
			(unsigned long long)s->lost, s->path, s->parts.path, s->path);
	fsync(r->fd);
}

/* Releases everything; on failure (keep == 0) also removes what gpuwhy
 * created, and only that. */
static void record__close(struct session *s, int keep)
{
	struct recorder *r = &s->r;

	jobsig_restore();
	gw_seg_close(&r->seg);
	if (r->ring)
		gw_writer_free(&r->ring_w);
	gw_writer_free(&r->w);
	if (r->fd >= 0)
		close(r->fd);
	if (!keep && s->made_output)
		unlink(s->path);
	if (!keep && s->made_parts)
		parts_remove(&s->parts, 1);
	parts_close(&s->parts);
	gpu_close();
}

/* The job without a recording, when none could be set up: the same
 * signals, descriptors and exit status as a recorded one. */
static int run_untraced(struct session *s)
{
	int own_group = job_needs_own_group(), ret;

	jobsig_catch(own_group);
	cloexec_all_but(&s->user_fds);
	ret = spawn(s->o, NULL, NULL, own_group, &s->pid);
	if (ret < 0) {
		jobsig_restore();
		return cannot_run(s->o->argv[0], ret);
	}
	while (waitpid(s->pid, &s->status, 0) < 0) {
		if (errno != EINTR) {
			gw_error("lost track of the job: %s", strerror(errno));
			s->status = 125 << 8;
			break;
		}
	}
	jobsig_restore();
	return exit_code(s->status);
}

int record_run(const struct record_opts *o, char **out_path)
{
	struct session s = { .r = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .opts = o },
			     .o = o, .exit_code = 125, .parts = { .parent = -1, .dfd = -1 } };
	int ret;

	*out_path = NULL;
	jobsig_save_caller();
	if (record__check_name(&s) < 0)
		return 125;
	list_fds(&s.user_fds);
	if (record__open(&s) < 0) {
		if (s.refused)
			goto fail;
		/* a resource ran out: the job runs all the same (user_fault) */
		record__close(&s, 0);
		gw_warn("cannot set up the recording (%s): the job runs untraced and nothing is "
			"recorded", s.why);
		ret = run_untraced(&s);
		free(s.user_fds.fd);
		return ret;
	}
	record__find_inject(&s);
	record__write_meta(&s);
	if (record__start(&s) < 0)
		goto fail;
	record__wait(&s);
	record__finish(&s);
	record__close(&s, 1);
	free(s.user_fds.fd);
	*out_path = strdup(s.path);
	if (!gw_quiet)
		gw_note("recorded %s (%s)", s.path,
			s.merged ? "GPU timeline and host samples"
				 : s.have_inject ? "host samples only: the target made no CUDA calls"
						 : "host samples only");
	return s.exit_code;

fail:
	record__close(&s, 0);
	free(s.user_fds.fd);
	return s.exit_code;
}
