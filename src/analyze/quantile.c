/* Quantiles by selection (no full sort), and the comparison of uint64_t
 * values qsort() needs. */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

/* Quickselect (Hoare): the k-th smallest of x[0..n) (k < n) in O(n) on
 * average; reorders x. One definition per element type. */
#define QUICKSELECT(NAME, T)                                              \
	static T NAME(T *x, size_t n, size_t k)                           \
	{                                                                 \
		size_t lo = 0, hi = n - 1;                                \
                                                                          \
		while (lo < hi) {                                         \
			T pivot = x[lo + (hi - lo) / 2], tmp;             \
			size_t i = lo, j = hi;                            \
                                                                          \
			while (i <= j) {                                  \
				while (x[i] < pivot)                      \
					i++;                              \
				while (x[j] > pivot)                      \
					j--;                              \
				if (i <= j) {                             \
					tmp = x[i];                       \
					x[i] = x[j];                      \
					x[j] = tmp;                       \
					i++;                              \
					if (j == 0)                       \
						break;                    \
					j--;                              \
				}                                         \
			}                                                 \
			if (k <= j)                                       \
				hi = j;                                   \
			else if (k >= i)                                  \
				lo = i;                                   \
			else                                              \
				break;                                    \
		}                                                         \
		return x[k];                                              \
	}

QUICKSELECT(select_double, double)
QUICKSELECT(select_uint32, uint32_t)

double quantile(double *x, size_t n, double q)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)(q * (double)(n - 1) + 0.5);
	return select_double(x, n, k < n ? k : n - 1);
}

uint32_t select_u32(uint32_t *v, size_t n, size_t k)
{
	return select_uint32(v, n, k);
}

int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}
