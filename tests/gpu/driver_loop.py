"""A CUDA program without any CUDA runtime: the driver API through ctypes,
one empty kernel (PTX, JIT-compiled by the driver) launched N times. It
shows a CUPTI of another major (12.x under driver 580) tracing a job that
loads no libcudart at all. Prints the launches made.
    python3 tests/gpu/driver_loop.py [N]
"""
import ctypes
import sys

PTX = b"""
.version 7.0
.target sm_50
.address_size 64
.visible .entry noop()
{
    ret;
}
"""


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    cu = ctypes.CDLL("libcuda.so.1")

    def check(what, rc):
        if rc != 0:
            sys.exit("%s failed: CUresult %d" % (what, rc))

    dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check("cuInit", cu.cuInit(0))
    check("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), 0))
    check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    check("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
    check("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PTX)))
    check("cuModuleGetFunction", cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"noop"))
    u = ctypes.c_uint
    for _ in range(n):
        check("cuLaunchKernel", cu.cuLaunchKernel(fn, u(1), u(1), u(1), u(32), u(1), u(1), u(0),
                                                  None, None, None))
    check("cuCtxSynchronize", cu.cuCtxSynchronize())
    print("launched", n)


if __name__ == "__main__":
    main()
