/* The Python stack reader (src/pystack) on live interpreters: the local
 * python3 and every CPython 3.10-3.13 found under ~/.pyenv (or $PYSTACK_PYTHONS,
 * a space-separated list). Each runs a known program: the exact files,
 * functions and lines of two threads, read from outside; the same read from
 * inside the process (ctypes loads build/tests/pystack_self.so); every
 * code object's line table against co_lines(); a non-Python process. */
#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pystack/pystack.h"
#include "t.h"

extern char **environ;

/* Line numbers below refer to this program. */
static const char prog[] =
	"import sys, threading\n"                                   /* 1 */
	"\n"                                                        /* 2 */
	"def inner(stop):\n"                                        /* 3 */
	"    while not stop[0]: pass\n"                             /* 4 */
	"\n"                                                        /* 5 */
	"def middle(stop):\n"                                       /* 6 */
	"    return inner(stop)\n"                                  /* 7 */
	"\n"                                                        /* 8 */
	"def outer(stop):\n"                                        /* 9 */
	"    return middle(stop)\n"                                 /* 10 */
	"\n"                                                        /* 11 */
	"class Worker:\n"                                           /* 12 */
	"    def run(self, stop):\n"                                /* 13 */
	"        return outer(stop)\n"                              /* 14 */
	"\n"                                                        /* 15 */
	"stop = [False]\n"                                          /* 16 */
	"t = threading.Thread(target=Worker().run, args=(stop,))\n" /* 17 */
	"t.start()\n"                                               /* 18 */
	"print('ready', sys.version_info.minor, flush=True)\n"      /* 19 */
	"try:\n"                                                    /* 20 */
	"    outer(stop)\n"                                         /* 21 */
	"finally:\n"                                                /* 22 */
	"    stop[0] = True\n";                                     /* 23 */

/* The in-process read: the stack as pystack_self() sees it from inner(). */
static const char selfprog[] =
	"import ctypes, sys\n"                                      /* 1 */
	"lib = ctypes.CDLL(sys.argv[1])\n"                          /* 2 */
	"def inner():\n"                                            /* 3 */
	"    buf = ctypes.create_string_buffer(16384)\n"            /* 4 */
	"    lib.pystack_self(buf, 16384)\n"                        /* 5 */
	"    return buf.value.decode()\n"                           /* 6 */
	"def middle():\n"                                           /* 7 */
	"    return inner()\n"                                      /* 8 */
	"def outer():\n"                                            /* 9 */
	"    return middle()\n"                                     /* 10 */
	"sys.stdout.write(outer())\n";                              /* 11 */

/* Every code object of some stdlib modules and of itself: "C firstlineno
 * hex(co_linetable)" then "L start end line" per co_lines() range. */
static const char linesprog[] =
	"import sys, types, importlib\n"
	"def walk(co):\n"
	"    print('C', co.co_firstlineno, co.co_linetable.hex())\n"
	"    for s, e, l in co.co_lines():\n"
	"        print('L', s, e, -1 if l is None else l)\n"
	"    for c in co.co_consts:\n"
	"        if isinstance(c, types.CodeType): walk(c)\n"
	"for m in ('threading', 'json.decoder', 'argparse', 'dataclasses'):\n"
	"    mod = importlib.import_module(m)\n"
	"    walk(compile(open(mod.__file__).read(), mod.__file__, 'exec'))\n";

static char dir[64];

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Starts python with args; its stdout on *out. */
static pid_t spawn(const char *python, const char *a1, const char *a2, FILE **out)
{
	int fds[2];
	pid_t pid;
	posix_spawn_file_actions_t fa;
	char *argv[] = { (char *)python, (char *)a1, (char *)a2, NULL };

	if (pipe(fds))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	if (posix_spawnp(&pid, python, &fa, NULL, argv, environ))
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	*out = fdopen(fds[0], "r");
	return pid;
}

static int finish(pid_t pid, FILE *f, int kill_it)
{
	int st = 0;

	if (kill_it)
		kill(pid, SIGKILL);
	if (f)
		fclose(f);
	waitpid(pid, &st, 0);
	return st;
}

static int frame_is(const struct py_frame *f, const char *file, const char *func, uint32_t line)
{
	return f->file && f->func && !strcmp(f->file, file) && !strcmp(f->func, func) && f->line == line;
}

struct each_seen {
	pid_t pid;
	const char *path;
	int calls, main_ok, worker_ok;
};

