/* gpuwhy record / gpuwhy run: arguments only; the work is in src/record/. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../record/ranks.h"
#include "../record/record.h"
#include "../job/report_job.h"
#include "../report/report.h"
#include "../util/args.h"
#include "../util/outfile.h"
#include "../util/util.h"
#include "cmds.h"

static void usage(FILE *f, const char *cmd)
{
	int run = !strcmp(cmd, "run");

	fprintf(f,
		"usage: gpuwhy %s [OPTIONS] [--] COMMAND [ARGS...]\n\n"
		"%s\n\n"
		"The command runs unmodified: a CUPTI library is injected through\n"
		"CUDA_INJECTION64_PATH, and gpuwhy samples NVML/GPM and /proc for the\n"
		"whole process tree. stdin, stdout and stderr pass through; a signal sent\n"
		"to gpuwhy (INT, TERM, HUP, QUIT, USR1, USR2, ALRM and the others a\n"
		"command may handle) reaches the command once (off a terminal's foreground\n"
		"the command runs in a process group of its own); ignored ones stay\n"
		"ignored. gpuwhy exits with the command's exit status (128+N if a signal N\n"
		"killed it; 125 if an output name cannot be used, before the command runs;\n"
		"126/127 if the command could not be run / was not found). When the\n"
		"recording cannot be made (a full disk, ulimit), the command runs untraced.\n\n"
		"options:\n"
		"  -o, --output FILE    recording to write (default gpuwhy-DATE-TIME-PID.gwr);\n"
		"                       an existing file is never overwritten; at most 249\n"
		"                       characters (FILE.parts is made beside it). Under a\n"
		"                       launcher, one name per rank: %%r the rank (RANK,\n"
		"                       SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK; none set\n"
		"                       is an error), %%l the local rank, %%h the short host\n"
		"                       name, %%p gpuwhy's pid, %%%% a percent sign\n"
		"      --duration SEC   stop recording after SEC seconds (the job runs on)\n"
		"      --max-size SIZE  stop recording past SIZE bytes (K, M, G suffixes)\n"
		"      --ring           with --max-size: keep the newest data instead of stopping\n"
		"                       (each stream keeps its newest part of the budget)\n"
		"      --duty ON/PERIOD trace only ON seconds of every PERIOD (e.g. 5/60; each\n"
		"                       0.001 to 86400, ON < PERIOD) for long jobs; NVML\n"
		"                       and /proc sampling stay on\n"
		"      --proc-hz N      /proc sampling rate (default 50)\n"
		"      --gpu-hz N       NVML sampling rate (default 50)\n"
		"      --py-rate HZ     Python stack sampling rate of the job's Python\n"
		"                       threads, loader workers included (default 100)\n"
		"      --no-py          no Python stacks (the report then names no code sites)\n"
		"      --redact         do not store command lines or the working directory\n"
		"                       (secret-bearing variables are never stored: man gpuwhy)\n"
		"      --no-inject      do not trace CUDA (NVML and /proc only)\n"
		"      --launches       also trace every kernel launch call (exact launch\n"
		"                       attribution; costly on launch-bound code)\n"
		"      --sync-records   also keep CUPTI's synchronization records (the\n"
		"                       waits are recorded as host calls anyway; costly on\n"
		"                       host-bound code)\n"
		"  -q, --quiet          no progress notes from gpuwhy\n"
		"%s"
		"  -h, --help           this help\n",
		cmd,
		run ? "Record COMMAND, then print why the GPU was idle and what to change."
		    : "Record what COMMAND did on the GPU and on the host into one file.",
		run ? "  -v, --verbose        full evidence in the report\n"
		      "      --json[=OUT]     the report as JSON (schema: docs/JSON.md): on stdout,\n"
		      "                       the job's own stdout then going to stderr; with OUT\n"
		      "                       into that new file, so stdout stays the job's\n"
		      "      --trace OUT      also write the judged timeline (Chrome trace format)\n"
		      "      --html OUT       also write the report as one self-contained HTML page\n"
		      "      --force          replace an existing --json, --trace or --html OUT (a\n"
		      "                       regular file, atomically); never the recording (-o)\n"
		      "      --fail-on LEVEL  exit 4 when a finding of LEVEL (warning or critical;\n"
		      "                       high is critical) or above is present and the job\n"
		      "                       exited 0 (a finding's level: what its fix saves at\n"
		      "                       least, 5% of the run a warning, 20% critical)\n"
		      REPORT_STEPS_HELP
		    : "");
}

/* ON/PERIOD in seconds, each a whole finite number; both are handed to the
 * injection library in whole milliseconds, so ON is at least 1 ms and
 * PERIOD at most a day, and ON stays below PERIOD after the rounding. */
