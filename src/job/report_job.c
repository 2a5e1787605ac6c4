/* gpuwhy report of several ranks: which arguments make a job, the files a
 * folder holds, --rank N, and the job report's outputs. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../report/report.h"
#include "../util/escape.h"
#include "../util/outfile.h"
#include "../util/util.h"
#include "job.h"
#include "report_job.h"

int job_list_dir_quiet(const char *dir, VEC_TYPE_STR *out);

int job_is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* How many of a folder's recordings can be read and record no rank, and
 * how many *.gwr it holds; -errno where it cannot be listed. A file that
 * cannot be read as a recording counts as neither: the job report says
 * which rank's file it is not. */
static int dir_unranked(const char *dir, int *nfiles)
{
	VEC_TYPE_STR files = { 0 };
	int unranked = 0, r = job_list_dir_quiet(dir, &files);

	*nfiles = (int)files.n;
	for (size_t i = 0; r == 0 && i < files.n; i++)
		unranked += rank_peek(files.v[i]) == -1;
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i]);
	free(files.v);
	return r < 0 ? r : unranked;
}

int job_args_are_job(const char *const *args, int n)
{
	int ranked = 0, nfiles = 0;

	/* a folder is a job where every recording it can read says its rank
	 * (or where it cannot be listed or holds none: the job report says
	 * why); one where some say none, runs of other jobs among them, is
	 * reported file by file */
	for (int i = 0; i < n; i++) {
		int r = job_is_dir(args[i]) ? dir_unranked(args[i], &nfiles) : 0;

		if (job_is_dir(args[i]) && (r < 0 || nfiles == 0 || r == 0))
			return 1;
	}
	/* two or more recordings that say which rank they are (one alone is
	 * never peeked at: it may be a pipe, read once) */
	for (int i = 0; i < n && n > 1 && ranked < 2; i++)
		ranked += !job_is_dir(args[i]) && rank_peek(args[i]) >= 0;
	return ranked >= 2;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static int list_dir(const char *dir, VEC_TYPE_STR *out, int quiet)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t first = out->n;

	if (!d) {
		int err = -errno;

		if (!quiet)
			gw_error("cannot read the folder %s: %s", dir, strerror(-err));
		return err;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char *p;

		if (n < 5 || strcmp(de->d_name + n - 4, ".gwr"))
			continue;
		if (asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name) < 0 ||
		    VEC_PUSH(*out, p) < 0) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	if (out->n == first && !quiet)
		gw_warn("%s holds no recording (*.gwr)", dir);
	if (out->n - first > 1) /* (an empty list's array may be NULL) */
		qsort(out->v + first, out->n - first, sizeof(*out->v), cmp_str);
	return 0;
}

int job_list_dir(const char *dir, VEC_TYPE_STR *out)
{
	return list_dir(dir, out, 0);
}

int job_list_dir_quiet(const char *dir, VEC_TYPE_STR *out)
{
	return list_dir(dir, out, 1);
}

static int worst(const struct job *j)
{
	int w = -1;

	for (size_t i = 0; i < j->findings.n; i++)
		if ((int)j->findings.v[i].severity > w)
			w = (int)j->findings.v[i].severity;
	for (size_t i = 0; i < j->ranks.n; i++)
		for (size_t k = 0; k < j->ranks.v[i].findings.n; k++)
			if ((int)j->ranks.v[i].findings.v[k].severity > w)
				w = (int)j->ranks.v[i].findings.v[k].severity;
	return w;
}

static int job_page(FILE *f, const void *j)
{
	return render_job_html(f, j);
}

/* --html OUT: the job's page; 0, or 1 after saying why it was not written. */
static int write_job_html(const struct job *j, const struct report_opts *o, const char **inputs)
{
	return outfile_write(o->html_out, o->force ? OUTFILE_FORCE : 0, inputs, "HTML report of the job",
			     job_page, j) < 0;
}

static int print_job(const struct job *j, const struct report_opts *o, const char *const *files, size_t n)
{
	struct outfile of = { 0 };
	FILE *out = stdout;
	int ret = 0, r;

	if (o->json && o->json_out) {
		const char **inputs = calloc(n + 1, sizeof(*inputs));

		if (!inputs)
			return 1;
		memcpy(inputs, files, n * sizeof(*inputs));
		r = outfile_open(&of, o->json_out, OUTFILE_GZIP_BY_NAME | (o->force ? OUTFILE_FORCE : 0), inputs);
		free(inputs);
		if (r < 0) {
			gw_error("cannot write the report to %s: %s", o->json_out, outfile_strerror(r));
			return 1;
		}
		out = of.f;
	}
	if (o->json) {
		struct json js;

		json_init(&js, out, 1);
		render_job_json(&js, j);
		json_done(&js);
	} else {
		int color = o->color < 0 ? gw_color_auto(STDOUT_FILENO) : o->color;
		FILE *term = term_filter_open(out, color); /* what the recordings hold reaches it escaped */

		if (!term)
			return 1;
		if (render_job_terminal(term, j, o->verbose, color) < 0)
			ret = 1;
		if (fclose(term) != 0)
			ret = 1;
	}
	if (of.f) {
		r = outfile_commit(&of);
		if (r < 0) {
			gw_error("writing the report to %s failed: %s", o->json_out, outfile_strerror(r));
			ret = 1;
		} else if (!of.is_stdout) {
			gw_note("report written to %s", o->json_out);
		}
	}
	fflush(stdout);
	return ret;
}

