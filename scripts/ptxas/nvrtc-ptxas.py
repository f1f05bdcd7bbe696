#!/usr/bin/env python3
"""Registers, spills and shared memory of one kernel specialisation, as ptxas reports them
through NVRTC (no GPU, no CUDA toolkit: libnvrtc alone, e.g. from the nvidia-cuda-nvrtc wheel
that CI installs, found on LD_LIBRARY_PATH).

    python3 scripts/ptxas/nvrtc-ptxas.py scan.cu -DTALLY_ELEM=float -DTALLY_OUT=float ...

The kernel file and the headers are read from crates/tally/src/kernels; `codes.cuh` (which the
library generates) from scripts/scan-experiment/codes.cuh unless TALLY_CODES names another.
Extra arguments are NVRTC options; TALLY_ARCH picks the architecture (sm_90 by default). Prints
ptxas's lines for the kernel entry."""
import ctypes, os, sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
kernels = os.path.join(root, "crates", "tally", "src", "kernels")
codes = os.environ.get("TALLY_CODES", os.path.join(root, "scripts", "scan-experiment", "codes.cuh"))
nvrtc = ctypes.CDLL("libnvrtc.so.13")
names = ["common.cuh", "warp.cuh", "block.cuh", "cluster.cuh", "binning.cuh", "lookback.cuh", "compact.cuh", "exact.cuh"]
texts = [open(os.path.join(kernels, n)).read() for n in names] + [open(codes).read()]
names.append("codes.cuh")
source = open(os.path.join(kernels, sys.argv[1])).read()
strings = lambda xs: (ctypes.c_char_p * len(xs))(*[x.encode() for x in xs])
prog = ctypes.c_void_p()
assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), sys.argv[1].encode(), len(names),
                                strings(texts), strings(names)) == 0
options = ["--gpu-architecture=" + os.environ.get("TALLY_ARCH", "sm_90"), "--std=c++17", "--ptxas-options=-v"] + sys.argv[2:]
status = nvrtc.nvrtcCompileProgram(prog, len(options), strings(options))
size = ctypes.c_size_t()
nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetProgramLog(prog, log)
lines = log.value.decode().splitlines()
print("\n".join(l for l in lines if "error" in l or "Used" in l or "spill" in l) or "\n".join(lines))
sys.exit(status)
