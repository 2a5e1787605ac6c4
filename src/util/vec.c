/* Growable arrays (vec.h). */
#include <stdlib.h>

#include "vec.h"

int vec_grow_(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	/* small first: a crafted file can make many arrays of one item */
	ncap = *cap ? *cap * 2 : (elem < 64 ? 256 / elem : 4);
	while (ncap < need)
		ncap *= 2;
	if (ncap > (size_t)-1 / elem)
		return -ENOMEM;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}
