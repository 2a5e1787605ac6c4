// CK(call): a CUDA runtime call that must succeed, else main() says which
// and returns 1 (tests/gpu/target.cu, bench/graph_launch.cu).
#ifndef GW_CUDA_CHECK_H
#define GW_CUDA_CHECK_H
#include <stdio.h>

#define CK(call)                                                                   \
	do {                                                                       \
		cudaError_t e_ = (call);                                           \
		if (e_ != cudaSuccess) {                                           \
			fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
			return 1;                                                  \
		}                                                                  \
	} while (0)
#endif
