/* gpuwhy report: arguments, then src/report/. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "../format/format.h"
#include "../job/report_job.h"
#include "../report/report.h"
#include "../util/args.h"
#include "../util/util.h"
#include "cmds.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuwhy report [-v] [--json[=OUT]] [--color WHEN] [--trace OUT]\n"
		   "                     [--html OUT] [--force] [--steps HOW] [--fail-on LEVEL]\n"
		   "                     [--fixes LIST] [--job] [--rank N] [FILE... | DIR...]\n\n"
		   "Explain why the GPU was idle in a recording, and what to change: the busy\n"
		   "share, the steps, the idle time split by cause, and findings ranked by the\n"
		   "time a fix would save. Without FILE: the newest *.gwr in this directory.\n\n"
		   "options:\n"
		   "  -v, --verbose     the evidence behind every finding, and what was not assessed\n"
		   "      --json[=OUT]  machine-readable report (schema gpuwhy.report/1, docs/JSON.md),\n"
		   "                    on stdout or into the new file OUT\n"
		   "      --color WHEN  auto (default: on a terminal), always, never\n"
		   "      --trace OUT   also write the timeline as it was judged (kernels, copies,\n"
		   "                    idle intervals named by cause, steps, host calls) in the\n"
		   "                    Chrome trace format, for Perfetto or chrome://tracing\n"
		   "                    (holds every GPU operation in memory to draw it); OUT.gz\n"
		   "                    is written compressed, - is stdout\n"
		   "      --html OUT    also write the report as one self-contained HTML page\n"
		   "                    (charts of the steps, the idle causes and the GPU's clocks,\n"
		   "                    power and activity; opens offline); of a job, its ranks with\n"
		   "                    each one's step drawn in parts and the causes across them;\n"
		   "                    '-' for stdout\n"
		   "      --steps HOW   how to find steps: auto (default: NVTX ranges, else the\n"
		   "                    repeating unit of the GPU operations), none (time\n"
		   "                    windows), nvtx:NAME (that NVTX range), kernel:NAME (each\n"
		   "                    kernel or copy whose name contains NAME starts a step)\n"
		   "      --fail-on LEVEL  exit 4 when a finding of LEVEL (warning or critical;\n"
		   "                    high is critical) or above is present: a gate for CI\n"
		   "                    (a finding's level: what its fix saves at least, 5%%\n"
		   "                    of the run a warning, 20%% critical)\n"
		   "      --fixes LIST  the line \"Fixing ...\" replays the fixes of these findings\n"
		   "                    together, whatever their level (their causes, comma-\n"
		   "                    separated: C1,C14): what the step would take if you apply\n"
		   "                    only those (default: every finding at warning and above)\n"
		   "      --force       replace an existing OUT (a regular file): the new one is\n"
		   "                    written beside it and renamed over it, so a failure\n"
		   "                    leaves the old one\n"
		   "      --job         report the recordings as ranks of one job (the default for a\n"
		   "                    folder whose *.gwr all record a rank, for two or more recordings\n"
		   "                    that record their rank: record -o run-%%r.gwr under srun,\n"
		   "                    mpirun or torchrun, and for one recording whose GPU\n"
		   "                    processes record theirs: run -- torchrun ...): a table of\n"
		   "                    the ranks, the causes across ranks (straggler, collective\n"
		   "                    wait, work on one rank only, uneven work, one host, exposed\n"
		   "                    communication), each rank's findings grouped; --json gives\n"
		   "                    schema gpuwhy.job/1; --html OUT its page; --trace OUT draws\n"
		   "                    every rank on the job's one time line, a process group each\n"
		   "      --rank N      of a job's recordings, the ordinary report of rank N\n"
		   "  -h, --help        this help\n\n"
		   "Output files (--json=OUT, --trace OUT, --html OUT) are made readable by you\n"
		   "alone (mode 0600: they hold the command line and the working directory).\n"
		   "An existing file is never written over without --force, and --force replaces\n"
		   "only a regular file: never one behind a symbolic link, nor any recording; a\n"
		   "device or FIFO is written into. An OUT that starts with '-' (other\n"
		   "than '-') is given as ./OUT.\n\n"
		   "exit status: 0 report printed; 1 a file could not be read or an output not\n"
		   "written; 2 bad arguments, a --steps NAME the recording lacks, or a --fixes\n"
		   "cause no finding of the report has; 3 a file was\n"
		   "damaged or cut short (the report covers every part that is intact; a warning\n"
		   "says what was skipped); 4 --fail-on found a finding at that level.\n");
}

/* Newest regular *.gwr in the current directory, or NULL. */
static char *newest_recording(void)
{
	DIR *d = opendir(".");
	struct dirent *de;
	struct stat st;
	time_t best_t = 0;
	char *best = NULL;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n < 5 || strcmp(de->d_name + n - 4, ".gwr") != 0)
			continue;
		if (stat(de->d_name, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (!best || st.st_mtime > best_t) {
			free(best);
			best = strdup(de->d_name);
			best_t = st.st_mtime;
		}
	}
	closedir(d);
	return best;
}

