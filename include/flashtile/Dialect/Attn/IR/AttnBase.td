//===- AttnBase.td - The attn dialect -------------------------*- tablegen -*-===//

#ifndef FLASHTILE_ATTN_BASE
#define FLASHTILE_ATTN_BASE

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::flashtile::attn";
  let summary = "FlashAttention-style kernels at kernel and tile level";
  let description = [{
    The `attn` dialect describes attention kernels at two levels.

    * **Kernel level**: an `attn.kernel` holds the kernel's tensors (Q, K, V,
      O, LSE) as block arguments and one `attn.attention` op that states what
      to compute: causal / local masking, the softmax scale and the
      `score_mod` / `mask_mod` hooks. The chip is an `#attn.arch<...>`
      attribute; the tile configuration is an `#attn.config<...>` attribute
      chosen by `attn-select-config` or given by the user.

    * **Tile level**: `attn-expand-to-tiles` rewrites the `attn.attention` op
      into a block-level tile program: shared buffers (`attn.smem_alloc`),
      asynchronous global-to-shared copies, the QK^T and PV tile matmuls, the
      online softmax, masking, the KV loop and the epilogue. Values of type
      `!attn.frag<...>` live in registers, spread over the block's warps in the
      mma.sync fragment layout. The shared-memory allocator and the barrier
      pass work on this level.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // FLASHTILE_ATTN_BASE
