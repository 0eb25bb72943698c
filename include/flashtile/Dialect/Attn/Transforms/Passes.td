//===- Passes.td - attn passes ---------------------------------*- tablegen -*-===//

#ifndef FLASHTILE_ATTN_PASSES
#define FLASHTILE_ATTN_PASSES

include "mlir/Pass/PassBase.td"

def AttnSelectConfig : Pass<"attn-select-config", "::flashtile::attn::KernelOp"> {
  let summary = "Choose tile_m, tile_n, stages, warps and q_in_regs";
  let description = [{
    Every kernel without a `config` gets one. The pass enumerates candidate
    configurations, keeps those whose tile program the shared-memory
    allocator accepts on the kernel's chip and whose register estimate does
    not spill, and ranks the rest with the cost model documented in
    `ConfigSelection.h` (smem-limited occupancy, KV-loop step cost, register
    pressure). Options pin any parameter; the others are searched.

    Before:
    ```mlir
    attn.kernel @fa arch(#attn.arch<sm_120>) { ... }
    ```
    After:
    ```mlir
    attn.kernel @fa arch(#attn.arch<sm_120>)
        config(#attn.config<tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = true>) { ... }
    ```
    With `explain`, every candidate is reported as a remark, best first,
    with its score or the reason it was rejected.
  }];
  let options = [
    Option<"tileM", "tile-m", "int64_t", "0", "Pin tile_m (0: search)">,
    Option<"tileN", "tile-n", "int64_t", "0", "Pin tile_n (0: search)">,
    Option<"stages", "stages", "int64_t", "0", "Pin stages (0: search)">,
    Option<"warps", "warps", "int64_t", "0", "Pin warps (0: search)">,
    Option<"kvWarps", "kv-warps", "int64_t", "0",
           "Pin kv_warps (0: search)">,
    Option<"family", "family", "std::string", "\"prefill\"",
           "The kernel family to search: prefill or decode">,
    Option<"qInRegs", "q-in-regs", "int", "-1",
           "Pin q_in_regs: 0 or 1 (-1: search)">,
    Option<"explain", "explain", "bool", "false",
           "Emit a remark for every candidate, best first">,
  ];
}

def AttnExpandToTiles : Pass<"attn-expand-to-tiles", "::flashtile::attn::KernelOp"> {
  let summary = "Rewrite attn.attention into a block-level tile program";
  let description = [{
    Replaces the kernel's `attn.attention` by the tile program of its
    `config`: shared buffers for Q, K and V (`stages` slots each) and the O
    staging tile; the prologue copies of Q and of the first K/V tiles; Q
    moved to registers when `q_in_regs`; the KV loops, split into masked and
    unmasked ones by `attn.kv_bounds`; and the epilogue.

    The copy schedule is FlashAttention-2's, generalised to `stages` slots:
    in step j the copy of V[j - stages + 1] overlaps S = Q K[j]^T and the
    softmax, and the copy of K[j - stages] overlaps P V[j]. Each wait +
    barrier pair in the loop is the one that schedule needs (the data landed
    and every warp is done with the slot being refilled).

    The barriers that buffer *reuse* needs are not emitted here; they follow
    from the allocation and are inserted by `attn-insert-barriers`.
  }];
}

def AttnAllocateSharedMemory
    : Pass<"attn-allocate-shared-memory", "::flashtile::attn::KernelOp"> {
  let summary = "Give every shared buffer an offset from liveness; enforce the chip's limit";
  let description = [{
    Plans the kernel's `attn.smem_alloc` buffers with the allocator of
    `SharedMemoryAllocation.h` and writes each `offset`, plus the block's
    total as the kernel's `smem_bytes`. Buffers whose lifetimes do not
    overlap share bytes: with `q_in_regs`, V takes Q's bytes, and the O
    staging tile takes bytes freed by the KV loop.

    A plan over the chip's per-block limit is a compile-time error that names
    every buffer with its bytes, the total, the limit and the chip, with a
    hint. With `remarks`, each buffer's offset, size and live range and the
    block's total and smem-limited blocks per SM are reported as remarks.

    ```mlir
    %q = attn.smem_alloc {name = "Q"} : memref<1x128x128xf16, 3>
    // becomes
    %q = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x128x128xf16, 3>
    ```
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Report the plan as remarks">,
  ];
}

def AttnInsertBarriers : Pass<"attn-insert-barriers", "::flashtile::attn::KernelOp"> {
  let summary = "Insert the barriers that shared-memory reuse needs (WAR)";
  let description = [{
    When two buffers share bytes, the later one must not be written before
    every warp has finished reading the earlier one. For each such pair this
    pass makes sure an `attn.barrier` separates the earlier buffer's last
    access from the later buffer's first one on every path, and inserts one
    (at the top level of the kernel, never inside the KV loop) when none
    does. A barrier the pipeline already has is reused, not doubled.

    ```mlir
    %qf = attn.load_frag %qs ...        // Q's last read
    attn.barrier                        // inserted
    attn.copy_async %v[...] -> %vs ...  // V's first write, same bytes as Q
    ```
  }];
}

#endif // FLASHTILE_ATTN_PASSES
