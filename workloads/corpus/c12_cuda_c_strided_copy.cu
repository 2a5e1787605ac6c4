// C12's copy-bandwidth evidence (CUDA C): a feature store kept row-major in pinned host
// memory (65536 rows x 1024 float features); each step uploads 64 selected features of every
// row with cudaMemcpy2DAsync: 65536 rows of 256 bytes at a 4 KB pitch. The 16 MB copy runs far
// under the PCIe link's bandwidth although the memory is pinned.
// No placement fault can be planted on the test machine (one NUMA node, full x16 link): this
// is the only C12 evidence a program can produce there, pinned copies far under the link's
// bandwidth; gpuwhy's C12 fix text (slot, NUMA binding) does not apply to its cause.
// --fix: the store keeps the selected features contiguous (feature-major blocks), so each
// step is one contiguous 16 MB cudaMemcpyAsync at full link speed.
#include "cudac.h"

__global__ void score(const float *x, float *out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  for (int c = 0; c < cols; c++) s += x[(size_t)r * cols + c] * (c + 1);
  out[r] = tanhf(s * 1e-3f);
}

int main(int argc, char **argv) {
  Args a = parse_args(argc, argv);
  const int rows = a.smoke ? 1024 : 65536, width = 1024, sel = 64, first = 128;
  float *store, *dsel, *dout;
  CK(cudaMallocHost(&store, (size_t)rows * width * sizeof(float)));
  for (size_t i = 0; i < (size_t)rows * width; i++) store[i] = (float)(i % 1013) * 1e-3f;
  float *contig = store;  // --fix: the selected block, stored contiguously at the start
  CK(cudaMalloc(&dsel, (size_t)rows * sel * sizeof(float)));
  CK(cudaMalloc(&dout, rows * sizeof(float)));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto step = [&](int i) {
    if (a.fix) {
      CK(cudaMemcpyAsync(dsel, contig, (size_t)rows * sel * sizeof(float), cudaMemcpyHostToDevice, st));
    } else {
      // gpuwhy: plants C12 (strided 2D copy: 256-byte rows at a 4 KB pitch)
      CK(cudaMemcpy2DAsync(dsel, sel * sizeof(float), store + first, width * sizeof(float), sel * sizeof(float),
                           rows, cudaMemcpyHostToDevice, st));
    }
    score<<<(rows + 255) / 256, 256, 0, st>>>(dsel, dout, rows, sel);
    CK(cudaGetLastError());
  };
  run("c12_cuda_c_strided_copy", a, step, rows);
  return 0;
}
