/* gpuwhy: why is my GPU idle, and what do I change? The hub: a table of
 * subcommands (perf-style); each lives in src/cmd/. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmds.h"
#include "util/args.h"
#include "util/util.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "run", cmd_run, "record a command, then print the diagnosis" },
	{ "record", cmd_record, "record a command into a .gwr file" },
	{ "report", cmd_report, "diagnose a recording: why the GPU was idle, ranked fixes" },
	{ "diff", cmd_diff, "compare two recordings: measured speed-up, what changed" },
	{ "check", cmd_check, "check the machine: PCIe, NUMA, power, clocks, storage, CPU" },
	{ "dump", cmd_dump, "print a recording's records as text or JSON lines" },
	{ "stack", cmd_stack, "print the Python stack of every thread of a running process" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuwhy [--version] [--help] COMMAND [ARGS]\n\n"
		   "Why is my GPU idle, and what do I change?\n\ncommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nexamples:\n"
		   "  gpuwhy run -- python train.py     record the job and explain its GPU idle time\n"
		   "  gpuwhy report                     diagnose the newest recording here\n"
		   "  gpuwhy check                      check this machine before blaming the code\n"
		   "  gpuwhy diff before.gwr after.gwr  the measured speed-up of a fix, and what changed\n"
		   "\n'gpuwhy COMMAND --help' describes each command; man gpuwhy (man ./docs/gpuwhy.1 in\n"
		   "the source tree) has the rest.\n");
}

/* What was written to stdout reached it (coreutils' close_stdout): a full
 * disk or a closed pipe is an error, never a silent exit 0. 0 or -1. */
static int close_stdout(void)
{
	int err = 0;

	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout))
		err = errno ? errno : -1; /* -1: failed earlier, the cause is gone */
	if (fclose(stdout) != 0 && !err)
		err = errno ? errno : -1;
	if (!err || err == EBADF) /* EBADF: stdout was closed before we started */
		return 0;
	gw_error("write error on standard output%s%s: the output is incomplete", err > 0 ? ": " : "",
		 err > 0 ? strerror(err) : "");
	return -1;
}

static int run(int argc, char **argv);

int main(int argc, char **argv)
{
	int ret = run(argc, argv);

	if (close_stdout() < 0 && ret == 0)
		ret = 1;
	return ret;
}

static int run(int argc, char **argv)
{
	const struct command *match = NULL;
	char *help_argv[] = { NULL, NULL, "--help", NULL };
	size_t n;

	/* before anything is opened: a closed stderr must not become a file */
	gw_fill_std_fds();
	cmds_init();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (argc > 2 && !strcmp(argv[1], "help")) {
		/* 'gpuwhy help CMD' is 'gpuwhy CMD --help' */
		help_argv[0] = argv[0];
		help_argv[1] = argv[2];
		argc = 3;
		argv = help_argv;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("gpuwhy %s (recording format %d.%d)\n", GPUWHY_VERSION, 1, 0);
		return 0;
	}
	/* Exact name, or a unique prefix (bpftool-style). */
	n = strlen(argv[1]);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (!strcmp(argv[1], commands[i].name)) {
			match = &commands[i];
			break;
		}
		if (!strncmp(argv[1], commands[i].name, n)) {
			if (match) {
				gw_error("'%s' is ambiguous: say which command", argv[1]);
				return 2;
			}
			match = &commands[i];
		}
	}
	if (!match) {
		gw_error("unknown command '%s'; 'gpuwhy --help' lists the commands", argv[1]);
		return 2;
	}
	/* getopt names argv[0] in its messages ("report: unrecognized option");
	 * no command reads its argv[0], so it carries the prefix of every other
	 * error: "gpuwhy: error: unrecognized option '--x'" */
	argv[1] = (char *)"gpuwhy: error";
	return match->fn(argc - 1, argv + 1);
}
