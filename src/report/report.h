/* Renderers of findings: terminal and JSON, fed by one findings structure. */
#ifndef GPUWHY_REPORT_H
#define GPUWHY_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct report_opts {
	int verbose;
	int json;
	int color; /* -1 auto (TTY), 0 never, 1 always */
	const char *trace_out; /* also write a Chrome/Perfetto timeline here */
	const char *html_out;  /* also write the HTML report here (one recording) */
	const char *steps;     /* --steps: NULL (auto), "none", "nvtx:NAME", "kernel:NAME" */
	const char *json_out;  /* --json=FILE: the JSON report into FILE, not stdout */
	int fail_on;           /* --fail-on: 1 + the enum severity that fails the run; 0 none */
	int force;             /* --force: outputs replace existing regular files */
	int job_if_ranks;      /* one recording (a file) of several ranks: REPORT_WANTS_JOB */
	const char *fixes;     /* --fixes: the causes whose fixes the combined line replays ("C1,C14") */
};

/* report_files() of one recording file holding several ranks, with
 * job_if_ranks: nothing was written; report it as a job (src/job/). */
#define REPORT_WANTS_JOB 100

/* The outputs asked for in o, against each other and the number of
 * recordings: 0, or -1 with why[] saying what to change (one name for two
 * outputs, an output of one recording given several, two outputs on
 * standard output), or -2 where an output's name is refused before any
 * work (an existing file without --force, a recording, a folder). */
int report_outputs_check(const struct report_opts *o, int nfiles, char *why, size_t len);

/* Exit status when a finding at --fail-on's severity or above is present
 * (and nothing worse happened: 1, 2 and 3 take precedence). */
#define REPORT_EXIT_FAIL_ON 4
/* --fail-on's argument: 1 + its enum severity, or 0 if s names none. */
int report_fail_on_parse(const char *s);

/* 1 if s is a valid --steps value (auto, none, nvtx:NAME, kernel:NAME). */
int report_steps_spec_ok(const char *s);
#define REPORT_STEPS_HELP                                                                    \
	"      --steps HOW      how to find steps: auto (default: NVTX ranges, else the\n"      \
	"                       repeating unit of the GPU operations), none (time windows),\n" \
	"                       nvtx:NAME (that NVTX range), kernel:NAME (each kernel or\n"    \
	"                       copy whose name contains NAME starts a step)\n"

/* What a report holds per byte of a compressed recording: the host side
 * (sync and copy calls, thread samples) and per-step data, not the GPU
 * operations (bench/RESULTS.md: 0.45x on 20x the launch-bound fixture,
 * 0.9x on 100x the healthy one; a margin for recordings with more threads);
 * with --trace every operation and idle interval as well (11x on the
 * launch-bound input). */
#define REPORT_MEMORY_PER_FILE_BYTE 3
#define REPORT_MEMORY_PER_FILE_BYTE_TRACE 12

/* A warning for a recording of file_bytes when avail bytes of memory are
 * available: 1 and msg filled when the report may not fit, else 0. */
int report_memory_note(char *msg, size_t len, const char *path, uint64_t file_bytes,
		       uint64_t avail, int trace);

/* Analyzes and prints; returns 0, 1 if a file could not be read at all or
 * an output could not be written, 2 if --steps named a range or kernel that
 * a recording lacks, 3 if a file was damaged, REPORT_EXIT_FAIL_ON. */
int report_files(const char **files, int n, const struct report_opts *o);

#endif