static int parse_duty(const char *s, unsigned *on_ms, unsigned *period_ms)
{
	const char *slash = strchr(s, '/');
	char on_s[64];
	double on, period;

	if (!slash || (size_t)(slash - s) >= sizeof(on_s))
		return -1;
	memcpy(on_s, s, (size_t)(slash - s));
	on_s[slash - s] = 0;
	if (gw_parse_double(on_s, 0.001, 86400, &on) < 0 ||
	    gw_parse_double(slash + 1, 0.001, 86400, &period) < 0)
		return -1;
	*on_ms = (unsigned)(on * 1000 + 0.5);
	*period_ms = (unsigned)(period * 1000 + 0.5);
	return *on_ms >= 1 && *on_ms < *period_ms ? 0 : -1;
}

/* A sampling rate from 1 to 1000 Hz; 0, or -1 after saying why. */
static int parse_hz(const char *opt, const char *s, unsigned *out, const char *hint)
{
	long hz;

	if (gw_parse_long(s, 1, 1000, &hz) < 0) {
		gw_error("--%s wants a whole number of Hz from 1 to 1000, not '%s'%s", opt, s, hint);
		return -1;
	}
	*out = (unsigned)hz;
	return 0;
}

/* An output that does not exist yet is made in its folder (a temporary
 * renamed into place, src/util/outfile.h): that folder must exist and be
 * writable, checked before the job runs rather than after it. 1 after
 * saying why. */
static int folder_refused(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	int found = stat(dir, &st) == 0;

	if (!found || !S_ISDIR(st.st_mode)) {
		int missing = !found && errno == ENOENT;

		gw_error("cannot write %s: %s %s (nothing was run)", path, dir,
			 missing ? "does not exist; create it or choose another name"
					 : "is not a folder; choose another name");
		return 1;
	}
	if (access(dir, W_OK | X_OK) < 0) {
		gw_error("cannot write %s: the folder %s is not writable (%s); choose another name "
			 "(nothing was run)", path, dir, strerror(errno));
		return 1;
	}
	return 0;
}

/* The report's files are refused before the job runs, not after: an
 * existing file (never overwritten), a folder, one in a folder that is
 * missing or not writable, one name for two outputs, or an HTML page on
 * standard output, which is the job's. 1 after saying why. */
static int report_outputs_refused(const struct report_opts *ro)
{
	const char *outs[3] = { ro->json_out, ro->trace_out, ro->html_out };
	struct stat st;

	if (ro->html_out && !strcmp(ro->html_out, "-")) {
		gw_error("--html - would mix the page with the job's output: give it a file name");
		return 1;
	}
	for (int k = 0; k < 3; k++) {
		int r;

		if (!outs[k] || !strcmp(outs[k], "-"))
			continue;
		if ((r = outfile_check(outs[k], ro->force ? OUTFILE_FORCE : 0, NULL)) < 0) {
			gw_error("cannot write %s: %s", outs[k], outfile_strerror(r));
			return 1;
		}
		if (stat(outs[k], &st) == 0 && S_ISDIR(st.st_mode)) {
			gw_error("%s is a folder: give the output a file name", outs[k]);
			return 1;
		}
		/* a device or FIFO is written into; anything else is made */
		if (stat(outs[k], &st) < 0 && folder_refused(outs[k]))
			return 1;
		for (int l = 0; l < k; l++)
			if (outs[l] && !strcmp(outs[l], outs[k])) {
				gw_error("%s is named for two outputs: give each its own file", outs[k]);
				return 1;
			}
	}
	return 0;
}

