/* The Python stack sampler: a thread of gpuwhy that reads, at --py-rate Hz
 * (default 100), the Python stack of every thread of every Python process
 * of the job's tree (the training process and its data-loader workers) with
 * the stack reader (src/pystack/), from outside the process: the job is
 * never stopped or signalled.
 *
 * Stacks are interned as a trie (format.h), so a sample is one record of a
 * few bytes: ts, pid, tid, stack id. Samples are change-compressed: a
 * thread's sample is written when its stack differs from the last one
 * written for it, and at least once a second while it stays the same
 * (PY_KEYFRAME_NS), so a reader holds a stack until the thread's next
 * sample and at most that long; a thread that left Python code gets one
 * sample of stack 0. A process is opened when first seen, and again when it
 * exec()s; a process the reader cannot read gets one py_status record with
 * the reason when it leaves the tree or the recording ends, and no retries
 * until it exec()s. A read that races with the interpreter drops that
 * sample and is counted (py_status.dropped). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../pystack/pystack.h"
#include "../util/util.h"
#include "../procfs/procfs.h"
#include "record.h"

#define PY_MAX_PROCS 256
#define PY_MAX_THREADS 256  /* per process */
#define PY_MAX_DEPTH 128
#define PY_KEYFRAME_NS 1000000000ull
#define PY_MAX_NODES (1u << 20) /* frames and stacks each: beyond, samples carry stack 0 */
#define PY_RETRIES 25           /* transient open failures, 200 ms apart: an interpreter
                                 * still starting (a slow or loaded machine) gets 5 s */
#define PY_NOTPY_RETRIES 3      /* "not Python", 200 ms apart: the kernel names the new
                                 * executable before it maps it, so an exec() caught in
                                 * between looks like no Python at all */
/* Thread states are read through descriptors held open (a pread is a few
 * us, an open several times that); at most this many, so that a job of
 * thousands of threads cannot exhaust gpuwhy's descriptors: threads beyond
 * get state 0 (unknown). */
#define PY_MAX_STATFDS 128

struct py_thread {
	uint32_t tid, stack;
	uint64_t last_ts;
	uint64_t seen; /* tick of the last read */
	int statfd;    /* /proc/PID/task/TID/stat, held open (-1: none) */
	uint8_t state; /* GW_PYSTATE_* written last */
};

struct py_pstate {
	uint32_t pid;
	dev_t dev;
	ino_t ino;               /* of /proc/PID/exe: a change means exec() */
	struct py_proc *p;       /* NULL: not readable (code says why) */
	int code, tries;
	char detail[200];
	uint64_t samples, dropped, next_try, seen_tick;
	struct py_thread th[PY_MAX_THREADS];
	unsigned nth;
};

struct py_sampler {
	struct recorder *r;
	pthread_t thread;
	int started;
	struct gw_pytrie *trie;
	struct py_pstate *ps;
	unsigned nps;
};

static struct py_sampler S;
static unsigned statfds; /* descriptors held in py_thread.statfd */

static void thread_forget(struct py_thread *th)
{
	if (th->statfd >= 0) {
		close(th->statfd);
		statfds--;
	}
	th->statfd = -1;
}

/* The thread's state from its stat file: the letter after the command's
 * closing parenthesis (the command may hold any character, ')' too). */
static uint8_t thread_state(uint32_t pid, struct py_thread *th)
{
	char buf[512], *p;
	ssize_t n;

	if (th->statfd < 0 && statfds < PY_MAX_STATFDS) {
		snprintf(buf, sizeof(buf), "/proc/%u/task/%u/stat", pid, th->tid);
		th->statfd = open(buf, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (th->statfd >= 0)
			statfds++;
	}
	if (th->statfd < 0)
		return GW_PYSTATE_UNKNOWN;
	n = pread(th->statfd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		thread_forget(th); /* the thread ended */
		return GW_PYSTATE_UNKNOWN;
	}
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return GW_PYSTATE_UNKNOWN;
	switch (p[2]) {
	case 'R':
		return GW_PYSTATE_RUN;
	case 'S':
		return GW_PYSTATE_SLEEP;
	case 'D':
		return GW_PYSTATE_DISK;
	default:
		return GW_PYSTATE_UNKNOWN;
	}
}

static int exe_id(pid_t pid, dev_t *dev, ino_t *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st) < 0)
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

static void emit_status(struct recorder *r, struct py_pstate *s)
{
	pthread_mutex_lock(&r->lock);
	uint64_t v[GW_PYST_NF] = { gw_now_ns(), s->pid, (uint64_t)s->code,
				   s->detail[0] ? gw_intern(&r->w, s->detail) : 0, s->samples,
				   s->dropped };
	gw_emit(&r->w, GW_REC_PY_STATUS, v, GW_PYST_NF);
	pthread_mutex_unlock(&r->lock);
}

