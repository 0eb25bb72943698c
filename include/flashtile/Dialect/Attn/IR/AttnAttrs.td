//===- AttnAttrs.td - attn attributes and types ---------------*- tablegen -*-===//

#ifndef FLASHTILE_ATTN_ATTRS
#define FLASHTILE_ATTN_ATTRS

include "flashtile/Dialect/Attn/IR/AttnBase.td"
include "mlir/IR/AttrTypeBase.td"

//===----------------------------------------------------------------------===//
// #attn.arch
//===----------------------------------------------------------------------===//

def Attn_ArchAttr : AttrDef<Attn_Dialect, "Arch"> {
  let mnemonic = "arch";
  let summary = "The target chip; every target fact comes from its table row";
  let description = [{
    Names the chip a kernel is compiled for. The attribute holds only the chip;
    `getInfo()` returns its row of the one target table
    (`flashtile/Target/Arch.h`): code path, shared memory per block / per SM /
    reserved per block, registers and threads per SM, the PTX target and the
    minimum PTX version.

    ```mlir
    #attn.arch<sm_120>
    ```

    Known chips: sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120, sm_121.
    sm_120 and sm_121 take the `sm80` code path (ldmatrix, mma.sync,
    cp.async). sm_100 parses but is refused by the compiler: its tcgen05/TMEM
    path is not implemented. sm_75 parses and is refused: it lacks cp.async
    and bf16 mma.sync. Any other name is a parse error that lists the known
    chips.
  }];
  let parameters = (ins "::flashtile::Chip":$chip);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    const ::flashtile::ArchInfo &getInfo() const {
      return ::flashtile::getArchInfo(getChip());
    }
  }];
}

//===----------------------------------------------------------------------===//
// #attn.config
//===----------------------------------------------------------------------===//

