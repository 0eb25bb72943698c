//===- AttnOps.td - attn operations ---------------------------*- tablegen -*-===//

#ifndef FLASHTILE_ATTN_OPS
#define FLASHTILE_ATTN_OPS

include "flashtile/Dialect/Attn/IR/AttnBase.td"
include "flashtile/Dialect/Attn/IR/AttnAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Attn_GlobalTensor : MemRefRankOf<[F16, BF16], [4]>;
def Attn_LseTensor : MemRefRankOf<[F32], [3]>;
def Attn_PageTable : MemRefRankOf<[I32], [2]>;
// f16/bf16 tiles, and the 8-bit operand types of attn.mma; f32 only for
// the epilogue's merge buffer.
def Attn_SharedBuffer : MemRefRankOf<[F16, BF16, F32, I8, F8E4M3FN, F8E5M2],
                                     [3]>;
def Attn_Frag : Type<CPred<"::llvm::isa<::flashtile::attn::FragType>($_self)">,
                     "register fragment", "::flashtile::attn::FragType">;

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

def Attn_KernelOp : Attn_Op<"kernel", [
    Symbol, IsolatedFromAbove, SingleBlock, NoTerminator]> {
  let summary = "An attention kernel: its tensors, its chip and its config";
  let description = [{
    One GPU kernel. The entry block's first arguments are the kernel's
    sequence tensors, which `tensors` declares (`#attn.tensor`: name, role
    and the sizes of their rows and heads); the forward's five are the
    default when `tensors` is absent, in this order:

    | arg | shape | element type |
    |---|---|---|
    | Q | (batch, seqlen_q, heads_q, head_dim) | f16 or bf16 |
    | K | (batch, seqlen_k, heads_kv, head_dim) | same |
    | V | (batch, seqlen_k, heads_kv, head_dim_v) | same |
    | O | (batch, seqlen_q, heads_q, head_dim_v) | same |
    | LSE | (batch, heads_q, seqlen_q) | f32 |

    The head dims are static; batch, lengths and heads are run-time values,
    and every stride but the last is a run-time value too (a PyTorch
    (B, H, S, D) tensor is a transposed view of this layout).

    A kernel that declares `tensors` lists its own (a backward kernel's dO,
    dQ, dK, dV ...): each rank-4 `(batch, rows, heads, dim)` in f16, bf16 or
    f32, or rank-3 f32 `(batch, heads, rows)`, with run-time sizes and
    strides as above. The ops that compute attention ask for Q, K, V, O
    and LSE by their names (`q`, `k`, `v`, `o`, `lse`).

    Extra arguments may follow the tensors, for the variant hooks to read: tensors
    (memrefs of any rank, f16/bf16/f32/i32/i64, any strides) and scalars
    (i32, i64, f32). `arg_names` names them, in order; the names are C
    identifiers and become the launch plan's argument names, so they may not
    repeat or take a name the plan already uses (a tensor's, softmax_scale
    and the size names batch, seqlen_q, seqlen_k, heads_q, heads_kv).

    The symbol is the kernel's name in PTX: a C identifier of at most 256
    characters that does not start with the reserved prefix `__flashtile`.

    `arch` names the chip. `config` is the tile configuration, set by
    `attn-select-config` when absent. `smem_bytes` is written by
    `attn-allocate-shared-memory`.

    `grid` says what the grid's blocks own. `"queries"` (the default):
    block (m, h, b) owns query tile m (tile_m rows of seqlen_q) of query
    head h of batch b, as the forward does. `"keys"`: block (n, h_kv, b)
    owns key tile n (tile_n rows of seqlen_k) of KV head h_kv, and every
    query head of its group, as a backward's dK / dV kernel does;
    attn.block_context then gives n as its tile, h_kv as its KV head and
    the group's first query head as its head. Not with attn.attention,
    packed rows or split KV, whose tiles are query tiles.

    ```mlir
    attn.kernel @fa_fwd arch(#attn.arch<sm_120>) {
    ^bb0(%q: memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>,
         %k: memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>,
         %v: memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>,
         %o: memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>,
         %lse: memref<?x?x?xf32>):
      attn.attention %q, %k, %v -> %o, %lse {causal}
        : memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>, ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Attn_ArchAttr:$arch,
                       OptionalAttr<Attn_ConfigAttr>:$config,
                       OptionalAttr<I64Attr>:$smem_bytes,
                       OptionalAttr<StrArrayAttr>:$arg_names,
                       OptionalAttr<StrArrayAttr>:$arg_roles,
                       OptionalAttr<Attn_ProblemAttr>:$problem,
                       OptionalAttr<TypedArrayAttrBase<Attn_TensorAttr,
                           "sequence tensor declarations">>:$tensors,
                       OptionalAttr<StrAttr>:$grid);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `arch` `(` qualified($arch) `)`
    (`config` `(` qualified($config)^ `)`)? attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// Whether the grid's blocks own key tiles (`grid = "keys"`) rather
    /// than query tiles.
    bool hasKeyGrid() { return getGrid() && *getGrid() == "keys"; }
    /// The sequence tensors' declarations, in argument order: `tensors`,
    /// or the forward's five (q, k, v, o, lse) when it is absent.
    ::llvm::SmallVector<TensorAttr> getTensorDecls();
    /// The forward's five, the default of `tensors`.
    static ::llvm::SmallVector<TensorAttr>
    getDefaultTensorDecls(::mlir::MLIRContext *ctx);
    unsigned getNumTensors();
    /// The sequence tensor named `name`, or null.
    ::mlir::Value getTensor(::llvm::StringRef name);
    /// The tensors that attention reads and writes, by name (null when the
    /// kernel declares no tensor of that name).
    ::mlir::Value getQ() { return getTensor("q"); }
    ::mlir::Value getK() { return getTensor("k"); }
    ::mlir::Value getV() { return getTensor("v"); }
    ::mlir::Value getO() { return getTensor("o"); }
    ::mlir::Value getLse() { return getTensor("lse"); }
    /// The arguments after the sequence tensors.
    ::mlir::Block::BlockArgListType getExtraArgs() {
      return getBodyBlock().getArguments().drop_front(getNumTensors());
    }
    /// The index among the extra arguments of `value`, or -1 when it is not
    /// one of them.
    int64_t getExtraArgIndex(::mlir::Value value);
    /// The name of extra argument `i` (0 is the first after the tensors).
    ::llvm::StringRef getExtraArgName(unsigned i);
    /// The declared role of extra argument `i`: "in" (read; the default),
    /// "out" (written by attn.store_tile) or "accumulate" (added to by
    /// attn.store_tile {accumulate}, f32 / i32 atomics).
    ::llvm::StringRef getExtraArgRole(unsigned i);
    /// The name and role of `value`, a sequence tensor (its declaration)
    /// or an extra argument; empty names when it is neither.
    std::pair<::llvm::StringRef, ::llvm::StringRef>
    getArgNameAndRole(::mlir::Value value);
    /// The declaration of `value` when it is one of the sequence tensors,
    /// else null.
    TensorAttr getTensorDecl(::mlir::Value value);
    /// What the kernel computes: the attn.attention's mask and scale at the
    /// kernel level, the recorded `problem` at the tile level, and in a
    /// tile program without one, what its ops state
    /// (getTileProgramProblem).
    ProblemAttr getProblemInfo();
    ProblemAttr getTileProgramProblem();
    /// The extra argument (0 is the first after the tensors) that pages K and V
    /// (getProblemInfo's page_table), or -1: contiguous, or no problem.
    int64_t getPageTableArg();
  }];
}

def Attn_FamilyOp : Attn_Op<"family", [Symbol]> {
  let summary = "Kernels launched together, in order, as one launch plan";
  let description = [{
    Names kernels of the module that make one operation, launched in the
    listed order by one launch plan (a backward's preprocess, main and
    convert kernels). Every kernel of a family is a tile program with a
    stated config and declares the same tensors and extra arguments, which
    are the family's arguments; the workspaces they declare
    (`#attn.tensor` role `workspace`) are the plan's, allocated and
    zero-filled once per launch and shared by name, so that one kernel
    fills what a later one reads. The symbol is the plan's name.

    ```mlir
    attn.family @bwd kernels [@bwd_dq, @bwd_convert]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       ConfinedAttr<FlatSymbolRefArrayAttr, [ArrayMinCount<1>]>:$kernels);
  let assemblyFormat = "$sym_name `kernels` $kernels attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The listed kernels, in launch order (null where a symbol names no
    /// attn.kernel; the verifier refuses that).
    ::llvm::SmallVector<KernelOp, 4> getKernelOps();
  }];
}

def Attn_AttentionOp : Attn_Op<"attention", [
    HasParent<"KernelOp">]> {
  let summary = "What the kernel computes: O, LSE = attention(Q, K, V)";
  let description = [{
    Softmax attention forward over the kernel's tensors:
    `O = softmax(score_mod(scale * Q K^T) masked) V`, plus the log-sum-exp of
    every row in the natural-log domain.

    * `causal`: query i sees keys j <= i + seqlen_k - seqlen_q (aligned
      bottom-right when the lengths differ).
    * `window_left` / `window_right`: a local window, key j is seen by query
      i when i + seqlen_k - seqlen_q - left <= j <= i + seqlen_k - seqlen_q
      + right; -1 means unbounded on that side. `causal` is
      `window_right = 0`.
    * `softmax_scale`: defaults to 1/sqrt(head_dim).
    * `score_mod`: a region `(score: f32, batch, head, q_idx, kv_idx: index)`
      that yields the new f32 score. `mask_mod`: a region
      `(batch, head, q_idx, kv_idx: index)` that yields an i1, true when the
      key is kept. Both are optional.
    * `sink`: an optional region `(batch, head: index)` that yields an f32
      logit joining every row's softmax denominator (attention sinks, as
      gpt-oss uses): `O = sum_j e^{s_j} v_j / (e^{sink} + sum_j e^{s_j})`,
      `LSE = logaddexp(LSE, sink)`, with `s_j` the modified scaled scores.

    A row that sees no key gives O = 0 and LSE = -inf (LSE = sink with a
    sink).

    `pages(%block_table)`: paged KV, as vLLM and FlashAttention-2's
    `block_table` have it. K and V are page pools (num_pages, page_size,
    heads_kv, head_dim); `block_table`, an i32 (batch, max_pages) extra
    argument of the kernel, lists each sequence's pages, so that key j of
    batch b is row `j mod page_size` of page `block_table[b][j / page_size]`
    and seqlen_k is `max_pages * page_size`. Any page size works. Entries
    outside [0, num_pages) are clamped into it, so a stale entry past a
    sequence's keys never faults; keys a mask_mod bounds away (a
    per-sequence length) are never read.

    ```mlir
    attn.attention %q, %k, %v -> %o, %lse {causal, softmax_scale = 0.125 : f32}
      : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>,
        memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>> -> memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>,
        memref<?x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_GlobalTensor:$q, Attn_GlobalTensor:$k,
                       Attn_GlobalTensor:$v, Attn_GlobalTensor:$o,
                       Attn_LseTensor:$lse,
                       Optional<Attn_PageTable>:$block_table,
                       UnitAttr:$causal,
                       DefaultValuedAttr<I64Attr, "-1">:$window_left,
                       DefaultValuedAttr<I64Attr, "-1">:$window_right,
                       OptionalAttr<F32Attr>:$softmax_scale);
  let regions = (region AnyRegion:$score_mod, AnyRegion:$mask_mod,
                 AnyRegion:$sink);
  let assemblyFormat = [{
    $q `,` $k `,` $v `->` $o `,` $lse
    (`pages` `(` $block_table^ `:` qualified(type($block_table)) `)`)?
    attr-dict `:` qualified(type($q)) `,` qualified(type($k)) `,`
    qualified(type($v)) `->` qualified(type($o)) `,` qualified(type($lse))
    (`score_mod` $score_mod^)? (`mask_mod` $mask_mod^)? (`sink` $sink^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The window after folding `causal` in: {left, right}, -1 = unbounded.
    std::pair<int64_t, int64_t> getEffectiveWindow();
    /// The scale applied to QK^T, defaulted to 1/sqrt(head_dim).
    float getScale();
  }];
}

def Attn_YieldOp : Attn_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["AttentionOp", "KVLoopOp", "ModifyScoresOp", "KeyRangeOp",
                 "QueryRangeOp", "BlockRangesOp", "EpilogueOp", "MapOp",
                 "ForEachOp"]>]> {
  let summary = "Ends a score_mod / mask_mod region or a KV-loop body";
  let description = [{
    ```mlir
    attn.yield %score : f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "attr-dict ($values^ `:` qualified(type($values)))?";
}

//===----------------------------------------------------------------------===//
// Hooks: what score_mod / mask_mod regions may read besides their arguments
//===----------------------------------------------------------------------===//

def Attn_SizeOp : Attn_Op<"size", [Pure]> {
  let summary = "A run-time size of the problem, for hooks";
  let description = [{
    One of `batch`, `seqlen_q`, `seqlen_k`, `heads_q`, `heads_kv`: the
    value of this launch. Hooks use it, e.g. to index a bias table from the
    end of the key sequence.

    ```mlir
    %sk = attn.size "seqlen_k" : index
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Index:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_KernelArgOp : Attn_Op<"kernel_arg", [Pure]> {
  let summary = "Extra argument `index` of the enclosing kernel";
  let description = [{
    The tile-level form of a hook's reference to a kernel argument after
    its tensors: hook regions at the tile level are isolated from above, so the
    expansion replaces each use of an extra argument with this op.

    ```mlir
    %slopes = attn.kernel_arg 0 : memref<?xf32, strided<[?]>>
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$index);
  let results = (outs AnyType:$result);
  let builders = [OpBuilder<(ins "KernelOp":$kernel,
                                 "::mlir::BlockArgument":$kernelArg), [{
    build($_builder, $_state, kernelArg.getType(),
          kernel.getExtraArgIndex(kernelArg));
  }]>];
  let assemblyFormat = "$index attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile level: block context and bounds
//===----------------------------------------------------------------------===//

def Attn_BlockContextOp : Attn_Op<"block_context", [Pure]> {
  let summary = "The (tile, head, batch) this block computes";
  let description = [{
    Gives the block's tile index, its query head, the KV head that head
    reads (GQA: head / (heads_q / heads_kv)), its batch index, and the two
    sequence lengths, read from Q and K. The tile is a query tile, or in a
    kernel with `grid = "keys"` a key tile, whose block owns the KV head
    and the group's query heads from `head` on.

    ```mlir
    %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : memref<...>, memref<...>
    ```
  }];
  let arguments = (ins Attn_GlobalTensor:$q, Attn_GlobalTensor:$k);
  let results = (outs Index:$m_block, Index:$head, Index:$kv_head,
                      Index:$batch, Index:$seqlen_q, Index:$seqlen_k);
  let assemblyFormat = "$q `,` $k attr-dict `:` qualified(type($q)) `,` qualified(type($k))";
}

def Attn_KVBoundsOp : Attn_Op<"kv_bounds", [Pure]> {
  let summary = "The KV tiles a query tile visits, split by whether they need masks";
  let description = [{
    For query tile `m_block`, the KV tiles that hold at least one visible key
    are `[begin, end)`. Of these, `[unmasked_begin, unmasked_end)` need no
    mask at all: every key of the tile is visible to every row of the query
    tile and lies before seqlen_k. The others need `attn.mask`. The split lets
    the expansion emit masked and unmasked KV loops separately, so that the
    common case carries no predicates.

    ```mlir
    %b, %ub, %ue, %e = attn.kv_bounds %m, %sq, %sk
        {tile_m = 128, tile_n = 64, window_left = -1, window_right = 0}
    ```
  }];
  let arguments = (ins Index:$m_block, Index:$seqlen_q, Index:$seqlen_k,
                       I64Attr:$tile_m, I64Attr:$tile_n,
                       I64Attr:$window_left, I64Attr:$window_right);
  let results = (outs Index:$begin, Index:$unmasked_begin,
                      Index:$unmasked_end, Index:$end);
  let assemblyFormat = "$m_block `,` $seqlen_q `,` $seqlen_k attr-dict";
}

def Attn_KeyRangeOp : Attn_Op<"key_range", [Pure, IsolatedFromAbove]> {
  let summary = "The KV tiles a mask_mod allows one query tile";
  let description = [{
    Block sparsity from a mask known at compile time. The region computes,
    for query row `q_idx` of batch `batch` and query head `head`, an interval
    `[lo, hi]` of keys, monotone in q_idx, that holds every key the
    attention's mask_mod keeps for that row; with `exact`, the mask_mod keeps
    exactly those keys. Sides may be +-2^30 (unbounded). The expansion
    derives the region from the mask_mod (MaskAnalysis.cpp). With
    `scan_rows` the interval need not be monotone (it reads tensors at
    q_idx, as a varlen mask reads each token's sequence): it is evaluated
    at every row of the tile instead of the first and last.

    The results refine the tile range of `attn.kv_bounds` (the `within`
    operands) by the mask: tiles outside `[begin, end)` hold no key any row
    keeps and are never loaded; tiles in `[unmasked_begin, unmasked_end)` are
    seen whole by every row and kept whole by the mask, so they run without
    any mask (that range is empty unless `exact`).
    `key_end` is one past the last key any row may keep (at most
    seqlen_k): copies zero-fill the rows from there on, so keys past a
    per-sequence length are never read (stale cache rows, an unused page).

    ```mlir
    %b, %ub, %ue, %e, %ke = attn.key_range %m, %batch, %head, %sq, %sk
        within %b0, %ub0, %ue0, %e0 {tile_m = 128, tile_n = 64, exact} {
    ^bb0(%bi: index, %hi: index, %qi: index):
      ...
      attn.yield %lo, %hi : index, index
    }
    ```
  }];
  let arguments = (ins Index:$m_block, Index:$batch, Index:$head,
                       Index:$seqlen_q, Index:$seqlen_k,
                       Index:$within_begin, Index:$within_unmasked_begin,
                       Index:$within_unmasked_end, Index:$within_end,
                       I64Attr:$tile_m, I64Attr:$tile_n, UnitAttr:$exact,
                       UnitAttr:$scan_rows);
  let results = (outs Index:$begin, Index:$unmasked_begin,
                      Index:$unmasked_end, Index:$end, Index:$key_end);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $m_block `,` $batch `,` $head `,` $seqlen_q `,` $seqlen_k `within`
    $within_begin `,` $within_unmasked_begin `,` $within_unmasked_end `,` $within_end
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Attn_QueryRangeOp : Attn_Op<"query_range", [Pure, IsolatedFromAbove]> {
  let summary = "The query tiles a mask_mod allows one KV tile (key grids)";
  let description = [{
    The transpose of `attn.key_range`, for kernels whose blocks own a KV
    tile and step over query tiles (the backward's main kernel). The
    results refine the `within` tiles (`[begin, end)`, of which
    `[unmasked_begin, unmasked_end)` need no mask, as attn.kv_bounds's
    transpose gives them):
      - `[begin, end)`: the query tiles that hold a row below seqlen_q, of
        one of the `group` query heads from `head` on, whose keys meet KV
        tile `n_block` below seqlen_k. That is a superset of the tiles with
        a kept key, so the kernel still masks every element of them; tiles
        outside hold no kept key and are never visited.
      - `[unmasked_begin, unmasked_end)`: with `exact` (the interval holds
        exactly the keys the mask_mod keeps), the tiles of the within
        unmasked ones whose every row, of every head of the group, keeps
        every key of the tile: they need no mask_mod. Without `exact`, none
        (both at `begin`).

    Two forms:
      - With a region (a key_range body: for query row `q_idx` of batch
        `batch` and query head `head`, an interval `[lo, hi]` of keys,
        monotone in q_idx, that holds every key the mask_mod keeps): the
        rows are found by bisection, as whether a row's interval starts
        before the tile's last key, and whether it ends after its first,
        each change at most once along the rows; the rows that keep the
        whole tile the same way, with the tile's keys swapped (an interval
        that starts before its first key and ends after its last).
      - With `tables` (f32 tensors shaped like the LSE, batch x query heads
        x seqlen_q, that a query-grid kernel filled with the first and one
        past the last KV tile of each query tile m, at row m * tile_m, from
        the forward's key_range; with `exact`, two more of its unmasked
        first and end): the entries of the `within` tiles are scanned. For
        intervals not known to be monotone (a varlen mask reads each row's
        sequence), where a per-row scan would cost a pass over every row
        per KV tile. The whole tiles count only where they are contiguous
        (one run); otherwise there are none. The region is empty.

    ```mlir
    %b, %ub, %ue, %e = attn.query_range %n, %batch, %head, %group, %sq, %sk
        within %lo, %ulo, %uhi, %hi {exact, tile_m = 64, tile_n = 64} {
    ^bb0(%bi: index, %hi: index, %qi: index):
      ...
      attn.yield %lo, %hi : index, index
    }
    ```
  }];
  let arguments = (ins Index:$n_block, Index:$batch, Index:$head,
                       Index:$group, Index:$seqlen_q, Index:$seqlen_k,
                       Index:$within_begin, Index:$within_unmasked_begin,
                       Index:$within_unmasked_end, Index:$within_end,
                       Variadic<AnyMemRef>:$tables,
                       I64Attr:$tile_m, I64Attr:$tile_n, UnitAttr:$exact);
  let results = (outs Index:$begin, Index:$unmasked_begin,
                      Index:$unmasked_end, Index:$end);
  let regions = (region MaxSizedRegion<1>:$body);
  let assemblyFormat = [{
    $n_block `,` $batch `,` $head `,` $group `,` $seqlen_q `,` $seqlen_k
    `within` $within_begin `,` $within_unmasked_begin `,` $within_unmasked_end `,` $within_end
    (`tables` $tables^ `:` type($tables))? attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Attn_BlockRangesOp : Attn_Op<"block_ranges", [IsolatedFromAbove]> {
  let summary = "The tiles a data-dependent mask_mod allows, from a run-time block mask";
  let description = [{
    Block sparsity for masks the compiler cannot bound (document ids): the
    kernel's launch plan runs two kernels first. The tiles kernel evaluates
    the region (the attention's mask_mod) over every tile of `tile_m` rows
    by `tile_n` keys the window allows and writes one byte per (query tile,
    KV tile) pair; the ranges kernel turns them into four i32 per block
    (KernelABI.h): the first and one past the last tile with a kept key,
    and the longest run of tiles kept whole by every valid row. This op
    reads its block's four back and refines the `within` range: tiles
    outside are never loaded, tiles in the run need no mask at all.
    FlexAttention's BlockMask, in the range form this kernel's loops take.

    Two grids:
      - Query grid (the default): `m_block` is the block's query tile,
        `head` its query head (read where `per_head`), and the range is of
        KV tiles: `<name>_kv_tiles` and `<name>_kv_ranges`, one entry per
        (batch, query head or 0, query tile).
      - `key_grid` (the backward's main kernel, whose blocks own a KV tile
        and step over query tiles of each query head of the KV head's
        group): `m_block` is the block's KV tile, `head` its KV head, and
        the range is of query tiles, for the whole group: a tile is kept
        if any head of the group keeps a key of it, whole if every head
        keeps it whole. `<name>_q_tiles` and `<name>_q_ranges`, one entry
        per (batch, KV head or 0, KV tile). Workspaces of their own, so
        that a family's query-grid kernel (the deterministic dQ kernel) may
        have a block mask too.

    ```mlir
    %b, %ub, %ue, %e = attn.block_ranges %m, %batch, %head, %sq
        within %b0, %ub0, %ue0, %e0 {tile_m = 128, tile_n = 64} {
    ^bb0(%bi: index, %hi: index, %qi: index, %ki: index):
      ...
      attn.yield %keep : i1
    }
    ```
  }];
  let arguments = (ins Index:$m_block, Index:$batch, Index:$head,
                       Index:$seqlen_q,
                       Index:$within_begin, Index:$within_unmasked_begin,
                       Index:$within_unmasked_end, Index:$within_end,
                       I64Attr:$tile_m, I64Attr:$tile_n, UnitAttr:$per_head,
                       UnitAttr:$key_grid);
  let results = (outs Index:$begin, Index:$unmasked_begin,
                      Index:$unmasked_end, Index:$end);
  let regions = (region SizedRegion<1>:$mask_mod);
  let assemblyFormat = [{
    $m_block `,` $batch `,` $head `,` $seqlen_q `within`
    $within_begin `,` $within_unmasked_begin `,` $within_unmasked_end `,` $within_end
    attr-dict-with-keyword $mask_mod
  }];
  let hasVerifier = 1;
}

def Attn_KVSplitOp : Attn_Op<"kv_split", [Pure]> {
  let summary = "The part of a query tile's KV tiles that the block's split visits";
  let description = [{
    Split-KV in a kernel with packed rows (the decode family). With S =
    the `kv_splits` kernel parameter, the grid's x axis is split-major
    (`x = split * query_tiles + m_block`), and the tiles `[begin, end)` are
    cut into S runs of `ceil((end - begin) / S)` consecutive tiles; the
    block visits run `split` (empty past the end) and the unmasked tiles
    within it. With S > 1, `attn.epilogue` writes each split's normalised
    fp32 O and its LSE to the `o_partial` / `lse_partial` workspaces, which
    the plan's combine kernel merges (KernelABI.h).

    ```mlir
    %b1, %ub1, %ue1, %e1 = attn.kv_split %b, %ub, %ue, %e
    ```
  }];
  let arguments = (ins Index:$begin, Index:$unmasked_begin,
                       Index:$unmasked_end, Index:$end);
  let results = (outs Index:$split_begin, Index:$split_unmasked_begin,
                      Index:$split_unmasked_end, Index:$split_end);
  let assemblyFormat = [{
    $begin `,` $unmasked_begin `,` $unmasked_end `,` $end attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_SoftmaxScaleOp : Attn_Op<"softmax_scale", [Pure]> {
  let summary = "The run-time softmax scale (a kernel parameter)";
  let description = [{
    The scale applied to Q K^T, read from the kernel's `softmax_scale`
    parameter so that one compiled kernel serves any scale. `default_value` is the
    value the attention op asked for (1/sqrt(head_dim) unless given); the
    runtimes pass it when the caller gives none.

    ```mlir
    %scale = attn.softmax_scale {default_value = 0.0883883461 : f32} : f32
    ```
  }];
  let arguments = (ins F32Attr:$default_value);
  let results = (outs F32:$scale);
  let assemblyFormat = "attr-dict `:` type($scale)";
}

//===----------------------------------------------------------------------===//
// Tile level: shared memory and copies
//===----------------------------------------------------------------------===//

def Attn_SmemAllocOp : Attn_Op<"smem_alloc"> {
  let summary = "A shared-memory buffer of the tile program";
  let description = [{
    Declares a buffer of `slots x rows x cols` elements in shared memory
    (address space 3). Slot `t mod slots` holds tile `t`, so a K or V buffer
    with `stages` slots is a ring. `name` appears in plans and errors.
    `attn-allocate-shared-memory` sets `offset` (bytes from the start of the
    block's dynamic shared memory); before it runs the buffer has no address.

    ```mlir
    %ks = attn.smem_alloc {name = "K"} : memref<2x64x128xf16, 3>
    %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x128x128xf16, 3>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<I64Attr>:$offset);
  let results = (outs Attn_SharedBuffer:$buffer);
  let assemblyFormat = "attr-dict `:` qualified(type($buffer))";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MemRefType getType() { return getBuffer().getType(); }
    /// Bytes of the whole buffer (all slots).
    int64_t getSizeInBytes();
  }];
}

def Attn_CopyAsyncOp : Attn_Op<"copy_async", [AttrSizedOperandSegments]> {
  let summary = "Asynchronous copy of one tile from global to shared memory";
  let description = [{
    Copies tile `tile` (rows `tile * R` to `tile * R + R - 1`, R the buffer's
    rows) of head `head` of batch `batch` from `src` into slot
    `tile mod slots` of `dst`. Rows at or past the sequence end are filled
    with zeros. A negative tile reads nothing and zero-fills slot
    `tile mod slots` (floor modulo); the tile program only copies into slots
    it no longer reads, so this is harmless and keeps the KV loop free of
    branches. Each copy is one async group (cp.async.commit_group), so that
    the counts of `attn.async_wait` stay exact.

    `packed` (only in a kernel whose config has `pack_gqa`): the rows are
    packed (position, head) pairs, packed row `p` being position `p / G` of
    head `head + p % G`, G = heads_q / heads_kv; `head` is the first query
    head of the block's KV head.

    `pages %block_table`: `src` is a page pool and row r of batch b is row
    `r mod page_size` of page `block_table[b][r / page_size]` (the
    attention's `pages`). `limit %n`: rows at or past n are zero-filled too
    (a key range's `key_end`).

    `slot %s`: the copy fills slot `s mod slots` instead, and `s` is the
    tile's name in the race proof and the pipeline (reads name it). A loop
    whose steps are not one tile sequence (the backward's walk over the
    query tiles of every head of a GQA group) names its steps by the loop
    index this way while `tile` and `head` are computed from it.

    ```mlir
    attn.copy_async %k[%b, %j, %hkv] -> %ks : memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>> -> memref<1x64x128xf16, 3>
    attn.copy_async %q[%b, %mb, %h] -> %qs {packed} : memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>> -> memref<1x16x128xf16, 3>
    ```
  }];
  let arguments = (ins Attn_GlobalTensor:$src, Index:$batch, Index:$tile,
                       Index:$head, Arg<Attn_SharedBuffer, "", [MemWrite]>:$dst,
                       Optional<Attn_PageTable>:$pages, Optional<Index>:$limit,
                       Optional<Index>:$slot, UnitAttr:$packed);
  let assemblyFormat = [{
    $src `[` $batch `,` $tile `,` $head `]`
    (`pages` $pages^ `:` qualified(type($pages)))? (`limit` $limit^)?
    (`slot` $slot^)?
    `->` $dst attr-dict `:` qualified(type($src)) `->` qualified(type($dst))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The index whose slot the copy fills and by which reads name it:
    /// `slot`, or the tile.
    ::mlir::Value getSlotIndex() { return getSlot() ? getSlot() : getTile(); }
  }];
}

def Attn_CopyTileOp : Attn_Op<"copy_tile"> {
  let summary = "Asynchronous copy of one tile of a tensor of the kernel to shared memory";
  let description = [{
    Copies an R x C tile (the buffer's rows and columns) of `src` into slot
    `tile mod slots` of `dst`: rows `row .. row + R - 1` and columns
    `col .. col + C - 1` of a row-major 2-d tensor at `[row, col]`, or of
    one (batch, head) of a (batch, rows, heads, dim) tensor at
    `[batch, row, head, col]`. `src` is a tensor argument of the kernel (an
    extra tensor of any element type a shared buffer holds, 8-bit ones
    included, or a declared sequence tensor) that it reads: role "in", or
    a workspace. 16-byte chunks past the tensor's extents copy 0 bytes,
    which zero-fills them; `col` and the tensor's column count must be
    whole 16-byte chunks (the launch plan checks the strides, the op the
    column offset). One async group, like attn.copy_async, so
    attn.async_wait's counts stay exact.

    ```mlir
    attn.copy_tile %a[%r, %c0] -> %as[%c0] : memref<?x?xi8, strided<[?, 1]>> -> memref<1x64x64xi8, 3>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                       Variadic<Index>:$indices,
                       Arg<Attn_SharedBuffer, "", [MemWrite]>:$dst,
                       Index:$tile);
  let assemblyFormat = [{
    $src `[` $indices `]` `->` $dst `[` $tile `]` attr-dict `:`
    qualified(type($src)) `->` qualified(type($dst))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The dimensions of `src` the tile's rows and columns run along.
    int64_t getRowDim() { return getTileRowDim(getSrc().getType()); }
    int64_t getColDim() { return getSrc().getType().getRank() - 1; }
    ::mlir::Value getRow() { return getIndices()[getRowDim()]; }
    ::mlir::Value getCol() { return getIndices()[getColDim()]; }
  }];
}

def Attn_AsyncWaitOp : Attn_Op<"async_wait"> {
  let summary = "Waits until at most `pending` async copy groups are in flight";
  let description = [{
    The calling thread's copies committed before the last `pending` groups
    have landed. Other threads see them only after an `attn.barrier`.

    ```mlir
    attn.async_wait {pending = 0 : i64}
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let assemblyFormat = "attr-dict";
}

def Attn_BarrierOp : Attn_Op<"barrier"> {
  let summary = "A barrier across the block's threads (bar.sync 0)";
  let description = [{
    ```mlir
    attn.barrier
    ```
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Tile level: compute
//===----------------------------------------------------------------------===//

def Attn_SplatOp : Attn_Op<"splat", [Pure]> {
  let summary = "A register fragment with every element equal to `value`";
  let description = [{
    ```mlir
    %acc = attn.splat {value = 0.0 : f32} : !attn.frag<128x128xf32>
    ```
  }];
  let arguments = (ins F32Attr:$value);
  let results = (outs Attn_Frag:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def Attn_LoadFragOp : Attn_Op<"load_frag"> {
  let summary = "Moves slot 0 of a shared buffer into registers (ldmatrix)";
  let description = [{
    ```mlir
    %qf = attn.load_frag %qs : memref<1x128x128xf16, 3> -> !attn.frag<128x128xf16>
    ```
  }];
  let arguments = (ins Arg<Attn_SharedBuffer, "", [MemRead]>:$src);
  let results = (outs Attn_Frag:$result);
  let assemblyFormat = "$src attr-dict `:` qualified(type($src)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Attn_StoreFragOp : Attn_Op<"store_frag"> {
  let summary = "Stores a register tile into slot 0 of a shared buffer";
  let description = [{
    The mirror of `attn.load_frag`: every thread writes its elements of the
    f32 `M x N` accumulator `value`, rounded to the buffer's f16 / bf16, to
    slot 0 of `dst` (one slot, M x N), in the swizzled row-major layout
    every reader of a buffer expects. It is how a tile moves between
    layouts through shared memory: the backward writes dS^T (key rows)
    and reads it back as dS, `attn.mma`'s A with `transpose_a`, for dQ =
    dS K. attn-insert-barriers orders it against the buffer's readers.

    ```mlir
    attn.store_frag %ds -> %dss : !attn.frag<64x64xf32> -> memref<1x64x64xbf16, 3>
    ```
  }];
  let arguments = (ins Attn_Frag:$value,
                       Arg<Attn_SharedBuffer, "", [MemWrite]>:$dst);
  let assemblyFormat = [{
    $value `->` $dst attr-dict `:` qualified(type($value)) `->` qualified(type($dst))
  }];
  let hasVerifier = 1;
}

def Attn_MmaOp : Attn_Op<"mma", [AttrSizedOperandSegments]> {
  let summary = "D = A B (+ C) for one tile: the block's warp-level matmul";
  let description = [{
    Multiplies an M x K tile A by a K x N tile B on the tensor cores, into
    the M x N accumulator fragment D, adding `acc` when given (else D
    starts at 0). The mma.sync instruction comes from the mma table
    (Attn/Utils/MmaFragments.h), by the chip and the types of A, B and D:
    f16 / bf16 into f32 (or f16 into f16), s8 into i32, e4m3 / e5m2 into
    f32.

    * A is an `a`-layout fragment in registers, or a shared buffer read at
      slot `a_tile mod slots` (no `a_tile`: a one-slot buffer). The buffer
      holds A as [M][K], or as [K][M] with `transpose_a`.
    * B is a shared buffer read at slot `b_tile mod slots`. It holds B as
      [K][N], or as [N][K] with `transpose_b` (K's rows in S = Q K^T).
    * The block's row warps split M. With `kv_warps` > 1 in the config, the
      KV warps split the buffer rows of B (N with `transpose_b`, else K),
      so D (or A's K) has the warp's share. With `split_n` (B stored
      [K][N], no `transpose_b`) they split B's columns instead: each KV
      warp reads all of K and its share of N, so D is the warp's columns
      `[kv_warp * N, (kv_warp + 1) * N)` and A (a buffer) is read whole.
      The backward's 8-warp key-grid kernel multiplies so.
    * With `k_begin` / `k_end` (multiples of the instruction's k; `k_end` 0
      is the end of K), the product runs over that slice of K only, how one
      tile of Q and K holds two attention maps (differential attention).
    * With `n_begin` / `n_end` (multiples of two mma n-tiles; `n_end` 0 is
      the end of N), D is that slice of the product's columns only:
      M x (n_end - n_begin), from B's columns [n_begin, n_end) (its rows
      with `transpose_b`) of the warp's share. A product split so holds
      fewer accumulators at once: the backward forms dQ = dS K in column
      halves, each stored before the next is formed.

    8-bit operands are read with K contiguous: A as [M][K] and B as [N][K]
    (ldmatrix has no 8-bit transpose on the sm80 path).

    ```mlir
    // S = Q K[j]^T
    %s = attn.mma %qf, %ks[%j] {transpose_b} : !attn.frag<128x128xf16>, memref<1x64x128xf16, 3> -> !attn.frag<128x64xf32>
    // acc + P V[j]
    %o = attn.mma %p, %vs[%j], %acc : !attn.frag<128x64xf16>, memref<1x64x128xf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Attn_Frag, Attn_SharedBuffer]>:$a,
                       Optional<Index>:$a_tile,
                       Arg<Attn_SharedBuffer, "", [MemRead]>:$b,
                       Index:$b_tile, Optional<Attn_Frag>:$acc,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$split_n,
                       DefaultValuedAttr<I64Attr, "0">:$k_begin,
                       DefaultValuedAttr<I64Attr, "0">:$k_end,
                       DefaultValuedAttr<I64Attr, "0">:$n_begin,
                       DefaultValuedAttr<I64Attr, "0">:$n_end);
  let results = (outs Attn_Frag:$d);
  let builders = [
    OpBuilder<(ins "::mlir::Type":$d, "::mlir::Value":$a,
                   "::mlir::Value":$b, "::mlir::Value":$bTile,
                   "::mlir::Value":$acc, "bool":$transposeB,
                   CArg<"int64_t", "0">:$kBegin, CArg<"int64_t", "0">:$kEnd)>
  ];
  let extraClassDeclaration = [{
    /// M, K and N of the product as the block sees it (K: the whole of A's
    /// K, before `k_begin` / `k_end`; N: one KV warp's share, from the
    /// enclosing attn.kernel's config, before `n_begin` / `n_end`).
    int64_t getM();
    int64_t getK();
    int64_t getN();
    /// {M, K, N} of A (a fragment or a buffer, stored transposed with
    /// `transposeA`) times B's buffer (stored [N][K] with `transposeB`),
    /// with `kvWarps` KV warps splitting B's buffer rows (its columns with
    /// `splitN`): what the verifier checks and the builder infers the
    /// result from.
    static std::array<int64_t, 3> getProductShape(
        ::mlir::Type a, ::mlir::MemRefType b, bool transposeA,
        bool transposeB, int64_t kvWarps, bool splitN = false);
    /// B's K as one warp reads it: the rows of B's buffer (its columns with
    /// `transpose_b`) the warp's share of the product runs over.
    int64_t getBK();
    /// The slice [begin, end) of K the product runs over.
    std::pair<int64_t, int64_t> getKRange() {
      int64_t end = static_cast<int64_t>(getKEnd());
      return {static_cast<int64_t>(getKBegin()), end == 0 ? getK() : end};
    }
    /// The slice [begin, end) of N that D holds.
    std::pair<int64_t, int64_t> getNRange() {
      int64_t end = static_cast<int64_t>(getNEnd());
      return {static_cast<int64_t>(getNBegin()), end == 0 ? getN() : end};
    }
    /// A's element type, in registers or in shared memory.
    ::mlir::Type getAElementType();
  }];
  let assemblyFormat = [{
    $a (`[` $a_tile^ `]`)? `,` $b `[` $b_tile `]` (`,` $acc^)? attr-dict `:`
    qualified(type($a)) `,` qualified(type($b)) (`,` qualified(type($acc))^)?
    `->` qualified(type($d))
  }];
  let hasVerifier = 1;
}

def Attn_MaskOp : Attn_Op<"mask", [Pure, AllTypesMatch<["s", "result"]>]> {
  let summary = "Sets masked scores of one (query tile, KV tile) to -inf";
  let description = [{
    Masks keys at or past `seqlen_k` and, per the window, keys outside
    `[i + seqlen_k - seqlen_q - left, i + seqlen_k - seqlen_q + right]` for
    query row i (-1: unbounded). Only KV tiles that `attn.kv_bounds` did not
    mark as unmasked carry this op.

    ```mlir
    %sm = attn.mask %s, %m, %j, %sq, %sk {window_left = -1, window_right = 0} : !attn.frag<128x64xf32>
    ```
  }];
  let arguments = (ins Attn_Frag:$s, Index:$m_block, Index:$n_block,
                       Index:$seqlen_q, Index:$seqlen_k,
                       I64Attr:$window_left, I64Attr:$window_right);
  let results = (outs Attn_Frag:$result);
  let assemblyFormat = [{
    $s `,` $m_block `,` $n_block `,` $seqlen_q `,` $seqlen_k attr-dict `:` qualified(type($s))
  }];
}

def Attn_ModifyScoresOp : Attn_Op<"modify_scores", [
    Pure, IsolatedFromAbove, AllTypesMatch<["s", "result"]>]> {
  let summary = "Applies score_mod and mask_mod to one (query tile, KV tile)";
  let description = [{
    Each score s of query row `q_idx` (its position in the sequence) and key
    `kv_idx` becomes `score_mod(scale * s, batch, head, q_idx, kv_idx)` when
    a `score_mod` region is present (FlexAttention's order: the hook sees
    the scaled score), and -inf where `mask_mod(batch, head, q_idx, kv_idx)`
    is false. Without `score_mod` the scores stay unscaled, so the softmax
    keeps folding the scale into its exponent. The hooks also run for rows
    at or past seqlen_q (never stored) and keys at or past seqlen_k
    (`attn.mask` masks them); every tensor read clamps its indices to the
    tensor's extents, so no hook reads out of bounds.

    The regions are the attention's hooks with every kernel argument they
    read replaced by `attn.kernel_arg`. An op of the score_mod marked
    `attn.diagonal_table` (Analysis/DiagonalTerm.h) is read from the
    diagonal table its own kernel fills, instead of being computed.

    ```mlir
    %s1 = attn.modify_scores %s, %m, %j, %b, %h, %sq, %sk, %scale : !attn.frag<128x64xf32>
      score_mod {
      ^bb0(%x: f32, %bi: index, %hi: index, %qi: index, %ki: index):
        attn.yield %x : f32
      }
    ```
  }];
  let arguments = (ins Attn_Frag:$s, Index:$m_block, Index:$n_block,
                       Index:$batch, Index:$head, Index:$seqlen_q,
                       Index:$seqlen_k, F32:$scale);
  let results = (outs Attn_Frag:$result);
  let regions = (region AnyRegion:$score_mod, AnyRegion:$mask_mod);
  let assemblyFormat = [{
    $s `,` $m_block `,` $n_block `,` $batch `,` $head `,` $seqlen_q `,` $seqlen_k `,` $scale
    attr-dict `:` qualified(type($s))
    (`score_mod` $score_mod^)? (`mask_mod` $mask_mod^)?
  }];
  let hasVerifier = 1;
}

def Attn_OnlineSoftmaxOp : Attn_Op<"online_softmax", [Pure,
    AllTypesMatch<["row_max", "new_row_max", "row_sum", "new_row_sum"]>,
    AllTypesMatch<["acc", "new_acc"]>]> {
  let summary = "One step of the online softmax, in the exp2 domain";
  let description = [{
    With `c = scale_log2 = softmax_scale * log2(e)` (a run-time value) and
    `m` the running row
    max of the raw scores:
    `m' = max(m, rowmax(s))`, `p = exp2(c*s - c*m')`,
    `l' = l * exp2(c*m - c*m') + rowsum(p)`, `acc' = acc * exp2(c*m - c*m')`.
    `p` comes out in the element type of V, in the A-fragment layout of the
    PV mma (no shared-memory round trip). A row whose max is still -inf
    rescales by 1 and gives p = 0, never NaN.

    ```mlir
    %p, %m1, %l1, %acc1 = attn.online_softmax %s, %m, %l, %acc, %scale_log2
      : !attn.frag<128x64xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
        -> !attn.frag<128x64xf16>
    ```
  }];
  let arguments = (ins Attn_Frag:$s, Attn_Frag:$row_max, Attn_Frag:$row_sum,
                       Attn_Frag:$acc, F32:$scale_log2);
  let results = (outs Attn_Frag:$p, Attn_Frag:$new_row_max,
                      Attn_Frag:$new_row_sum, Attn_Frag:$new_acc);
  let assemblyFormat = [{
    $s `,` $row_max `,` $row_sum `,` $acc `,` $scale_log2 attr-dict `:` qualified(type($s)) `,`
    qualified(type($row_max)) `,` qualified(type($row_sum)) `,` qualified(type($acc)) `->` qualified(type($p))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile level: elementwise math, reductions and conversions on fragments
//===----------------------------------------------------------------------===//

def Attn_MapOp : Attn_Op<"map", [Pure]> {
  let summary = "Elementwise scalar math over register tiles, with broadcasting";
  let description = [{
    Applies the scalar body to every element of the result. The operands are
    f32 fragments and scalars (f32, index, integers):
      - a rank-2 fragment (M x N) gives the element at the same position;
      - a rank-1 `rows` fragment (M) gives the value of the element's row;
      - a rank-1 `cols` fragment (N) gives the value of the element's column
        (it needs a rank-2 operand: the backward's D and LSE beside a
        transposed score tile, whose columns are queries);
      - a scalar is the same for every element.
    The result has the shape of the rank-2 operands (all the same), or M when
    every fragment operand is a `rows` vector; its elements are f32. The body takes one
    argument per operand, then the element's row within the tile and, for a
    rank-2 result, its column (both `index`), and yields one f32. It may use
    what a hook may (arith, math, the kernel's extra arguments). Layouts are
    the compiler's: the body is written per element.

    ```mlir
    %p = attn.map %s, %bias, %scale : !attn.frag<128x64xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128x64xf32> {
    ^bb0(%x: f32, %b: f32, %c: f32, %row: index, %col: index):
      %y = arith.mulf %x, %c : f32
      %z = arith.addf %y, %b : f32
      attn.yield %z : f32
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let results = (outs Attn_Frag:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $operands attr-dict `:` qualified(type($operands)) `->` qualified(type($result)) $body
  }];
  let hasVerifier = 1;
}

def Attn_ForEachOp : Attn_Op<"for_each"> {
  let summary = "Elementwise side effects over register tiles: atomic adds into accumulated tensors";
  let description = [{
    Runs the body on every element of its operands, as `attn.map` does
    (the same operands, broadcasting and body arguments: one per operand,
    then the element's row and column), for what the body writes: the body
    may hold, besides what a hook may, `memref.atomic_rmw addf` of f32
    values into the kernel's extra tensors of role `accumulate`, and yields
    nothing. The backward adds the gradient of each tensor a score_mod
    reads this way, at the indices the read used.

    An add whose indices depend on no element (they come from scalar
    operands only: a head's slope, a per-head temperature) is summed over
    the thread's elements and the warp first, then added once per warp.

    ```mlir
    attn.for_each %g, %h : !attn.frag<64x64xf32>, index {
    ^bb0(%x: f32, %head: index, %row: index, %col: index):
      %old = memref.atomic_rmw addf %x, %dslopes[%head] : (f32, memref<?xf32, strided<[?]>>) -> f32
      attn.yield
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $operands attr-dict `:` qualified(type($operands)) $body
  }];
  let hasVerifier = 1;
}

def Attn_ReduceRowsOp : Attn_Op<"reduce_rows", [Pure]> {
  let summary = "The max or the sum of each row of a register tile";
  let description = [{
    Reduces each row of an f32 `M x N` fragment to one value (`kind` is
    `max` or `sum`); the result is the `M` fragment of row values, every
    thread of a row holding its row's value.

    ```mlir
    %m = attn.reduce_rows %s {kind = "max"} : !attn.frag<128x64xf32> -> !attn.frag<128xf32>
    ```
  }];
  let arguments = (ins Attn_Frag:$source, StrAttr:$kind);
  let results = (outs Attn_Frag:$result);
  let assemblyFormat = [{
    $source attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_ConvertOp : Attn_Op<"convert", [Pure]> {
  let summary = "An f32 tile rounded to f16 or bf16, as the A operand of an mma";
  let description = [{
    Rounds an f32 `M x N` fragment (N a multiple of 16) to f16 or bf16 in the
    layout `attn.mma` takes its A operand (P) in. No shared memory is involved: the
    accumulator layout of two adjacent 8-column tiles is the A layout of one
    16-column tile.

    ```mlir
    %p = attn.convert %s : !attn.frag<128x64xf32> -> !attn.frag<128x64xbf16>
    ```
  }];
  let arguments = (ins Attn_Frag:$source);
  let results = (outs Attn_Frag:$result);
  let assemblyFormat = [{
    $source attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_StoreOp : Attn_Op<"store"> {
  let summary = "Stores a register tile as the block's rows of O (and the LSE)";
  let description = [{
    Writes the f32 `M x D` fragment `acc` to the rows of query tile
    `m_block` of O, converted to O's element type, through the staging
    buffer `stage` (as attn.epilogue does, for 128-bit coalesced stores);
    rows past seqlen_q are not stored. With `values`, an `M` fragment, its
    values are stored as the LSE of the rows; without it the LSE tensor is
    left untouched. Nothing is normalised: the tile program owns its math.

    ```mlir
    attn.store %acc, %os -> %o[%b, %mb, %h], %lse values(%l : !attn.frag<128xf32>)
      : !attn.frag<128x128xf32>, memref<1x128x128xf16, 3>
        -> memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_Frag:$acc,
                       Arg<Attn_SharedBuffer, "", [MemWrite, MemRead]>:$stage,
                       Attn_GlobalTensor:$o, Index:$batch, Index:$m_block,
                       Index:$head, Attn_LseTensor:$lse,
                       Optional<Attn_Frag>:$lse_values);
  let assemblyFormat = [{
    $acc `,` $stage `->` $o `[` $batch `,` $m_block `,` $head `]` `,` $lse
    (`values` `(` $lse_values^ `:` qualified(type($lse_values)) `)`)?
    attr-dict `:` qualified(type($acc)) `,` qualified(type($stage))
    `->` qualified(type($o)) `,` qualified(type($lse))
  }];
  let hasVerifier = 1;
}

def Attn_StoreTileOp : Attn_Op<"store_tile"> {
  let summary = "Stores or atomically adds a register tile to a tensor of the kernel";
  let description = [{
    Writes a register tile to global memory, each thread its own elements
    at the coordinates of the fragment tables, with no shared memory;
    elements outside the tensor's extents are not written. `dst` is a
    tensor argument of the kernel (a declared sequence tensor or an extra
    tensor) whose role is "out", or "accumulate" with `accumulate`. The
    indices are one per dimension of `dst`:

    * an M x N accumulator (`acc`) into a 2-d tensor at `[row, col]`, or
      into a (batch, rows, heads, dim) tensor at `[batch, row, head, col]`:
      element (i, j) goes to row `row + i`, column `col + j`;
    * an M row state (`rows`) into a (batch, heads, rows) tensor at
      `[batch, head, row]`: element i goes to row `row + i` (one thread of
      each row's quad writes it).

    The value's element type is the tensor's, or an f32 tile is rounded to
    an f16 / bf16 tensor. With `accumulate` (f32 or i32 only) the elements
    are added with global atomics, so that several blocks may sum into one
    output, as the backward's dQ does; the order of the additions is not
    fixed, so an f32 sum is not bit-reproducible. Not with KV warps (their
    tiles are partial).

    `c_tiles` is present exactly when `dst` is declared in that order (a
    workspace's `#attn.tensor` order "c_tiles"): each thread then writes
    its C elements of a 16 x 8 tile as one 16-byte vector (an f32 tile,
    added as `red.global.add.v4.f32` where the ISA has it), and the row
    index must be a known multiple of 16 (a constant, or products and sums
    with one) and the column index a non-negative constant multiple of 8,
    so that the tiles are the tensor's.

    ```mlir
    attn.store_tile %d -> %out[%r, %c0] {accumulate} : !attn.frag<64x64xf32> -> memref<?x?xf32, strided<[?, 1]>>
    attn.store_tile %dq -> %dq_accum[%b, %row, %h, %c0] {accumulate} : !attn.frag<64x128xf32> -> memref<?x?x?x128xf32, strided<[?, ?, ?, 1]>>
    attn.store_tile %d -> %delta[%b, %h, %row] : !attn.frag<64xf32> -> memref<?x?x?xf32, strided<[?, ?, 1]>>
    ```
  }];
  let arguments = (ins Attn_Frag:$value, Arg<AnyMemRef, "", [MemWrite]>:$dst,
                       Variadic<Index>:$indices, UnitAttr:$accumulate,
                       UnitAttr:$c_tiles);
  let assemblyFormat = [{
    $value `->` $dst `[` $indices `]` attr-dict `:`
    qualified(type($value)) `->` qualified(type($dst))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The dimensions of `dst` that the tile's rows and (for an
    /// accumulator) columns run along; the other indices are fixed.
    int64_t getRowDim();
    int64_t getColDim();
  }];
}

def Attn_LoadTileOp : Attn_Op<"load_tile"> {
  let summary = "Loads an accumulator tile of a tensor of the kernel into registers";
  let description = [{
    The mirror of attn.store_tile: each thread reads its elements of an
    M x N accumulator (`acc` layout, f32 or i32) from a 2-d tensor at
    `[row, col]` or a (batch, rows, heads, dim) tensor at `[batch, row,
    head, col]`, or of an f32 vector (`rows` or `cols` layout, N values)
    from a (batch, heads, rows) tensor at `[batch, head, row]`, element i
    from row `row + i` (the backward's per-query LSE and D beside a
    key-side tile), with no shared memory; elements outside the tensor's
    extents read 0. An f32 tile reads an f32 tensor, or an f16 or bf16 one
    widened (the backward's dO and O for D = rowsum(dO * O)); an i32 tile
    reads i32. `src` is a tensor argument of the
    kernel (a declared tensor or an extra tensor) of role "in", or a
    workspace: how a family's later kernel reads what an earlier one
    accumulated (the backward's dQ convert). `c_tiles` as for
    attn.store_tile: a tensor stored in C-fragment tiles, read with one
    16-byte load per thread and tile.

    ```mlir
    %dq = attn.load_tile %dq_accum[%b, %row, %h, %c0] : memref<?x?x?x128xf32, strided<[?, ?, ?, 1]>> -> !attn.frag<64x128xf32>
    %lse = attn.load_tile %lse[%b, %h, %row] : memref<?x?x?xf32> -> !attn.frag<64xf32, cols>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                       Variadic<Index>:$indices, UnitAttr:$c_tiles);
  let results = (outs Attn_Frag:$result);
  let assemblyFormat = [{
    $src `[` $indices `]` attr-dict `:` qualified(type($src)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_KVLoopOp : Attn_Op<"kv_loop", [
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "The loop over KV tiles, from the last one down";
  let description = [{
    Runs its body for `j = upper - 1` down to `lower` (FlashAttention's
    order: the masked tiles at the end of a causal row come first). The
    body's arguments are `j` and the loop-carried values; it yields their new
    values. `masked` records that the body masks scores, for readers and
    for the lowering's register budget.

    ```mlir
    %m1, %l1, %acc1 = attn.kv_loop %lo to %hi iter_args(%m0, %l0, %acc0)
        : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
        -> !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
        attributes {masked} {
    ^bb0(%j: index, %m: !attn.frag<128xf32>, %l: !attn.frag<128xf32>, %acc: !attn.frag<128x128xf32>):
      ...
      attn.yield %m2, %l2, %acc2 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
    }
    ```
  }];
  let arguments = (ins Index:$lower, Index:$upper, Variadic<AnyType>:$inits,
                       UnitAttr:$masked);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $lower `to` $upper (`iter_args` `(` $inits^ `)` `:` qualified(type($inits))
    `->` qualified(type($results)))? attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$lower, "::mlir::Value":$upper,
                                 "::mlir::ValueRange":$inits, "bool":$masked)>];
}

def Attn_EpilogueOp : Attn_Op<"epilogue"> {
  let summary = "Normalises O, stages it through shared memory, stores O and LSE";
  let description = [{
    `O = acc / l` is converted to the element type of O, written to the
    staging buffer `stage` (which may reuse Q's bytes), and copied out with
    128-bit coalesced stores to the rows of query tile `m_block`; rows past
    seqlen_q are not stored. `LSE = m * softmax_scale + ln(l)`; a row with
    `l = 0` stores O = 0 and LSE = -inf.

    With a `sink` region (the attention's, its kernel arguments read through
    `attn.kernel_arg`), its logit z joins each row's denominator: `l` grows
    by `e^(z - m * softmax_scale)` before the division and the LSE; a row
    with `l = 0` stores O = 0 and LSE = z.

    With KV warps (`kv_warps` > 1 in the kernel's config), `acc`, `m` and
    `l` are each warp's partial state, and the f32 `merge` buffer
    (`kv_warps x tile_m x (head_dim_v + kMergeRowPadding)`) is where they
    meet: every warp writes its O rows and, in the two columns after them,
    its m and l; then each (row, column pair) is merged as
    `M = max m_w`, `l = sum e^((m_w - M) s) l_w`,
    `O = sum e^((m_w - M) s) O_w / l`. With packed rows (`pack_gqa`), row
    `p` is stored at position `p / G` of head `head + p % G`.

    ```mlir
    attn.epilogue %acc, %m, %l, %os, %scale -> %o[%b, %mb, %h], %lse
      : !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, memref<1x128x128xf16, 3>
        -> memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_Frag:$acc, Attn_Frag:$row_max, Attn_Frag:$row_sum,
                       Arg<Attn_SharedBuffer, "", [MemWrite, MemRead]>:$stage,
                       Attn_GlobalTensor:$o, Index:$batch, Index:$m_block,
                       Index:$head, Attn_LseTensor:$lse, F32:$softmax_scale,
                       Arg<Optional<Attn_SharedBuffer>, "", [MemWrite, MemRead]>:$merge);
  let regions = (region AnyRegion:$sink);
  let assemblyFormat = [{
    $acc `,` $row_max `,` $row_sum `,` $stage `,` $softmax_scale `->` $o `[` $batch `,` $m_block `,` $head `]` `,` $lse
    (`merge` $merge^)?
    attr-dict `:` qualified(type($acc)) `,` qualified(type($row_max)) `,` qualified(type($row_sum)) `,` qualified(type($stage))
    `->` qualified(type($o)) `,` qualified(type($lse)) (`,` qualified(type($merge))^)? (`sink` $sink^)?
  }];
  let hasVerifier = 1;
}

#endif // FLASHTILE_ATTN_OPS