static void try_open(struct py_pstate *s, uint64_t now)
{
	char why[sizeof(s->detail)] = "";
	int ret = py_proc_open(&s->p, (pid_t)s->pid, why, sizeof(why));

	s->tries++;
	if (ret == 0 && s->p) {
		char link[64], exe[160];
		ssize_t n;

		/* the interpreter's own path: a launcher's pid (a pyenv shim)
		 * is told apart from the Python it started by it */
		snprintf(link, sizeof(link), "/proc/%u/exe", s->pid);
		n = readlink(link, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		s->code = GW_PY_OK;
		snprintf(s->detail, sizeof(s->detail), "Python %s%s%s", py_proc_version(s->p), exe[0] ? ", " : "",
			 exe);
		return;
	}
	s->p = NULL;
	s->code = gw_py_status_of(ret);
	snprintf(s->detail, sizeof(s->detail), "%s", why[0] ? why : strerror(-ret));
	/* retried a few times, then left until the next exec(). A Python whose
	 * symbols are not found yet may be one the dynamic loader is still
	 * mapping (a child a shell started, caught right after its exec:
	 * libpython is not in its maps yet), or one the kernel has not mapped */
	s->next_try = ((s->code == GW_PY_ERROR || s->code == GW_PY_NO_SYMBOLS) && s->tries < PY_RETRIES) ||
				      (s->code == GW_PY_NOT_PYTHON && s->tries <= PY_NOTPY_RETRIES)
			      ? now + 200000000ull
			      : UINT64_MAX;
}

/* Closes a process's reader and writes its status (it left, or exec'd). */
static void finish(struct recorder *r, struct py_pstate *s)
{
	for (unsigned i = 0; i < s->nth; i++)
		thread_forget(&s->th[i]);
	emit_status(r, s);
	if (s->p)
		py_proc_close(s->p);
	s->p = NULL;
}

static struct py_thread *thread_slot(struct py_pstate *s, uint32_t tid, uint64_t tick)
{
	unsigned free_slot = PY_MAX_THREADS;

	for (unsigned i = 0; i < s->nth; i++) {
		if (s->th[i].tid == tid)
			return &s->th[i];
		if (s->th[i].seen + 100 < tick && free_slot == PY_MAX_THREADS)
			free_slot = i; /* not seen for 100 ticks: gone */
	}
	if (s->nth < PY_MAX_THREADS)
		free_slot = s->nth++;
	else if (free_slot != PY_MAX_THREADS)
		thread_forget(&s->th[free_slot]);
	if (free_slot == PY_MAX_THREADS)
		return NULL;
	s->th[free_slot] = (struct py_thread){ .tid = tid, .stack = UINT32_MAX, .statfd = -1 };
	return &s->th[free_slot];
}

struct sample_ctx {
	struct recorder *r;
	struct py_pstate *s;
	uint64_t tick;
};

/* One thread's stack, read in the process's one walk (py_proc_each_stack). */
static void on_stack(void *arg, pid_t tid, const struct py_frame *fr, int d)
{
	struct sample_ctx *c = arg;
	struct py_pstate *s = c->s;
	struct gw_pyframe gf[PY_MAX_DEPTH];
	uint64_t now = gw_now_ns();
	struct py_thread *th;
	uint32_t stack;
	uint8_t state;

	if (d == -EAGAIN) {
		s->dropped++;
		return;
	}
	if (d < 0)
		return;
	s->samples++;
	for (int k = 0; k < d; k++)
		gf[k] = (struct gw_pyframe){ fr[k].file, fr[k].func, fr[k].line };
	stack = d ? gw_pytrie_stack(S.trie, gf, d) : 0;
	th = thread_slot(s, (uint32_t)tid, c->tick);
	if (!th)
		return;
	th->seen = c->tick;
	state = stack ? thread_state(s->pid, th) : GW_PYSTATE_UNKNOWN;
	if (stack == th->stack && state == th->state && (!stack || now - th->last_ts < PY_KEYFRAME_NS))
		return; /* unchanged: the last sample holds */
	th->stack = stack;
	th->state = state;
	th->last_ts = now;
	pthread_mutex_lock(&c->r->lock);
	gw_pytrie_emit(S.trie, &c->r->w); /* definitions before their first use */
	uint64_t v[GW_PYS_NF] = { now, s->pid, (uint64_t)tid, stack, state };
	gw_emit(c->r->ring ? &c->r->ring_w : &c->r->w, GW_REC_PY_SAMPLE, v, GW_PYS_NF);
	pthread_mutex_unlock(&c->r->lock);
}

static void sample_process(struct recorder *r, struct py_pstate *s, uint64_t tick)
{
	static struct py_frame fr[PY_MAX_DEPTH]; /* the sampler's one thread only */
	struct sample_ctx c = { r, s, tick };

	if (py_proc_each_stack(s->p, fr, PY_MAX_DEPTH, on_stack, &c) == -EAGAIN)
		s->dropped++;
}

static struct py_pstate *pstate(uint32_t pid)
{
	for (unsigned i = 0; i < S.nps; i++)
		if (S.ps[i].pid == pid)
			return &S.ps[i];
	return NULL;
}

static void *py_thread_main(void *arg)
{
	struct recorder *r = arg;
	unsigned hz = r->opts->py_hz ? r->opts->py_hz : 100;
	uint64_t period = 1000000000ull / hz, next = gw_now_ns(), tick = 0, slowest = 0;
	unsigned refresh = hz / 10 ? hz / 10 : 1, per_second = hz;
	pid_t pids[PY_MAX_PROCS];
	int np = 0;

	while (!r->stop) {
		uint64_t now = gw_now_ns(), cpu0 = sampler_thread_cpu_ns();

		if (tick % refresh == 0) {
			np = procfs_descendants(r->target, pids, PY_MAX_PROCS);
			/* processes that left the tree: their status, then their slot */
			for (unsigned i = 0; i < S.nps; i++) {
				int found = 0;

				for (int k = 0; k < np && !found; k++)
					found = (uint32_t)pids[k] == S.ps[i].pid;
				if (!found) {
					finish(r, &S.ps[i]);
					S.ps[i] = S.ps[--S.nps];
					i--;
				}
			}
		}
		for (int k = 0; k < np; k++) {
			struct py_pstate *s = pstate((uint32_t)pids[k]);
			dev_t dev = 0;
			ino_t ino = 0;

			if (!s) {
				if (S.nps >= PY_MAX_PROCS || exe_id(pids[k], &dev, &ino) < 0)
					continue;
				s = &S.ps[S.nps++];
				memset(s, 0, sizeof(*s));
				s->pid = (uint32_t)pids[k];
				s->dev = dev;
				s->ino = ino;
				s->seen_tick = tick;
				try_open(s, now);
			} else if ((s->p ? tick % per_second == (s->seen_tick % per_second) : tick % refresh == 0) &&
				   exe_id(pids[k], &dev, &ino) == 0 && (dev != s->dev || ino != s->ino)) {
				/* exec(): another program, perhaps Python now. A process not
				 * read (a launcher such as a pyenv shim, about to exec the
				 * interpreter) is looked at 10 times a second, not once */
				if (s->p || s->samples)
					finish(r, s);
				s->dev = dev;
				s->ino = ino;
				s->tries = 0;
				s->samples = s->dropped = 0;
				for (unsigned i = 0; i < s->nth; i++)
					thread_forget(&s->th[i]);
				s->nth = 0;
				try_open(s, now);
			} else if (!s->p && now >= s->next_try) {
				try_open(s, now);
			}
			if (s->p)
				sample_process(r, s, tick);
		}
		tick++;
		/* paced like the /proc sampler: a job of many deep Python threads
		 * lowers the rate, not the job's share of the CPUs (a quarter of a
		 * core at most) */
		now = gw_now_ns();
		next = sampler_next_tick(next, now, period, sampler_thread_cpu_ns() - cpu0);
		if (next - now > slowest)
			slowest = next - now;
		struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };

		while (!r->stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	for (unsigned i = 0; i < S.nps; i++)
		finish(r, &S.ps[i]);
	S.nps = 0;
	if (slowest > 2 * period) { /* the rate had to drop: the reader's hold follows it */
		char buf[32];

		snprintf(buf, sizeof(buf), "%.1f", 1e9 / (double)slowest);
		rec_meta(r, "record.py_hz_lowest", buf);
	}
	return NULL;
}

int py_sampler_start(struct recorder *r)
{
	char buf[32];

	memset(&S, 0, sizeof(S));
	if (r->opts->no_py) {
		rec_meta(r, "record.py", "off");
		return 0;
	}
	snprintf(buf, sizeof(buf), "%u", r->opts->py_hz ? r->opts->py_hz : 100);
	rec_meta(r, "record.py_hz", buf);
	snprintf(buf, sizeof(buf), "%llu", PY_KEYFRAME_NS / 1000000ull);
	rec_meta(r, "record.py_keyframe_ms", buf);
	S.r = r;
	S.trie = gw_pytrie_new(PY_MAX_NODES);
	S.ps = calloc(PY_MAX_PROCS, sizeof(*S.ps));
	if (!S.trie || !S.ps || pthread_create(&S.thread, NULL, py_thread_main, r) != 0) {
		rec_meta(r, "record.py", "could not start the Python stack sampler");
		gw_pytrie_free(S.trie);
		free(S.ps);
		S.trie = NULL;
		S.ps = NULL;
		return -EAGAIN;
	}
	rec_meta(r, "record.py", "sampled");
	S.started = 1;
	return 0;
}

void py_sampler_stop(struct recorder *r)
{
	(void)r;
	if (!S.started)
		return;
	pthread_join(S.thread, NULL);
	S.started = 0;
	gw_pytrie_free(S.trie);
	free(S.ps);
	S.trie = NULL;
	S.ps = NULL;
}
