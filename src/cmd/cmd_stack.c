/* gpuwhy stack: the Python stack of every thread of a running process, read
 * from outside it (src/pystack), like py-spy dump. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../pystack/pystack.h"
#include "../util/args.h"
#include "../util/escape.h"
#include "../util/util.h"
#include "cmds.h"

#define MAX_FRAMES 128
#define RETRIES 20 /* a read that races with the interpreter is retried */

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuwhy stack PID\n\n"
		   "Print the Python stack of every thread of the running Python process PID,\n"
		   "innermost frame first, without stopping it (CPython 3.10 to 3.13, x86_64).\n"
		   "Reading another process's memory needs root, or the same user with\n"
		   "kernel.yama.ptrace_scope=0.\n\n"
		   "options:\n"
		   "  -h, --help        this help\n");
}

int cmd_stack(int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	struct py_frame frames[MAX_FRAMES];
	pid_t tids[1024];
	struct py_proc *p;
	char why[512];
	long pid;
	int c, n, err, rc = 0;

	while ((c = gw_getopt(argc, argv, "h", opts, "")) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "'gpuwhy stack --help' lists the options\n");
		return 2;
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	if (gw_parse_long(argv[optind], 1, INT_MAX, &pid) < 0) {
		gw_error("'%s' is not a process id", argv[optind]);
		return 2;
	}
	err = py_proc_open(&p, (pid_t)pid, why, sizeof(why));
	if (err) {
		gw_error("%s", why);
		return 1;
	}
	printf("Process %ld: Python %s\n", pid, py_proc_version(p));
	for (int t = 0; t < RETRIES && (n = py_proc_threads(p, tids, 1024)) == -EAGAIN; t++)
		;
	if (n < 0) {
		gw_error("cannot list the Python threads of process %ld: %s", pid, strerror(-n));
		py_proc_close(p);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int d = -EAGAIN;

		for (int t = 0; t < RETRIES && d == -EAGAIN; t++)
			d = py_proc_stack(p, tids[i], frames, MAX_FRAMES);
		printf("\nThread %d%s:\n", (int)tids[i], tids[i] == pid ? " (main)" : "");
		if (d < 0) {
			printf("  (stack not readable: %s)\n", strerror(-d));
			rc = 1;
			continue;
		}
		if (d == 0)
			printf("  (no Python frame: idle or in native code)\n");
		/* names read from another process: escaped, one frame a line */
		for (int k = 0; k < d; k++) {
			fputs("  ", stdout);
			fput_escaped(stdout, frames[k].func, strlen(frames[k].func), 0);
			fputs(" (", stdout);
			fput_escaped(stdout, frames[k].file, strlen(frames[k].file), 0);
			printf(":%u)\n", frames[k].line);
		}
	}
	py_proc_close(p);
	return rc;
}
