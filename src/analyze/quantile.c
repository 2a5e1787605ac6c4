/* Quantiles by selection (no full sort), and the comparison of uint64_t
 * values qsort() needs. */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

static void swap_d(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

/* Quickselect (Hoare): the k-th smallest in O(n) on average; reorders x. */
double quantile(double *x, size_t n, double q)
{
	size_t k, lo = 0, hi;

	if (!n)
		return 0;
	k = (size_t)(q * (double)(n - 1) + 0.5);
	if (k >= n)
		k = n - 1;
	hi = n - 1;
	while (lo < hi) {
		double pivot = x[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (x[i] < pivot)
				i++;
			while (x[j] > pivot)
				j--;
			if (i <= j) {
				swap_d(&x[i], &x[j]);
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return x[k];
}

int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}
