#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "args.h"

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
