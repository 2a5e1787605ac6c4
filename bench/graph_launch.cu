// What one CUDA graph launch costs the host, by the graph's size: a chain of
// NODES tiny kernels captured once, then launched ITERS times, each launch
// followed by a stream synchronization (the GPU idle while the host
// launches, as a host-bound jitted step). Prints one JSON line: the median
// time of the cudaGraphLaunch call itself and of a whole iteration.
// bench/graph_launch_cost.sh runs it uninstrumented and under `gpuwhy record`.
//   graph_launch NODES [ITERS]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "../tests/gpu/cuda_check.h"

__global__ void gw_tiny(float *x)
{
	x[threadIdx.x] += 1.0f;
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int nodes = argc > 1 ? atoi(argv[1]) : 64, iters = argc > 2 ? atoi(argv[2]) : 2000;
	float *d;
	cudaStream_t st;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	double *call, *iter;

	if (nodes < 1 || iters < 10)
		return 2;
	call = (double *)malloc(sizeof(double) * iters);
	iter = (double *)malloc(sizeof(double) * iters);
	if (!call || !iter)
		return 1;
	CK(cudaMalloc(&d, 32 * sizeof(float)));
	CK(cudaStreamCreate(&st));
	CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
	for (int i = 0; i < nodes; i++)
		gw_tiny<<<1, 32, 0, st>>>(d);
	CK(cudaStreamEndCapture(st, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	for (int i = 0; i < 20; i++) /* the first launches upload the graph */
		CK(cudaGraphLaunch(ge, st));
	CK(cudaStreamSynchronize(st));
	for (int i = 0; i < iters; i++) {
		double t0 = now_us(), t1, t2;

		CK(cudaGraphLaunch(ge, st));
		t1 = now_us();
		CK(cudaStreamSynchronize(st));
		t2 = now_us();
		call[i] = t1 - t0;
		iter[i] = t2 - t0;
	}
	qsort(call, iters, sizeof(*call), cmp);
	qsort(iter, iters, sizeof(*iter), cmp);
	printf("{\"nodes\": %d, \"iters\": %d, \"launch_call_us\": %.2f, \"iteration_us\": %.2f}\n", nodes, iters,
	       call[iters / 2], iter[iters / 2]);
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(d));
	free(call);
	free(iter);
	return 0;
}
