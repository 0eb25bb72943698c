"""FlashTile's mma table on the hardware: for each instruction (f16 / bf16
m16n8k16 into f32 and f16, s8 m16n8k32 into s32, e4m3 / e5m2 m16n8k32
into f32), one warp gathers a random A and B tile by the compiler's
fragment tables (.gpu/mma_tables.json from flashtile-mma-tables), runs the
instruction (tools/gpu/mma_tile.cu, .gpu/mma_tile.cubin) and scatters D by
the C table; the result must be torch's product: exact for s8, and for
the float types within the accumulator's rounding of the float64 product
of the same (converted) operands. Through the CUDA driver API (ctypes), on
torch's context.

    python3 tools/gpu/check_mma.py [--gpu-dir .gpu]
"""

import argparse
import ctypes
import json
import os
import sys

import torch


def driver():
    cuda = ctypes.CDLL("libcuda.so.1")
    for name in ("cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel"):
        getattr(cuda, name).restype = ctypes.c_int
    return cuda


def check(status, what):
    if status != 0:
        raise RuntimeError(f"{what} failed: CUDA error {status}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", ".gpu"))
    args = parser.parse_args()
    with open(os.path.join(args.gpu_dir, "mma_tables.json")) as f:
        tables = json.load(f)
    with open(os.path.join(args.gpu_dir, "mma_tile.cubin"), "rb") as f:
        image = f.read()
    dev = "cuda"
    torch.zeros(1, device=dev)  # torch's context is current from here
    cuda = driver()
    module = ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), image),
          "cuModuleLoadData")
    cc = torch.cuda.get_device_capability()
    gen = torch.Generator().manual_seed(25)
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16,
              "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2,
              "s8": torch.int8}
    acc_dtypes = {"f32": torch.float32, "f16": torch.float16,
                  "s32": torch.int32}
    results = []
    print(f"{'instruction':34} {'max err':>10} {'bound':>10}  result")
    for t in tables:
        m, n, k = t["shape"]
        label = f"m{m}n{n}k{k}.{t['acc']}.{t['a']}.{t['b']}"
        if cc[0] * 10 + cc[1] < t["min_cc"]:
            print(f"{label:34} {'':>10} {'':>10}  SKIP (sm_{t['min_cc']}+)")
            continue
        if t["a"] == "s8":
            a = torch.randint(-128, 128, (m, k), generator=gen,
                              dtype=torch.int8)
            b = torch.randint(-128, 128, (k, n), generator=gen,
                              dtype=torch.int8)
        else:
            a = torch.randn(m, k, generator=gen).to(dtypes[t["a"]])
            b = torch.randn(k, n, generator=gen).to(dtypes[t["b"]])
        a, b = a.to(dev), b.to(dev)
        d = torch.full((m, n), -7, device=dev).to(acc_dtypes[t["acc"]])
        idx = [torch.tensor([r * cols + c for r, c in t[op]],
                            dtype=torch.int32, device=dev)
               for op, cols in (("A", k), ("B", n), ("C", n))]
        function = ctypes.c_void_p()
        name = f"mma_{t['a']}_{t['b']}_{t['acc']}".encode()
        check(cuda.cuModuleGetFunction(ctypes.byref(function), module, name),
              f"cuModuleGetFunction({name.decode()})")
        pointers = [ctypes.c_uint64(x.data_ptr())
                    for x in (a, b, d, *idx)]
        params = (ctypes.c_void_p * len(pointers))(
            *[ctypes.cast(ctypes.byref(p), ctypes.c_void_p)
              for p in pointers])
        check(cuda.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, None,
                                  params, None), "cuLaunchKernel")
        torch.cuda.synchronize()
        if t["a"] == "s8":
            ref = a.long().cpu() @ b.long().cpu()
            err = (d.long().cpu() - ref).abs().max().item()
            bound = 0
        else:
            ref = a.float().double() @ b.float().double()
            err = ((d.double() - ref).abs().max() / ref.abs().max()).item()
            # One rounding of each partial sum into the accumulator.
            bound = (1e-3 if t["acc"] == "f16" else 1e-5) * 4
        ok = err <= bound and not torch.isnan(d.double()).any().item()
        results.append(ok)
        print(f"{label:34} {err:10.2e} {bound:10.2e}  "
              f"{'PASS' if ok else 'FAIL'}")
    print(f"{sum(results)}/{len(results)} instructions passed")
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
