/* Pure verdict logic for `gpuwhy check`; thresholds are documented in docs/CHECK.md. */
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"
#include "check.h"

enum check_status verdict_pcie(unsigned gen, unsigned gen_max, unsigned width, unsigned width_max)
{
	if (!gen || !gen_max || !width || !width_max)
		return CK_NA;
	if (gen < gen_max || width < width_max)
		/* half the lanes or two generations down is a broken slot, not a power state */
		return (width * 2 <= width_max || gen + 2 <= gen_max) ? CK_FAIL : CK_WARN;
	return CK_PASS;
}

enum check_status verdict_power_limit(double limit_w, double default_w)
{
	if (limit_w <= 0 || default_w <= 0)
		return CK_NA;
	if (limit_w < 0.9 * default_w)
		return limit_w < 0.7 * default_w ? CK_FAIL : CK_WARN;
	return CK_PASS;
}

enum check_status verdict_bandwidth(double measured, double expected)
{
	if (measured <= 0 || expected <= 0)
		return CK_NA;
	if (measured < 0.5 * expected)
		return measured < 0.25 * expected ? CK_FAIL : CK_WARN;
	return CK_PASS;
}

enum check_status verdict_temperature(unsigned temp_c, unsigned slowdown_c)
{
	if (!temp_c || !slowdown_c)
		return CK_NA;
	if (temp_c + 5 >= slowdown_c)
		return temp_c >= slowdown_c ? CK_FAIL : CK_WARN;
	return CK_PASS;
}

enum check_status verdict_throttle(uint64_t reasons)
{
	if (reasons & (0x8 | 0x40 | 0x80)) /* HW slowdown, HW thermal, HW power brake */
		return CK_FAIL;
	if (reasons & (0x4 | 0x20)) /* SW power cap, SW thermal */
		return CK_WARN;
	return CK_PASS;
}

enum check_status verdict_governor(const char *g)
{
	if (!g || !*g)
		return CK_NA;
	if (!strncmp(g, "performance", 11))
		return CK_PASS;
	if (!strncmp(g, "powersave", 9))
		return CK_WARN;
	return CK_PASS; /* schedutil/ondemand ramp fast enough under load */
}

enum check_status verdict_thp(const char *thp)
{
	if (!thp || !*thp)
		return CK_NA;
	return strstr(thp, "[never]") ? CK_WARN : CK_PASS;
}

enum check_status verdict_threads(unsigned threads, unsigned cores)
{
	if (!cores)
		return CK_NA;
	if (threads > 2 * cores)
		return CK_FAIL;
	return threads > cores ? CK_WARN : CK_PASS;
}

const char *topology_name(int level)
{
	switch (level) {
	case 0: return "same board";
	case 10: return "one PCIe switch (PIX)";
	case 20: return "several PCIe switches (PXB)";
	case 30: return "one host bridge (PHB)";
	case 40: return "same NUMA node (NODE)";
	case 50: return "across NUMA nodes (SYS)";
	default: return "unknown";
	}
}

enum check_status verdict_topology(int level)
{
	if (level < 0 || level > 50)
		return CK_NA;
	/* crossing the inter-socket link halves peer bandwidth and adds latency to
	 * every collective: data-parallel training should not pair such GPUs */
	return level >= 50 ? CK_WARN : CK_PASS;
}

enum check_status verdict_row_remap(unsigned pending, unsigned failure)
{
	if (failure)
		return CK_FAIL;
	return pending ? CK_WARN : CK_PASS;
}