static void each_seen_cb(void *arg, pid_t tid, const struct py_frame *f, int d)
{
	struct each_seen *e = arg;

	e->calls++;
	if (d < 4 || !frame_is(&f[0], e->path, "inner", 4) || !frame_is(&f[2], e->path, "outer", 10))
		return;
	if (tid == e->pid)
		e->main_ok = d == 4 && frame_is(&f[3], e->path, "<module>", 21);
	else
		e->worker_ok = d >= 5;
}

/* Outside read of the two busy threads. */
static void test_live(const char *python, int minor)
{
	char path[128], why[256], line[64];
	struct py_frame fr[128];
	pid_t tids[16];
	struct py_proc *p = NULL;
	FILE *out;
	pid_t pid;
	int n = -1, err, got_minor = -1;


	snprintf(path, sizeof(path), "%s/prog.py", dir);
	write_file(path, prog);
	pid = spawn(python, path, NULL, &out);
	CHECK(pid > 0, "%s: started", python);
	if (pid <= 0)
		return;
	if (fgets(line, sizeof(line), out))
		sscanf(line, "ready %d", &got_minor);
	CHECK(got_minor == minor, "%s: the program ran (minor %d)", python, got_minor);
	err = py_proc_open(&p, pid, why, sizeof(why));
	CHECK(err == 0, "%s: py_proc_open = %d (%s)", python, err, why);
	if (err) {
		finish(pid, out, 1);
		return;
	}
	snprintf(line, sizeof(line), "3.%d", minor);
	CHECK(!strncmp(py_proc_version(p), line, strlen(line)) &&
		      (py_proc_version(p)[strlen(line)] == '.' || minor == 10),
	      "%s: version %s", python, py_proc_version(p));
	/* The program may not have reached its loops yet: read until both
	 * threads are there (at most 5 s), then check what was read. */
	int main_ok = 0, worker_ok = 0, dm = -1, dw = -1;
	struct py_frame fm[128];
	for (int attempt = 0; attempt < 500 && !(main_ok && worker_ok); attempt++) {
		if (attempt)
			usleep(10000);
		n = py_proc_threads(p, tids, 16);
		for (int i = 0; i < n && i < 16; i++) {
			int d = -EAGAIN;
			/* Samples may race with the running interpreter: retry those. */
			for (int t = 0; t < 100 && d == -EAGAIN; t++)
				d = py_proc_stack(p, tids[i], tids[i] == pid ? fm : fr, 128);
			if (tids[i] == pid) {
				dm = d;
				main_ok = d == 4 && frame_is(&fm[0], path, "inner", 4) &&
					  frame_is(&fm[1], path, "middle", 7) && frame_is(&fm[2], path, "outer", 10) &&
					  frame_is(&fm[3], path, "<module>", 21);
			} else {
				dw = d;
				/* co_qualname from 3.11 on; 3.10 has co_name only */
				worker_ok = d >= 5 && frame_is(&fr[0], path, "inner", 4) &&
					    frame_is(&fr[1], path, "middle", 7) && frame_is(&fr[2], path, "outer", 10) &&
					    frame_is(&fr[3], path, minor == 10 ? "run" : "Worker.run", 14) &&
					    strstr(fr[4].file, "threading.py") &&
					    !strcmp(fr[4].func, minor == 10 ? "run" : "Thread.run") &&
					    !strcmp(fr[d - 1].func, minor == 10 ? "_bootstrap" : "Thread._bootstrap");
			}
		}
	}
	CHECK(n == 2, "%s: %d Python threads", python, n);
	CHECK(main_ok, "%s: main thread: depth %d, [0] %s %s:%u [3] %s:%u", python, dm, dm > 0 ? fm[0].func : "",
	      dm > 0 ? fm[0].file : "", dm > 0 ? fm[0].line : 0, dm > 3 ? fm[3].func : "", dm > 3 ? fm[3].line : 0);
	CHECK(worker_ok, "%s: worker thread: depth %d, [0] %s:%u [3] %s:%u", python, dw, dw > 0 ? fr[0].func : "",
	      dw > 0 ? fr[0].line : 0, dw > 3 ? fr[3].func : "", dw > 3 ? fr[3].line : 0);
	CHECK(main_ok && worker_ok, "%s: both threads' stacks", python);
	/* A truncated read: the innermost frames. */
	int d = -EAGAIN;
	for (int t = 0; t < 100 && d == -EAGAIN; t++)
		d = py_proc_stack(p, pid, fr, 2);
	CHECK(d == 2 && frame_is(&fr[0], path, "inner", 4), "%s: max 2 gives %d", python, d);
	d = py_proc_stack(p, 1, fr, 128);
	CHECK(d == -ESRCH, "%s: a tid that is no Python thread: %d", python, d);
	/* One walk, every thread: the same innermost frames as above. */
	struct each_seen seen = { .pid = pid, .path = path };
	for (int t = 0; t < 100 && !(seen.main_ok && seen.worker_ok); t++) {
		seen.calls = seen.main_ok = seen.worker_ok = 0;
		py_proc_each_stack(p, fr, 128, each_seen_cb, &seen);
	}
	CHECK(seen.calls == 2 && seen.main_ok && seen.worker_ok,
	      "%s: py_proc_each_stack: %d threads, main %d, worker %d", python, seen.calls, seen.main_ok,
	      seen.worker_ok);
	py_proc_close(p);
	finish(pid, out, 1);
}