def Attn_ConfigAttr : AttrDef<Attn_Dialect, "Config"> {
  let mnemonic = "config";
  let summary = "The tile configuration of an attention kernel";
  let description = [{
    The parameters that shape the tile program:

    * `tile_m`: query rows per block; each warp owns `tile_m / warps` rows,
      a multiple of 16 (the M of mma.m16n8k16).
    * `tile_n`: key/value rows per KV-loop step, a multiple of 16 (P feeds
      the PV mma as its A operand, whose K is 16).
    * `stages`: K/V shared-memory slots, 1 to 4. With 1 stage the copy of
      V[j] still overlaps QK^T[j] and the copy of K[j-1] overlaps PV[j].
    * `warps`: warps per block, 1 to 16: `warps / kv_warps` stacked along M,
      each of those `kv_warps` wide.
    * `q_in_regs`: Q is moved to registers before the KV loop, so its shared
      bytes can be reused by V and by the O staging tile.
    * `kv_warps` (default 1): warps that split each KV tile. Warp `w` takes
      keys `[(w % kv_warps) * tile_n / kv_warps, ...)` of every tile and
      keeps its own row max, row sum and O accumulator; the epilogue merges
      them through shared memory. Scores are `tile_m x tile_n / kv_warps`
      fragments. The decode family uses it: a 16-row Q tile keeps 4 warps
      busy. In a key-grid kernel (the backward's) they split columns
      instead: every product's N (transpose_b, or attn.mma's split_n), so
      each fragment with columns is the warp's share of them, at columns
      `[(w % kv_warps) * N, ...)`, and no value is a partial sum. On the
      query grid they need `pack_gqa` (the kernel's verifier says so).
    * `pack_gqa` (default false): the block's rows are (query position,
      query head) pairs of one KV head, head-minor: packed row `p` is
      position `p / G`, head `kv_head * G + p % G`, with `G = heads_q /
      heads_kv`. The grid's head axis then counts KV heads. A decode step's
      `G` query heads fill the rows of one mma tile and share every K/V load.

    ```mlir
    #attn.config<tile_m = 128, tile_n = 64, stages = 1, warps = 4, q_in_regs = true>
    #attn.config<tile_m = 16, tile_n = 64, stages = 2, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>
    ```
  }];
  let parameters = (ins "int64_t":$tile_m, "int64_t":$tile_n, "int64_t":$stages,
                        "int64_t":$warps, "bool":$q_in_regs,
                        DefaultValuedParameter<"int64_t", "1">:$kv_warps,
                        DefaultValuedParameter<"bool", "false">:$pack_gqa);
  let builders = [
    AttrBuilder<(ins "int64_t":$tile_m, "int64_t":$tile_n, "int64_t":$stages,
                     "int64_t":$warps, "bool":$q_in_regs), [{
      return $_get($_ctxt, tile_m, tile_n, stages, warps, q_in_regs, 1, false);
    }]>
  ];
  let extraClassDeclaration = [{
    /// Warps stacked along M (each owning tile_m / getRowWarps() rows).
    int64_t getRowWarps() const { return getWarps() / getKvWarps(); }
    /// Keys of one KV tile each warp takes.
    int64_t getKeysPerWarp() const { return getTileN() / getKvWarps(); }
  }];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// #attn.problem
//===----------------------------------------------------------------------===//

def Attn_ProblemAttr : AttrDef<Attn_Dialect, "Problem"> {
  let mnemonic = "problem";
  let summary = "What an expanded kernel computes: its mask and softmax scale";
  let description = [{
    `attn-expand-to-tiles` replaces the `attn.attention` op by a tile program
    and records on the kernel what that op said, so that the tile-level
    kernel still answers "what does this compute" (for the launch plan, the
    report and later passes) without a snapshot on the side. The window is
    the effective one: causal is `window_right = 0`; -1 is unbounded.
    `page_table` is the extra argument (0 is the first after the tensors) that pages
    K and V (the attention's `pages`), -1 when they are contiguous.

    ```mlir
    #attn.problem<causal = true, window_left = -1, window_right = 0, softmax_scale = 0.125 : f32>
    ```
  }];
  let parameters = (ins "bool":$causal, "int64_t":$window_left,
                        "int64_t":$window_right, "::mlir::FloatAttr":$softmax_scale,
                        DefaultValuedParameter<"int64_t", "-1">:$page_table);
  let assemblyFormat = "`<` struct(params) `>`";
}

//===----------------------------------------------------------------------===//
// #attn.tensor
//===----------------------------------------------------------------------===//

def Attn_TensorAttr : AttrDef<Attn_Dialect, "Tensor"> {
  let mnemonic = "tensor";
  let summary = "One of a kernel's sequence tensors: its name, role and sizes";
  let description = [{
    Declares a block argument of an `attn.kernel` as one of its sequence
    tensors: a rank-4 `(batch, rows, heads, dim)` tensor (f16, bf16 or f32,
    dim static and contiguous) or a rank-3 f32 `(batch, heads, rows)` tensor
    of one value per row (rows contiguous). `rows` and `heads` name the
    run-time sizes of its sequence and head dimensions, from the kernel
    rules' size names (`flashtile/ABI/KernelRules.h`): `seqlen_q` /
    `heads_q` on the query side, `seqlen_k` / `heads_kv` on the key side.
    `role` is what the kernel does with it: `in` (reads), `out` (writes) or
    `accumulate` (adds to it with f32 atomics; f32 only). The name becomes
    the launch plan's argument name. `workspace`: not an argument but a
    contiguous buffer the plan allocates for each launch and zero-fills
    before its first kernel, for the kernels of a family (`attn.family`) to
    pass values through (a backward's dQ accumulator, its D = rowsum(dO O));
    its sizes must be declared by an argument tensor too.

    `order`, a rank-4 f32 workspace's only: "c_tiles" stores each (batch,
    16-row block, head)'s 16 x dim plane as 16 x 8 tiles of the mma.sync C
    fragment, one after another along the columns, each tile 128 f32 in
    the C table's order (lane `l`'s element `r` at `l * 4 + r`): a warp
    adds or reads a whole tile with one 16-byte access per lane, 512
    contiguous bytes, where the row-major order spreads them over 8 rows
    (8 cache lines). The rows are padded to a multiple of 16; the element
    strides (batch, seq, head) are (ceil(rows / 16) 16 heads dim,
    heads dim, 16 dim). Only attn.store_tile and attn.load_tile with
    `c_tiles` access it.

    ```mlir
    #attn.tensor<"do", "in", "seqlen_q", "heads_q">
    #attn.tensor<"dq_accum", "workspace", "seqlen_q", "heads_q", "c_tiles">
    ```
  }];
  let parameters = (ins "::mlir::StringAttr":$name, "::mlir::StringAttr":$role,
                        "::mlir::StringAttr":$rows, "::mlir::StringAttr":$heads,
                        OptionalParameter<"::mlir::StringAttr">:$order);
  let builders = [
    AttrBuilder<(ins "::mlir::StringAttr":$name, "::mlir::StringAttr":$role,
                     "::mlir::StringAttr":$rows, "::mlir::StringAttr":$heads), [{
      return $_get($_ctxt, name, role, rows, heads, ::mlir::StringAttr());
    }]>
  ];
  let assemblyFormat =
      "`<` $name `,` $role `,` $rows `,` $heads (`,` $order^)? `>`";
  let extraClassDeclaration = [{
    /// The one order a declaration may name (`order`).
    static constexpr ::llvm::StringLiteral kCTiles = "c_tiles";
    /// Whether the tensor is stored in C-fragment tiles.
    bool hasCTiles() const {
      return getOrder() && getOrder().getValue() == kCTiles;
    }
  }];
}

//===----------------------------------------------------------------------===//
// !attn.frag
//===----------------------------------------------------------------------===//

def Attn_FragType : TypeDef<Attn_Dialect, "Frag"> {
  let mnemonic = "frag";
  let summary = "A block-level tile held in registers (mma fragment layout)";
  let description = [{
    A tile of the whole block, spread over its warps' registers in one of
    the mma.sync fragment layouts: warps are stacked along the rows, so every
    row belongs to exactly one warp and row reductions stay inside a warp.
    With a config's `kv_warps` > 1, the type is one KV warp's share: of
    the keys (decode scores), or of the columns (a key-grid kernel's
    accumulators and `cols` vectors).
    The layout kind says which operand's layout the registers follow:

    * `acc`: the C/D layout of an mma (scores, accumulators);
    * `a`: the A layout, as the left operand of an `attn.mma`;
    * `rows`: one value per row (rank 1: the softmax max and sum);
    * `cols`: one value per column of an accumulator (rank 1, f32), held
      by every warp: each lane has the values of the columns its C
      elements sit in. It is the backward's per-query LSE and D beside a
      key-side tile S^T = K Q^T, whose columns are queries.

    It is written only where it differs from the default for the element
    type: `rows` for rank 1, `acc` for f32 and i32, `a` for 16- and 8-bit
    types. So an f16 accumulator is `!attn.frag<128x64xf16, acc>`.
    MmaFragments.h owns the coordinates of each layout.

    ```mlir
    !attn.frag<128x64xf32>        // S or an accumulator
    !attn.frag<128x128xf16>       // Q held in registers
    !attn.frag<128x64xf16, acc>   // an f16 accumulator
    !attn.frag<128xf32>           // per-row softmax state
    !attn.frag<64xf32, cols>      // per-column values (LSE beside S^T)
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        "::flashtile::attn::FragLayout":$layout);
  let builders = [
    TypeBuilder<(ins "::llvm::ArrayRef<int64_t>":$shape,
                     "::mlir::Type":$elementType), [{
      return $_get($_ctxt, shape, elementType,
                   ::flashtile::attn::getDefaultFragLayout(shape.size(),
                                                           elementType));
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
    int64_t getDimSize(unsigned i) const { return getShape()[i]; }
    /// True for the C/D layout of an mma.
    bool isAccumulator() const {
      return getLayout() == ::flashtile::attn::FragLayout::Acc;
    }
  }];
}

#endif // FLASHTILE_ATTN_ATTRS
