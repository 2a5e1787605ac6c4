// A CUDA C target with exactly known activity (tests/gpu/sync_records.sh,
// inject_faults.sh and suite.sh check its recording against these counts):
// N kernels of grid (GRID,1,1) x block (BLOCK,1,1), M pageable and K pinned
// host-to-device copies, S stream synchronizations, R NVTX ranges.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda_check.h"

enum { N = 100, GRID = 64, BLOCK = 128, M = 10, K = 7, S = 5, R = 3 };
enum { BYTES = 1 << 20 };

__global__ void gw_scale(float *x, int n, float a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = x[i] * a + 1.0f;
}

int main(void)
{
	float *d, *pinned, *pageable;
	cudaStream_t st;
	int n = GRID * BLOCK;

	CK(cudaMalloc(&d, BYTES));
	CK(cudaMallocHost(&pinned, BYTES));
	pageable = (float *)malloc(BYTES);
	for (int i = 0; i < BYTES / 4; i++)
		pageable[i] = pinned[i] = 1.0f;
	CK(cudaStreamCreate(&st));
	for (int r = 0; r < R; r++) {
		nvtxRangePushA("gw_step");
		for (int i = 0; i < N / R + (r < N % R); i++) {
			gw_scale<<<GRID, BLOCK, 0, st>>>(d, n, 0.5f);
			CK(cudaGetLastError());
		}
		nvtxRangePop();
	}
	for (int i = 0; i < M; i++)
		CK(cudaMemcpy(d, pageable, BYTES, cudaMemcpyHostToDevice));
	for (int i = 0; i < K; i++)
		CK(cudaMemcpyAsync(d, pinned, BYTES, cudaMemcpyHostToDevice, st));
	for (int i = 0; i < S; i++)
		CK(cudaStreamSynchronize(st));
	printf("{\"kernels\":%d,\"grid\":%d,\"block\":%d,\"pageable_htod\":%d,\"pinned_htod\":%d,"
	       "\"stream_syncs\":%d,\"nvtx_ranges\":%d}\n", N, GRID, BLOCK, M, K, S, R);
	CK(cudaFree(d));
	CK(cudaFreeHost(pinned));
	free(pageable);
	return 0;
}