/* Inside read: the process reads its own stack. */
static void test_self(const char *python, const char *so)
{
	char path[128], buf[4096] = "";
	FILE *out;
	pid_t pid;
	size_t n;
	int depth = -999;

	snprintf(path, sizeof(path), "%s/self.py", dir);
	write_file(path, selfprog);
	pid = spawn(python, path, so, &out);
	if (pid <= 0) {
		CHECK(0, "%s: started", python);
		return;
	}
	n = fread(buf, 1, sizeof(buf) - 1, out);
	buf[n] = 0;
	int st = finish(pid, out, 0);
	sscanf(buf, "%d", &depth);
	char want[1024];
	snprintf(want, sizeof(want), "4\ninner|%s|5\nmiddle|%s|8\nouter|%s|10\n<module>|%s|11\n", path, path, path,
		 path);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strcmp(buf, want), "%s: in-process read:\n%s", python,
	      buf);
}

/* py_linetable_line against co_lines() for every instruction of many code objects. */
static void test_linetables(const char *python, int minor)
{
	char path[128], *line = NULL;
	uint8_t *lt = NULL;
	size_t cap = 0, ltlen = 0;
	int first = 0, codes = 0, checked = 0, wrong = 0;
	FILE *out;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/lines.py", dir);
	write_file(path, linesprog);
	pid = spawn(python, path, NULL, &out);
	if (pid <= 0) {
		CHECK(0, "%s: started", python);
		return;
	}
	while (getline(&line, &cap, out) > 0) {
		if (line[0] == 'C') {
			char *hex = strchr(line + 2, ' ');
			first = atoi(line + 2);
			hex = hex ? hex + 1 : line;
			ltlen = strspn(hex, "0123456789abcdef") / 2;
			free(lt);
			lt = malloc(ltlen + 1);
			for (size_t i = 0; i < ltlen; i++)
				sscanf(hex + 2 * i, "%2hhx", &lt[i]);
			codes++;
		} else if (line[0] == 'L' && lt) {
			int s, e, l;
			if (sscanf(line, "L %d %d %d", &s, &e, &l) != 3)
				continue;
			for (int a = s; a < e; a += 2) {
				int got = py_linetable_line(minor, lt, ltlen, first, a);
				checked++;
				if (got != l && wrong++ < 3)
					printf("  %s: offset %d: line %d, co_lines says %d\n", python, a, got, l);
			}
		}
	}
	free(line);
	free(lt);
	finish(pid, out, 0);
	CHECK(codes > 200 && checked > 10000 && wrong == 0, "%s: %d code objects, %d offsets, %d wrong", python,
	      codes, checked, wrong);
}

static void test_not_python(void)
{
	struct py_proc *p = (void *)1;
	char why[256] = "";
	pid_t pid;
	char *argv[] = { "sleep", "30", NULL };
	int err;

	if (posix_spawnp(&pid, "sleep", NULL, NULL, argv, environ)) {
		CHECK(0, "sleep started");
		return;
	}
	usleep(100000);
	err = py_proc_open(&p, pid, why, sizeof(why));
	CHECK(err == -ENOENT && p == NULL && strstr(why, "not a Python process"), "/bin/sleep: %d (%s)", err, why);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	err = py_proc_open(&p, pid, why, sizeof(why)); /* reaped: no such process */
	CHECK(err == -ESRCH && strstr(why, "no process"), "a gone process: %d (%s)", err, why);
}

