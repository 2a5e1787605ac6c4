#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "util.h"

unsigned gw_std_filled;

int gw_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	/* strtod skips leading blanks; a number on the command line has none */
	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	if (!isfinite(v))
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int gw_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int gw_parse_size(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	double v, mul = 1;

	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || !isfinite(v))
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1024; end++; break;
	case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -EINVAL;
	v *= mul;
	/* compared as doubles: a huge value must not wrap on the conversion */
	if (errno == ERANGE || v < 0 || v >= 0x1p64 || v > (double)max)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

unsigned gw_fill_std_fds(void)
{
	unsigned filled = 0;

	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* open() returns the lowest free descriptor: this one */
		int nfd = open("/dev/null", fd ? O_WRONLY : O_RDONLY);

		if (nfd < 0)
			break; /* nothing better to do: /dev/null is missing */
		if (nfd != fd) {
			close(nfd);
			break;
		}
		filled |= 1u << fd;
	}
	gw_std_filled = filled;
	return filled;
}

/* The long option argv[at] as the user wrote it ("--name", up to '='), or
 * NULL when the option was a short one. */
static const char *long_typed(char *buf, size_t len, char *const *argv, int at)
{
	const char *arg = at >= 0 ? argv[at] : NULL;

	if (!arg || strncmp(arg, "--", 2) || !arg[2])
		return NULL;
	snprintf(buf, len, "%.*s", (int)strcspn(arg, "="), arg);
	return buf;
}

/* An unknown long option, or an abbreviation of several: says which. */
static void say_unknown_long(const char *arg, const struct option *longopts)
{
	size_t n = strcspn(arg + 2, "=");
	char list[512] = "";
	int vals = 0, last = 0;

	for (const struct option *lo = longopts; lo->name; lo++) {
		size_t used = strlen(list);

		if (strncmp(lo->name, arg + 2, n))
			continue;
		if (!vals || lo->val != last)
			vals++;
		last = lo->val;
		snprintf(list + used, sizeof(list) - used, "%s--%s", used ? ", " : "", lo->name);
	}
	if (vals > 1)
		gw_error("option '%.*s' is ambiguous: it could be %s", (int)n + 2, arg, list);
	else
		gw_error("unrecognized option '%.*s'", (int)n + 2, arg);
}

int gw_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
	      const char *file_opts)
{
	char so[64], name[128];
	const char *lng;
	int c, idx = -1, plus = shortopts[0] == '+', before = optind;

	/* a leading ':' makes a missing value ':' rather than '?' */
	snprintf(so, sizeof(so), "%s:%s", plus ? "+" : "", shortopts + plus);
	opterr = 0;
	c = getopt_long(argc, argv, so, longopts, &idx);
	/* a long option is always its whole argument: optind moved past it
	 * (within a cluster of short ones optind stays until its end) */
	lng = optind > before && optind - 1 < argc ? long_typed(name, sizeof(name), argv, optind - 1) : NULL;
	if (c == ':') {
		if (!lng)
			snprintf(name, sizeof(name), "-%c", optopt);
		gw_error("option '%s' needs %s", name,
			 optopt && strchr(file_opts, optopt) ? "a file name" : "a value");
		return '?';
	}
	if (c == '?') {
		if (lng && !optopt)
			say_unknown_long(argv[optind - 1], longopts);
		else if (lng)
			gw_error("option '%s' takes no value", name);
		else
			gw_error("unrecognized option '-%c'", optopt);
		return '?';
	}
	if (c > 0 && c != '/' && optarg && strchr(file_opts, c)) {
		const char *no_std = strchr(file_opts, '/');

		if (idx >= 0)
			snprintf(name, sizeof(name), "--%s", longopts[idx].name);
		else
			snprintf(name, sizeof(name), "-%c", c);
		if (no_std && strchr(no_std, c) && !strcmp(optarg, "-")) {
			gw_error("option '%s' needs a file name, not '-' (it cannot be standard output); "
				 "a file named '-' is given as ./-", name);
			return '?';
		}
		/* "--html -- a.gwr" would write a file named "--" */
		if (!*optarg) {
			gw_error("option '%s' needs a file name, not an empty one", name);
			return '?';
		}
		if (optarg[0] == '-' && optarg[1]) {
			gw_error("option '%s' needs a file name, not '%s' (an option?); a file whose name "
				 "starts with '-' is given as ./%s", name, optarg, optarg);
			return '?';
		}
	}
	return c;
}
