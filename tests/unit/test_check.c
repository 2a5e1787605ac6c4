/* Verdict logic of `gpuwhy check` on named synthetic values. */
#include "check/check.h"
#include "util/util.h"
#include "t.h"

int main(void)
{
	/* a link at Gen3 x8 of Gen5 x16: broken slot */
	CHECK(verdict_pcie(3, 5, 8, 16) == CK_FAIL, "Gen3 x8 of Gen5 x16");
	CHECK(verdict_pcie(4, 5, 16, 16) == CK_WARN, "Gen4 x16 of Gen5 x16");
	CHECK(verdict_pcie(5, 5, 16, 16) == CK_PASS, "Gen5 x16 of Gen5 x16");
	CHECK(verdict_pcie(0, 5, 16, 16) == CK_NA, "unknown generation");
	/* a power limit under default */
	CHECK(verdict_power_limit(450, 700) == CK_FAIL, "450 W of 700 W");
	CHECK(verdict_power_limit(600, 700) == CK_WARN, "600 W of 700 W");
	CHECK(verdict_power_limit(700, 700) == CK_PASS, "700 W of 700 W");
	CHECK(verdict_power_limit(0, 700) == CK_NA, "unknown limit");
	CHECK(pcie_practical_gbs(5, 16) > 50 && pcie_practical_gbs(5, 16) < 52, "Gen5 x16 ~51 GB/s");
	CHECK(pcie_practical_gbs(3, 16) > 12 && pcie_practical_gbs(3, 16) < 13, "Gen3 x16 ~12.8 GB/s");
	CHECK(verdict_bandwidth(50, 51) == CK_PASS, "50 of 51 GB/s");
	CHECK(verdict_bandwidth(20, 51) == CK_WARN, "20 of 51 GB/s");
	CHECK(verdict_bandwidth(10, 51) == CK_FAIL, "10 of 51 GB/s");
	CHECK(verdict_temperature(60, 87) == CK_PASS, "60 C of 87");
	CHECK(verdict_temperature(84, 87) == CK_WARN, "84 C of 87");
	CHECK(verdict_temperature(88, 87) == CK_FAIL, "88 C of 87");
	CHECK(verdict_throttle(0x1) == CK_PASS, "idle reason only");
	CHECK(verdict_throttle(0x4) == CK_WARN, "SW power cap");
	CHECK(verdict_throttle(0x40) == CK_FAIL, "HW thermal");
	CHECK(verdict_governor("powersave") == CK_WARN, "powersave");
	CHECK(verdict_governor("performance") == CK_PASS, "performance");
	CHECK(verdict_thp("always madvise [never]") == CK_WARN, "THP off");
	CHECK(verdict_thp("always [madvise] never") == CK_PASS, "THP madvise");
	CHECK(verdict_threads(40, 16) == CK_FAIL, "40 runnable on 16 cores");
	CHECK(verdict_threads(20, 16) == CK_WARN, "20 runnable on 16 cores");
	CHECK(verdict_threads(8, 16) == CK_PASS, "8 runnable on 16 cores");
	CHECK(cpulist_subset("0-3,8", "0-15"), "0-3,8 in 0-15");
	CHECK(!cpulist_subset("0-3,20", "0-15"), "20 not in 0-15");
	CHECK(cpulist_subset("4", "0-3,4-7"), "4 in 0-3,4-7");
	CHECK(verdict_topology(50) == CK_WARN, "pair across NUMA nodes");
	CHECK(verdict_topology(10) == CK_PASS, "pair on one PCIe switch");
	CHECK(verdict_topology(-1) == CK_NA, "unknown topology");
	CHECK(verdict_row_remap(0, 1) == CK_FAIL, "failed row remap");
	CHECK(verdict_row_remap(1, 0) == CK_WARN, "pending row remap");
	CHECK(verdict_row_remap(0, 0) == CK_PASS, "no remap");
	T_DONE();
}
