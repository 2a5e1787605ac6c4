/* gpuwhy check: arguments, then src/check/. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../check/check.h"
#include "../util/args.h"
#include "../util/util.h"
#include "cmds.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuwhy check [--json] [--data DIR] [--pid PID] [--no-bandwidth]\n\n"
		   "Check the machine before blaming the code: PCIe link (read under load),\n"
		   "host<->GPU copy bandwidth pinned and pageable, persistence, power limit,\n"
		   "clock event reasons and throttle counters, temperature, ECC, MIG, other\n"
		   "processes, NUMA placement; CPU governor, memory, huge pages. Each check\n"
		   "is pass / warn / fail / n/a with the measured and expected value, why it\n"
		   "matters and the fix. Nothing is ever changed: it only reads and measures.\n\n"
		   "options:\n"
		   "      --json          machine-readable (schema gpuwhy.check/1)\n"
		   "      --data DIR      also check the storage under DIR and read its files\n"
		   "      --pid PID       also check a running job: CPU affinity against the\n"
		   "                      GPU's NUMA node, memory nodes, runnable threads\n"
		   "      --no-bandwidth  skip the copy test (it allocates 256 MiB on each GPU)\n"
		   "  -h, --help          this help\n\n"
		   "exit status: 0 no check failed (warnings allowed); 1 at least one failed;\n"
		   "2 bad arguments (a --data that is no folder, a --pid that is no process).\n"
		   "Without an NVIDIA driver the host checks still run and\n"
		   "the GPU section says no driver was found (exit 0).\n");
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, 0, 'j' }, { "data", required_argument, 0, 'd' },
		{ "pid", required_argument, 0, 'p' }, { "no-bandwidth", no_argument, 0, 'n' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	struct check_opts o = { 0 };
	struct stat st;
	long pid;
	int c;

	optind = 1;
	while ((c = gw_getopt(argc, argv, "h", longopts, "/d")) != -1) {
		switch (c) {
		case 'j': o.json = 1; break;
		case 'd': o.data_dir = optarg; break;
		case 'p':
			if (gw_parse_long(optarg, 1, INT_MAX, &pid) < 0) {
				gw_error("--pid wants a process id (a whole number from 1), not '%s'", optarg);
				return 2;
			}
			o.pid = (int)pid;
			break;
		case 'n': o.no_bandwidth = 1; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "'gpuwhy check --help' lists the options\n");
			return 2;
		}
	}
	if (optind != argc) {
		gw_error("check takes no file arguments (did you mean --data %s?)", argv[optind]);
		return 2;
	}
	if (o.data_dir && (stat(o.data_dir, &st) < 0 || !S_ISDIR(st.st_mode))) {
		gw_error("--data %s: not a directory", o.data_dir);
		return 2;
	}
	/* a process that is not there is a wrong argument, not a failed check
	 * of the machine (a script's gate would blame the machine for a typo) */
	if (o.pid && kill(o.pid, 0) < 0 && errno == ESRCH) {
		gw_error("--pid %d: no such process (give the pid of a running job: pgrep -f train.py)", o.pid);
		return 2;
	}
	return check_run(&o);
}