/* A recording of several GPU processes: files becomes one view of each,
 * in a new folder under $TMPDIR (tmpdir; "" when not split). */
static int split_views(VEC_TYPE_STR *files, char *tmpdir, size_t len)
{
	const char *t = getenv("TMPDIR");
	char **views;
	size_t n;
	int ret;

	snprintf(tmpdir, len, "%s/gpuwhy-ranks-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		gw_error("cannot make a folder for the ranks' views in %s: %s", t && *t ? t : "/tmp",
			 strerror(errno));
		tmpdir[0] = 0;
		return -errno;
	}
	ret = job_split(files->v[0], tmpdir, &views, &n);
	if (ret < 0 || n < 2) {
		for (size_t i = 0; i < n; i++) {
			unlink(views[i]);
			free(views[i]);
		}
		free(views);
		rmdir(tmpdir);
		tmpdir[0] = 0;
		if (ret < 0)
			gw_error("cannot split %s into one view per process: %s", files->v[0], strerror(-ret));
		return ret;
	}
	free(files->v[0]);
	free(files->v);
	files->v = views;
	files->n = files->cap = n;
	return 0;
}

/* --rank N: that rank's ordinary report. */
static int one_rank(const char *const *files, size_t n, const struct report_opts *o, long rank)
{
	for (size_t i = 0; i < n; i++)
		if (rank_peek(files[i]) == rank) {
			const char *one[1] = { files[i] };

			return report_files(one, 1, o);
		}
	gw_error("no recording of rank %ld among the %zu recording%s (the rank is read from each file's meta: "
		 "job.rank, or RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK)", rank, n, n == 1 ? "" : "s");
	return 2; /* a bad argument: that rank is not there */
}

static int job_exit(const struct job *j, const struct report_opts *o)
{
	int ret = 0;

	for (size_t i = 0; i < j->ranks.n; i++) {
		if (j->ranks.v[i].status == RANK_UNREADABLE)
			ret = 1;
		else if (j->ranks.v[i].verdict_exit && !ret)
			ret = j->ranks.v[i].verdict_exit;
	}
	if (!ret && o->fail_on && worst(j) >= o->fail_on - 1)
		ret = REPORT_EXIT_FAIL_ON;
	return ret;
}

int job_report_args(const char *const *args, int nargs, const struct report_opts *o, long rank, int job)
{
	VEC_TYPE_STR files = { 0 };
	char tmpdir[4096] = "";
	struct job j;
	int ret = 0;

	for (int i = 0; i < nargs && ret == 0; i++) {
		char *p;

		if (job_is_dir(args[i]))
			ret = job_list_dir(args[i], &files);
		else if (!(p = strdup(args[i])) || VEC_PUSH(files, p) < 0)
			ret = -ENOMEM;
	}
	if (ret == 0 && !files.n) {
		gw_error("no recording to report: name files or a folder of *.gwr");
		ret = -ENOENT;
	}
	if (ret < 0)
		goto out;
	/* one recording of several GPU processes: one view of each */
	if (files.n == 1 && (job || rank >= 0) && !job_is_dir(args[0]))
		ret = split_views(&files, tmpdir, sizeof(tmpdir));
	if (ret < 0)
		goto out;
	if (rank >= 0) {
		ret = one_rank((const char *const *)files.v, files.n, o, rank);
		goto out;
	}
	if (o->trace_out && !strcmp(o->trace_out, "-")) {
		gw_error("--trace - writes one recording's timeline: add --rank N for one rank's, or give "
			 "--trace a file name (the job's timeline)");
		ret = 2;
		goto out;
	}
	ret = job_load(&j, (const char *const *)files.v, files.n, o->steps && strcmp(o->steps, "auto") ? o->steps : NULL);
	if (ret == 0)
		ret = job_align(&j);
	if (ret == 0)
		ret = job_rules(&j);
	if (ret < 0)
		gw_error("out of memory while reporting %zu recordings as one job", files.n);
	else {
		const char **inputs = calloc(files.n + 1, sizeof(*inputs));
		int tr = 0;

		if (!inputs) {
			ret = 1;
		} else {
			memcpy(inputs, files.v, files.n * sizeof(*inputs));
			/* the steps as the report found them: --steps, else each rank's own */
			if (o->trace_out)
				tr = job_write_trace(&j, o->trace_out, o->force ? OUTFILE_FORCE : 0, inputs,
						     o->steps && strcmp(o->steps, "auto") ? o->steps : NULL);
			int html = o->html_out ? write_job_html(&j, o, inputs) : 0;

			/* --html - is the only output on standard output */
			if (o->html_out && !strcmp(o->html_out, "-") && !o->json)
				ret = html || tr ? 1 : job_exit(&j, o);
			else
				ret = print_job(&j, o, (const char *const *)files.v, files.n) || tr || html ? 1
														  : job_exit(&j, o);
			free(inputs);
		}
	}
	job_free(&j);
out:
	for (size_t i = 0; i < files.n; i++) {
		if (tmpdir[0])
			unlink(files.v[i]);
		free(files.v[i]);
	}
	if (tmpdir[0])
		rmdir(tmpdir);
	free(files.v);
	return ret < 0 ? 1 : ret;
}