/* A Python that has imported many extension modules (every one a mapping
 * whose name holds "python": x.cpython-311-x86_64-linux-gnu.so) is found,
 * libpython3.X.so builds included. */
static void test_many_extensions(const char *python)
{
	static const char extprog[] =
		"import importlib, pkgutil, sys, time\n"
		"n = 0\n"
		"for m in pkgutil.iter_modules([d for d in sys.path if d.endswith('lib-dynload')]):\n"
		"    try: importlib.import_module(m.name); n += 1\n"
		"    except Exception: pass\n"
		"print(n, flush=True)\n"
		"time.sleep(30)\n";
	char why[256];
	struct py_proc *p = NULL;
	FILE *out;
	int n = 0, err;
	pid_t pid = spawn(python, "-c", extprog, &out);

	if (pid <= 0 || !out || fscanf(out, "%d", &n) != 1) {
		CHECK(0, "%s: the extension-module program started", python);
		finish(pid, out, 1);
		return;
	}
	err = py_proc_open(&p, pid, why, sizeof(why));
	CHECK(n < 20 || (err == 0 && p), "%s with %d extension modules imported: %d (%s)", python, n, err, why);
	py_proc_close(p);
	finish(pid, out, 1);
}

/* The version a python binary runs (its minor), or -1. */
static int python_minor(const char *python)
{
	FILE *out;
	int minor = -1;
	pid_t pid = spawn(python, "-c", "import sys; print(sys.version_info.minor)", &out);

	if (pid <= 0)
		return -1;
	if (fscanf(out, "%d", &minor) != 1)
		minor = -1;
	int st = finish(pid, out, 0);
	return WIFEXITED(st) && !WEXITSTATUS(st) ? minor : -1;
}

int main(int argc, char **argv)
{
	char so[4096], *slash;
	const char *list = getenv("PYSTACK_PYTHONS");
	char *pythons[16];
	int npy = 0, tested[16] = { 0 };
	glob_t g = { 0 };
	ssize_t k;

	(void)argc;
	k = readlink("/proc/self/exe", so, sizeof(so) - 32);
	so[k > 0 ? k : 0] = 0;
	slash = strrchr(so, '/');
	strcpy(slash ? slash + 1 : so, "pystack_self.so");
	if (access(so, R_OK))
		fprintf(stderr, "note: %s not built (make check builds it)\n", so);
	(void)argv;

	strcpy(dir, "/tmp/gw-pystack-XXXXXX");
	if (!mkdtemp(dir)) {
		CHECK(0, "a temporary directory");
		T_DONE();
	}
	test_not_python();

	pythons[npy++] = "python3";
	if (list) {
		char *copy = strdup(list);
		for (char *t = strtok(copy, " "); t && npy < 16; t = strtok(NULL, " "))
			pythons[npy++] = t;
	} else {
		char pat[512];
		snprintf(pat, sizeof(pat), "%s/.pyenv/versions/3.1[0-3].*/bin/python3.1[0-3]",
			 getenv("HOME") ? getenv("HOME") : "/root");
		if (!glob(pat, 0, NULL, &g))
			for (size_t i = 0; i < g.gl_pathc && npy < 16; i++)
				pythons[npy++] = g.gl_pathv[i];
	}
	int any = 0;
	for (int i = 0; i < npy; i++) {
		int minor = python_minor(pythons[i]);
		if (minor < 0) {
			printf("skip %s: not runnable\n", pythons[i]);
			continue;
		}
		if (minor < 10 || minor > 13 || tested[minor - 10]) {
			if (minor < 10 || minor > 13)
				printf("skip %s: Python 3.%d is not supported\n", pythons[i], minor);
			continue;
		}
		tested[minor - 10] = 1;
		any = 1;
		printf("%s: Python 3.%d\n", pythons[i], minor);
		test_live(pythons[i], minor);
		if (!access(so, R_OK))
			test_self(pythons[i], so);
		test_linetables(pythons[i], minor);
		test_many_extensions(pythons[i]);
	}
	if (!any)
		printf("skip: no python3 installed: the live reads are not tested\n");
	globfree(&g);
	for (const char *f = "prog.py\0self.py\0lines.py\0"; *f; f += strlen(f) + 1) {
		char path[128];
		snprintf(path, sizeof(path), "%s/%s", dir, f);
		unlink(path);
	}
	rmdir(dir);
	T_DONE();
}