/* 1 if path is a file that begins as a recording does. */
static int is_recording(const char *path)
{
	char head[sizeof(GW_MAGIC) - 1];
	FILE *f = fopen(path, "rb");
	int yes = f && fread(head, 1, sizeof(head), f) == sizeof(head) && !memcmp(head, GW_MAGIC, sizeof(head));

	if (f)
		fclose(f);
	return yes;
}

/* "--json out.json x.gwr": the name meant for the JSON read as a recording
 * (getopt's optional argument takes only --json=OUT). 1 after saying so. */
static int json_name_misread(const struct report_opts *o, char **args, int n)
{
	for (int k = 0; o->json && !o->json_out && k < n; k++) {
		size_t l = strlen(args[k]);

		if (((l > 5 && !strcmp(args[k] + l - 5, ".json")) || (l > 8 && !strcmp(args[k] + l - 8, ".json.gz"))) &&
		    !is_recording(args[k])) {
			gw_error("--json takes its file as --json=%s (nothing was written)", args[k]);
			return 1;
		}
	}
	return 0;
}

/* The recordings named, a folder's in its place: a folder where not every
 * recording records a rank (runs of different jobs, a run and its fix) is
 * each of them on its own. 0, or -errno after saying why; files holds
 * copies. */
static int expand_folders(char **args, int n, VEC_TYPE_STR *files)
{
	for (int i = 0; i < n; i++) {
		size_t before = files->n;

		if (!job_is_dir(args[i])) {
			char *p = strdup(args[i]);

			if (!p || VEC_PUSH(*files, p) < 0) {
				free(p);
				gw_error("out of memory");
				return -ENOMEM;
			}
			continue;
		}
		int r = job_list_dir(args[i], files);

		if (r < 0)
			return r;
		gw_note("%s: not every one of its %zu recordings records a rank, so they are not one job's "
			"ranks: each is reported on its own (--job reports them as one job)", args[i],
			files->n - before);
	}
	return 0;
}

