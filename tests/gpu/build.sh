#!/usr/bin/env bash
# Builds gpuwhy, the injection library and the CUDA C target on the GPU machine.
# Usage (repository root): tests/gpu/build.sh LOGDIR
set -u
out=${1:?usage: tests/gpu/build.sh LOGDIR}
cuda=${CUDA_HOME:-$(ls -d /usr/local/cuda-13.0 /usr/local/cuda 2>/dev/null | head -1)}
zflags=()
if ! echo '#include <zlib.h>' | cc -E -x c - >/dev/null 2>&1; then
  # that image has libz.so.1 but no zlib.h: the header travels in .gpudeps (not
  # committed). Before the device call, on the development machine:
  #   mkdir -p .gpudeps/include && cp /usr/include/zlib.h /usr/include/zconf.h .gpudeps/include/
  # and name ".gpudeps" in the call's carry list.
  zflags=(CFLAGS=-I"$PWD/.gpudeps/include" ZLIB=-l:libz.so.1)
fi
make -j8 CUDA_HOME="$cuda" "${zflags[@]}" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
nvcc -O2 -o build/gpu-target tests/gpu/target.cu -ldl || exit 1
