//===- Passes.td - Conversion passes --------------------------*- tablegen -*-===//

#ifndef FLASHTILE_CONVERSION_PASSES
#define FLASHTILE_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertAttnToNVVM : Pass<"convert-attn-to-nvvm", "::mlir::ModuleOp"> {
  let summary = "Lower tile-level attn kernels to LLVM + NVVM (the sm80 code path)";
  let description = [{
    Each allocated, barrier-complete tile-level `attn.kernel` becomes an
    `llvm.func` with the `nvvm.kernel` attribute and the parameter list of
    `KernelABI.h`. Each tile op has its own pattern:

    * `attn.copy_async`: 16-byte `cp.async.cg` chunks into a swizzled layout
      (the 16-byte chunk index is XORed with the row, so the 8 rows an
      `ldmatrix` phase reads hit 8 different bank groups); rows past the
      sequence end are zero-filled through the copy's source size.
    * `attn.load_frag`, `attn.mma`: `ldmatrix.x4` (`.trans` for an
      operand stored with K outermost, as V in P V) and the mma table's
      `mma.sync` (m16n8k16 for f16 / bf16, m16n8k32 for 8-bit types) into
      f32, f16 or s32 accumulators; an A operand in registers (P) needs no
      load.
    * `attn.online_softmax`: exp2 with the scale folded into one FMA, row
      maxima reduced across the quad with `shfl.sync.bfly`.
    * `attn.epilogue`: normalise, stage O through shared memory, 128-bit
      coalesced stores, LSE in f32.
    * `attn.store_tile` with `accumulate` (dQ's fp32 accumulator): each
      thread's pairs of adjacent columns as one `red.global.add.v2.f32`
      where the ISA has it and the tensor's rows keep pairs 8-byte aligned
      (tested at run time, once per store), else one atomic add each.

    Fragments become per-thread arrays in the layout of `FragmentLayout.h`.
    Index arithmetic is 32-bit; strides and addresses are 64-bit.

    ```mlir
    attn.kernel @fa arch(#attn.arch<sm_120>) config(...) { ... }
    // becomes
    llvm.func @fa(%q: !llvm.ptr<1>, ...) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
    ```
  }];
  let options = [
    Option<"isa", "isa", "std::string", "\"\"",
           "The ISA the PTX will target (sm_90, ...): an instruction only "
           "some ISAs have (red.global.add.v2.f32: sm_90 on) is used only "
           "where it has it. Empty: each kernel's own chip">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

#endif // FLASHTILE_CONVERSION_PASSES
