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
    staging tile; Q's copy, and Q moved to registers when `q_in_regs`; the
    KV loops, split into masked and unmasked ones by `attn.kv_bounds`; and
    the epilogue. It is written with the public tile builder, as a user
    would: each KV tile is copied where it is used.

    The copy schedule comes from `attn-pipeline-copies` (FlashAttention-2's,
    generalised to `stages` slots) and every wait and barrier from
    `attn-insert-barriers`.
  }];
}

def AttnBuildBackward : Pass<"attn-build-backward", "::mlir::ModuleOp"> {
  let summary = "Replace a kernel-level attention by its backward family";
  let description = [{
    The module's one kernel-level `attn.kernel` is replaced by the three
    tile programs of its backward and the `attn.family` that launches them
    (BuildBackward.h): a preprocess kernel (D = rowsum(dO O)), the main
    kernel over key tiles (dK, dV in registers, dQ by f32 atomics) and the
    dQ convert. They are built with the public tile builder; copies,
    barriers and bytes come from the passes that follow, as for any tile
    program. `flashtile-compile --direction=bwd` runs the same builder.
    With `deterministic`, the last kernel is the query-parallel dQ kernel
    instead of the atomics and the convert. `tensor-grads` names extra
    tensors the score_mod reads whose gradients the main kernel adds into
    `<name>_grad` arguments (role accumulate). `kv-warps` keeps only the
    candidate shapes with that many KV warps (0: any), as
    `flashtile-compile --kv-warps` does.
  }];
  let options = [
    Option<"deterministic", "deterministic", "bool", /*default=*/"false",
           "dQ by a kernel of its own, without atomics">,
    Option<"kvWarps", "kv-warps", "int64_t", /*default=*/"0",
           "only the candidate shapes with this many KV warps (0: any)">,
    ListOption<"tensorGrads", "tensor-grads", "std::string",
               "extra tensors (by name) whose gradients the family adds "
               "into <name>_grad arguments">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect"];
}

def AttnPipelineCopies : Pass<"attn-pipeline-copies", "::flashtile::attn::KernelOp"> {
  let summary = "Software-pipeline the KV tiles' copies of a tile program";
  let description = [{
    A tile program copies each KV tile where it uses it (`copy K[j]` in
    step j). For a buffer of S slots copied at the loop index in every KV
    loop of a chain (loops whose bounds meet), the copy is issued ahead:
    S steps ahead, after the buffer's last read and before the next
    shared-memory read, when such a read follows (K); else S - 1 steps
    ahead, at the top of the step (V). The first loop's first tiles are
    copied before the chain, in the order the first steps read them. With
    S = 1 or 2 this is FlashAttention-2's schedule. Copies in another form
    stay where the program put them. The syncs come after, from
    attn-insert-barriers.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Emit a remark for each pipelined copy">
  ];
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
  let summary = "Insert every wait and barrier of a tile program, and prove each needed";
  let description = [{
    Tile programs, the built-in expansion's and the users', carry no
    `attn.async_wait` or `attn.barrier`: this pass places them all, from the
    race checker of `Analysis/Synchronization.h` (a bounded model check of
    the program's copies, reads and writes over the allocator's bytes).
    For each access in program order:
      - a read of a slot whose copy has not landed, or is not yet visible to
        every warp, gets a wait (with the largest `pending` every trace
        allows) and a barrier;
      - a write to bytes another warp may still read, or an earlier copy may
        still fill, gets a barrier (and a wait), hoisted before the KV loop
        when the conflict always comes from before it;
      - the epilogue gets a wait for the copies still in flight.
    A read of a slot that holds another tile cannot be fixed by a sync and is
    an error at the read. At the end every wait and barrier is proven needed:
    removing it makes some trace race. One that no trace needs is removed.

    ```mlir
    attn.copy_async %q[%b, %m, %h] -> %qs ...
    attn.copy_async %k[%b, %t, %hkv] -> %ks ...
    attn.async_wait {pending = 1 : i64}   // inserted: Q has landed
    attn.barrier                          // inserted: and every warp sees it
    %qf = attn.load_frag %qs ...
    ```
    With `remarks`, each wait and barrier gets a remark naming the race it
    prevents.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Report, for each wait and barrier, the race it prevents">,
  ];
}

#endif // FLASHTILE_ATTN_PASSES