/* The options against each other, after parsing: 1 after saying what to
 * change. Sets what they imply (run --json: the job's stdout to stderr). */
static int options_refused(struct record_opts *o, const struct report_opts *ro, int run)
{
	if ((ro->verbose || ro->json || ro->trace_out || ro->html_out || ro->steps || ro->fail_on || ro->force) &&
	    !run) {
		gw_error("-v, --json, --trace, --html, --steps, --fail-on and --force belong to 'gpuwhy "
			 "run' and 'gpuwhy report' (a recording is never overwritten)");
		return 1;
	}
	/* the report's JSON (or the timeline) on standard output stays valid
	 * JSON: the job's own output goes to standard error (a pipe or file
	 * reads the JSON alone) */
	int json_out = ro->json && (!ro->json_out || !strcmp(ro->json_out, "-"));

	if (run && (json_out || (ro->trace_out && !strcmp(ro->trace_out, "-")))) {
		o->job_stdout_to_stderr = 1;
		gw_note("%s writes to standard output: the job's own output goes to standard error "
			"(%s keeps it on standard output)", json_out ? "--json" : "--trace -",
			json_out ? "--json=FILE" : "--trace FILE");
	}
	if (o->ring && !o->max_size) {
		gw_error("--ring keeps the newest data within --max-size: give both");
		return 1;
	}
	if (o->ring && o->max_size < (1u << 20)) {
		gw_error("--ring wants --max-size of at least 1M");
		return 1;
	}
	return 0;
}