/* "C1,C14": causes as findings name them, comma-separated. */
static int fixes_spec_ok(const char *s)
{
	if (!*s)
		return 0;
	while (*s) {
		if (*s++ != 'C' || !isdigit((unsigned char)*s))
			return 0;
		while (isdigit((unsigned char)*s))
			s++;
		if (*s == ',' && s[1])
			s++;
		else if (*s)
			return 0;
	}
	return 1;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "verbose", no_argument, 0, 'v' }, { "json", optional_argument, 0, 'j' },
		{ "color", required_argument, 0, 'c' }, { "colour", required_argument, 0, 'c' },
		{ "trace", required_argument, 0, 't' }, { "steps", required_argument, 0, 's' },
		{ "fail-on", required_argument, 0, 'f' }, { "html", required_argument, 0, 'H' },
		{ "force", no_argument, 0, 'O' }, { "help", no_argument, 0, 'h' },
		{ "job", no_argument, 0, 'J' }, { "rank", required_argument, 0, 'R' },
		{ "fixes", required_argument, 0, 'X' }, { 0, 0, 0, 0 },
	};
	struct report_opts o = { .color = -1 };
	long job_rank = -1;
	int job = 0, r;
	char *newest = NULL, why[4400];
	int c, ret;

	optind = 1;
	while ((c = gw_getopt(argc, argv, "vh", longopts, "jtH")) != -1) {
		switch (c) {
		case 'v': o.verbose = 1; break;
		case 'j':
			o.json = 1;
			o.json_out = optarg;
			break;
		case 'f':
			o.fail_on = report_fail_on_parse(optarg);
			if (!o.fail_on) {
				gw_error("--fail-on wants warning or critical, not '%s'", optarg);
				return 2;
			}
			break;
		case 'c':
			if (!strcmp(optarg, "always"))
				o.color = 1;
			else if (!strcmp(optarg, "never"))
				o.color = 0;
			else if (!strcmp(optarg, "auto"))
				o.color = -1;
			else {
				gw_error("--color wants auto, always or never, not '%s'", optarg);
				return 2;
			}
			break;
		case 't': o.trace_out = optarg; break;
		case 'H': o.html_out = optarg; break;
		case 'O': o.force = 1; break;
		case 's':
			if (!report_steps_spec_ok(optarg)) {
				gw_error("--steps wants auto, none, nvtx:NAME or kernel:NAME, not '%s'", optarg);
				return 2;
			}
			o.steps = optarg;
			break;
		case 'X':
			if (!fixes_spec_ok(optarg)) {
				gw_error("--fixes wants the causes of findings, comma-separated (C1,C14), not '%s'",
					 optarg);
				return 2;
			}
			o.fixes = optarg;
			break;
		case 'J': job = 1; break;
		case 'R':
			if (gw_parse_long(optarg, 0, INT32_MAX, &job_rank) < 0) {
				gw_error("--rank wants a rank number (0, 1, ...), not '%s'", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "'gpuwhy report --help' lists the options\n");
			return 2;
		}
	}
	if (json_name_misread(&o, argv + optind, argc - optind))
		return 2;
	/* several recordings of one job (ranks): the job report, whose
	 * outputs are checked as those of one recording */
	if (optind < argc && (job || job_rank >= 0 ||
			      job_args_are_job((const char *const *)argv + optind, argc - optind))) {
		if ((r = report_outputs_check(&o, 1, why, sizeof(why))) < 0) {
			gw_error("%s", why);
			return r == -2 ? 1 : 2;
		}
		if (o.fixes && job_rank < 0) {
			gw_error("--fixes replays fixes in one recording's report: add --rank N for that rank's");
			return 2;
		}
		return job_report_args((const char *const *)argv + optind, argc - optind, &o, job_rank, job);
	}
	/* the recordings: the newest here, or those named, a folder's in its
	 * place; their outputs checked against their number */
	VEC_TYPE_STR files = { 0 };

	if (optind == argc) {
		newest = newest_recording();
		if (!newest) {
			gw_error("no recording (*.gwr) in this directory: make one with "
				 "'gpuwhy record -- COMMAND', or name a file");
			return 1;
		}
		if (VEC_PUSH(files, newest) < 0) {
			free(newest);
			gw_error("out of memory");
			return 1;
		}
	} else if (expand_folders(argv + optind, argc - optind, &files) < 0) {
		ret = 1;
		goto out;
	}
	if ((r = report_outputs_check(&o, (int)files.n, why, sizeof(why))) < 0) {
		gw_error("%s", why);
		ret = r == -2 ? 1 : 2;
		goto out;
	}
	/* one recording of several ranks (gpuwhy run -- torchrun ...): the job
	 * report, unless the timeline takes standard output */
	o.job_if_ranks = !(o.trace_out && !strcmp(o.trace_out, "-"));
	ret = report_files((const char **)files.v, (int)files.n, &o);
	if (ret == REPORT_WANTS_JOB && o.fixes) {
		gw_error("--fixes replays fixes in one recording's report: %s holds a job's ranks, add --rank N "
			 "for that rank's", files.v[0]);
		ret = 2;
	} else if (ret == REPORT_WANTS_JOB) {
		ret = job_report_args((const char *const *)files.v, 1, &o, -1, 1);
	}
out:
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i]);
	free(files.v);
	return ret;
}
