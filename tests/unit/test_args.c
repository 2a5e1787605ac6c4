/* The strict number parser every numeric option uses (src/util/args.c). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "t.h"
#include "util/args.h"

int main(void)
{
	static const struct {
		const char *s;
		int want; /* 0, -EINVAL or -ERANGE */
		double v;
	} dbl[] = {
		{ "5", 0, 5 }, { "0.5", 0, 0.5 }, { "1e1", 0, 10 }, { "100", 0, 100 },
		{ "nan", -EINVAL, 0 }, { "NaN", -EINVAL, 0 }, { "inf", -EINVAL, 0 },
		{ "-inf", -EINVAL, 0 }, { "infinity", -EINVAL, 0 }, { "5abc", -EINVAL, 0 },
		{ "", -EINVAL, 0 }, { " 5", -EINVAL, 0 }, { "5 ", -EINVAL, 0 }, { "abc", -EINVAL, 0 },
		{ "0", -ERANGE, 0 }, { "-1", -ERANGE, 0 }, { "101", -ERANGE, 0 },
		{ "1e400", -ERANGE, 0 }, { "1e-400", -ERANGE, 0 },
	};
	static const struct {
		const char *s;
		int want;
		long v;
	} lng[] = {
		{ "1", 0, 1 }, { "1000", 0, 1000 }, { "50abc", -EINVAL, 0 }, { "1e2", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 }, { "", -EINVAL, 0 }, { " 5", -EINVAL, 0 },
		{ "0", -ERANGE, 0 }, { "1001", -ERANGE, 0 }, { "4294967297", -ERANGE, 0 },
		{ "99999999999999999999", -ERANGE, 0 }, { "-5", -ERANGE, 0 },
	};
	static const struct {
		const char *s;
		int want;
		uint64_t v;
	} sz[] = {
		{ "4096", 0, 4096 }, { "500M", 0, 500ull << 20 }, { "2G", 0, 2ull << 30 },
		{ "1.5k", 0, 1536 }, { "10MB", 0, 10ull << 20 }, { "nan", -EINVAL, 0 },
		{ "inf", -EINVAL, 0 }, { "-1G", -EINVAL, 0 }, { "10Q", -EINVAL, 0 },
		{ "5MBx", -EINVAL, 0 }, { "1e30", -ERANGE, 0 }, { "18446744073709551616", -ERANGE, 0 },
	};

	for (size_t i = 0; i < sizeof(dbl) / sizeof(dbl[0]); i++) {
		double v = -7;
		int r = gw_parse_double(dbl[i].s, 0.001, 100, &v);

		CHECK(r == dbl[i].want, "double '%s': %d, want %d", dbl[i].s, r, dbl[i].want);
		CHECK(r < 0 ? v == -7 : v == dbl[i].v, "double '%s': value %g", dbl[i].s, v);
	}
	for (size_t i = 0; i < sizeof(lng) / sizeof(lng[0]); i++) {
		long v = -7;
		int r = gw_parse_long(lng[i].s, 1, 1000, &v);

		CHECK(r == lng[i].want, "long '%s': %d, want %d", lng[i].s, r, lng[i].want);
		CHECK(r < 0 ? v == -7 : v == lng[i].v, "long '%s': value %ld", lng[i].s, v);
	}
	for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		uint64_t v = 7;
		int r = gw_parse_size(sz[i].s, UINT64_MAX, &v);

		CHECK(r == sz[i].want, "size '%s': %d, want %d", sz[i].s, r, sz[i].want);
		CHECK(r < 0 ? v == 7 : v == sz[i].v, "size '%s': value %llu", sz[i].s,
		      (unsigned long long)v);
	}
	T_DONE();
}