static int record_main(int argc, char **argv, int run)
{
	static const struct option longopts[] = {
		{ "output", required_argument, 0, 'o' }, { "duration", required_argument, 0, 'D' },
		{ "max-size", required_argument, 0, 'M' }, { "duty", required_argument, 0, 'u' },
		{ "proc-hz", required_argument, 0, 'P' }, { "gpu-hz", required_argument, 0, 'G' },
		{ "redact", no_argument, 0, 'r' }, { "launches", no_argument, 0, 'L' },
		{ "sync-records", no_argument, 0, 'S' },
		{ "ring", no_argument, 0, 'R' }, { "no-inject", no_argument, 0, 'n' },
		{ "quiet", no_argument, 0, 'q' }, { "verbose", no_argument, 0, 'v' },
		{ "json", optional_argument, 0, 'j' }, { "trace", required_argument, 0, 'T' },
		{ "fail-on", required_argument, 0, 'F' }, { "html", required_argument, 0, 'H' },
		{ "steps", required_argument, 0, 'E' },
		{ "py-rate", required_argument, 0, 'Y' }, { "no-py", no_argument, 0, 'N' },
		{ "force", no_argument, 0, 'O' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	struct record_opts o = { .proc_hz = 50, .gpu_hz = 50, .py_hz = 100 };
	struct report_opts ro = { .color = -1 };
	const char *cmd = run ? "run" : "record";
	char *path = NULL, named[PATH_MAX];
	int c, status, rr;

	optind = 1;
	while ((c = gw_getopt(argc, argv, "+o:qvjh", longopts, "jTH/o")) != -1) {
		switch (c) {
		case 'o': o.output = optarg; break;
		case 'D':
			if (gw_parse_double(optarg, 0.001, 1e9, &o.duration_s) < 0) {
				gw_error("--duration wants a number of seconds from 0.001 to 1e9, not '%s'",
					 optarg);
				return 2;
			}
			break;
		case 'M':
			if (gw_parse_size(optarg, UINT64_MAX, &o.max_size) < 0 || o.max_size < 4096) {
				gw_error("--max-size wants a size of at least 4K such as 500M or 2G, not '%s'",
					 optarg);
				return 2;
			}
			break;
		case 'u':
			if (parse_duty(optarg, &o.duty_on_ms, &o.duty_period_ms) < 0) {
				gw_error("--duty wants ON/PERIOD in seconds, each from 0.001 to 86400 with ON "
					 "< PERIOD, e.g. 5/60; not '%s'", optarg);
				return 2;
			}
			break;
		case 'P':
			if (parse_hz("proc-hz", optarg, &o.proc_hz, "") < 0)
				return 2;
			break;
		case 'G':
			if (parse_hz("gpu-hz", optarg, &o.gpu_hz, "") < 0)
				return 2;
			break;
		case 'Y':
			if (parse_hz("py-rate", optarg, &o.py_hz, " (--no-py turns the stacks off)") < 0)
				return 2;
			break;
		case 'N': o.no_py = 1; break;
		case 'r': o.redact = 1; break;
		case 'n': o.no_inject = 1; break;
		case 'L': o.trace_launches = 1; break;
		case 'S': o.sync_records = 1; break;
		case 'R': o.ring = 1; break;
		case 'q': gw_quiet = 1; break;
		case 'v': ro.verbose = 1; break;
		case 'j':
			ro.json = 1;
			ro.json_out = optarg;
			/* "--json out.json -- CMD" would run out.json */
			if (!optarg && optind < argc && strlen(argv[optind]) > 5 &&
			    !strcmp(argv[optind] + strlen(argv[optind]) - 5, ".json")) {
				gw_error("--json takes its file as --json=%s", argv[optind]);
				return 2;
			}
			break;
		case 'F':
			ro.fail_on = report_fail_on_parse(optarg);
			if (!ro.fail_on) {
				gw_error("--fail-on wants warning or critical, not '%s'", optarg);
				return 2;
			}
			break;
		case 'T': ro.trace_out = optarg; break;
		case 'H': ro.html_out = optarg; break;
		case 'O': ro.force = 1; break;
		case 'E':
			if (!report_steps_spec_ok(optarg)) {
				gw_error("--steps wants auto, none, nvtx:NAME or kernel:NAME, not '%s'", optarg);
				return 2;
			}
			ro.steps = optarg;
			break;
		case 'h': usage(stdout, cmd); return 0;
		default:
			fprintf(stderr, "'gpuwhy %s --help' lists the options\n", cmd);
			return 2;
		}
	}
	if (options_refused(&o, &ro, run))
		return 2;
	if (optind >= argc) {
		gw_error("no command to record: gpuwhy %s -- COMMAND [ARGS...]", cmd);
		return 2;
	}
	if (report_outputs_refused(&ro))
		return 2;
	o.argv = argv + optind;
	if (o.output && strchr(o.output, '%')) { /* -o run-%h-%r.gwr: one name per rank */
		char err[512];

		if (rank_expand_name(o.output, named, sizeof(named), err, sizeof(err)) < 0) {
			gw_error("%s (nothing was run)", err);
			return 125;
		}
		o.output = named;
	}
	status = record_run(&o, &path);
	if (run && path) {
		const char *files[1] = { path };

		fflush(stdout);
		if (!ro.json)
			fputc('\n', stderr);
		/* a job of several ranks (torchrun under gpuwhy run) gets the
		 * job report. The job's status comes first; then a report that
		 * could not be written (1) or --fail-on (4) */
		ro.job_if_ranks = 1;
		rr = report_files(files, 1, &ro);
		if (rr == REPORT_WANTS_JOB)
			rr = job_report_args(files, 1, &ro, -1, 1);
		if (status == 0 && (rr == 1 || rr == REPORT_EXIT_FAIL_ON))
			status = rr;
	}
	free(path);
	return status;
}

int cmd_record(int argc, char **argv)
{
	return record_main(argc, argv, 0);
}

int cmd_run(int argc, char **argv)
{
	return record_main(argc, argv, 1);
}
