/* gpuwhy: why is my GPU idle, and what do I change? The hub: a table of
 * subcommands (perf-style); each lives in src/cmd/. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmds.h"
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
		   "\n'gpuwhy COMMAND --help' describes each command; man gpuwhy has the rest.\n");
}

int main(int argc, char **argv)
{
	const struct command *match = NULL;
	size_t n;

	if (argc < 2) {
		usage(stderr);
		return 2;
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
	return match->fn(argc - 1, argv + 1);
}
