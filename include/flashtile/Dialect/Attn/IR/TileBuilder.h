//===- TileBuilder.h - The tile language's builder ---------------*- C++
//-*-===//
//
// The one way tile programs are built, by users and by the compiler's own
// expansion (attn-expand-to-tiles builds the FlashAttention-2 program with
// it): each method creates one tile-language op and infers its result type,
// so a program states tiles, copies and math, never a layout, a byte offset
// or a sync:
//   - fragments' thread layouts are the lowering's (FragmentLayout.h);
//   - buffers get bytes from attn-allocate-shared-memory, which checks the
//     chip's limit and names buffers as the program named them;
//   - every wait and barrier comes from attn-insert-barriers, which proves
//     the program race-free.
//
//   TileBuilder t(b, loc, kernel);
//   TileBuilder::Block blk = t.blockContext();
//   Value ks = t.buffer("K", /*slots=*/1, tileN, headDim);
//   t.copy(kernel.getK(), blk.batch, j, blk.kvHead, ks);
//   Value s = t.dot(qf, ks, j);                    // S = Q K[j]^T, f32
//   Value p = t.map({s}, [&](OpBuilder &b, Location loc, ValueRange x) {
//     return arith::MulFOp::create(b, loc, x[0], x[0]).getResult();
//   });
//   acc = t.dotAccumulate(t.convert(p, dtype), vs, j, acc);
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_IR_TILEBUILDER_H
#define FLASHTILE_DIALECT_ATTN_IR_TILEBUILDER_H

#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Dialect/Attn/IR/CallerLocation.h"

#include "mlir/IR/Builders.h"

#include <functional>

namespace flashtile::attn {

class TileBuilder {
public:
  TileBuilder(mlir::OpBuilder &b, mlir::Location loc, KernelOp kernel)
      : b(b), loc(loc), kernel(kernel) {}

  /// Locate ops at their callers' lines (a user's program: every call
  /// takes FLASHTILE_CALLER) instead of at `loc` (the expansion: the
  /// attn.attention's location).
  void useCallerLocations(bool on) { callerLocations = on; }
  /// The location of an op asked for at `file`:`line`.
  mlir::Location at(const char *file, unsigned line);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location getLoc() const { return loc; }
  KernelOp getKernel() { return kernel; }
  /// The element type of Q (and of K, V, O).
  mlir::Type getElementType();

  //===--- The block and its sizes -------------------------------------===//
  struct Block {
    mlir::Value mBlock, head, kvHead, batch, seqlenQ, seqlenK;
  };
  /// attn.block_context.
  Block blockContext(FLASHTILE_CALLER);
  /// The KV tiles a query tile visits (attn.kv_bounds and its refinements).
  struct TileRange {
    mlir::Value begin, unmaskedBegin, unmaskedEnd, end;
  };
  /// attn.kv_bounds: -1 for an unbounded window side; (-1, 0) is causal.
  TileRange kvBounds(const Block &block, int64_t tileM, int64_t tileN,
                     int64_t windowLeft, int64_t windowRight, FLASHTILE_CALLER);
  /// attn.kv_split of `range` (the decode family's split-KV).
  TileRange kvSplit(const TileRange &range, FLASHTILE_CALLER);
  /// attn.softmax_scale: the run-time scale, `defaultValue` when the caller
  /// passes none.
  mlir::Value softmaxScale(float defaultValue, FLASHTILE_CALLER);
  /// The same with the kernel's default (getDefaultSoftmaxScale).
  mlir::Value softmaxScale(FLASHTILE_CALLER);
  /// Index and f32 constants, and `tile - back`.
  mlir::Value index(int64_t value, FLASHTILE_CALLER);
  mlir::Value f32(float value, FLASHTILE_CALLER);
  mlir::Value minus(mlir::Value tile, int64_t back, FLASHTILE_CALLER);

  //===--- Shared memory ------------------------------------------------===//
  /// attn.smem_alloc of `slots x rows x cols` elements (default: Q's type),
  /// named `name` in plans and errors.
  mlir::Value buffer(llvm::StringRef name, int64_t slots, int64_t rows,
                     int64_t cols, mlir::Type elementType = {},
                     FLASHTILE_CALLER);
  /// attn.copy_async of tile `tile` of `src` into its slot of `dst` (the
  /// slot of `slot` when given: a loop index naming a step whose tile and
  /// head are computed from it).
  void copy(mlir::Value src, mlir::Value batch, mlir::Value tile,
            mlir::Value head, mlir::Value dst, mlir::Value pages = {},
            mlir::Value limit = {}, bool packed = false,
            mlir::Value slot = {}, FLASHTILE_CALLER);
  /// attn.load_frag: slot 0 of `src` into registers.
  mlir::Value load(mlir::Value src, FLASHTILE_CALLER);

  //===--- Register tiles -----------------------------------------------===//
  /// attn.splat.
  mlir::Value splat(llvm::ArrayRef<int64_t> shape, mlir::Type elementType,
                    float value, FLASHTILE_CALLER);
  /// How attn.mma reads its operands: the slot of a many-slot A buffer,
  /// whether A's and B's buffers hold them transposed ([K][M], [N][K]),
  /// the accumulator type (no acc: f32 for float operands, i32 for i8), and
  /// the slice [kBegin, kEnd) of K (kEnd 0: the end).
  struct MmaOptions {
    mlir::Value aTile = {};
    bool transposeA = false, transposeB = false;
    /// With KV warps, each warp takes its share of B's columns (B stored
    /// [K][N]) and A whole (attn.mma's split_n).
    bool splitN = false;
    mlir::Type accType = {};
    int64_t kBegin = 0, kEnd = 0;
    /// The slice of N the result holds (attn.mma's n_begin / n_end; 0 and
    /// 0: all of it).
    int64_t nBegin = 0, nEnd = 0;
  };
  /// attn.mma: D = A B[bTile] (+ acc), B from `bBuffer`. The result is an
  /// accumulator of M x N (N: one KV warp's share of B's buffer rows with
  /// transposeB, of its columns with splitN), of acc's type when given.
  mlir::Value mma(mlir::Value a, mlir::Value bBuffer, mlir::Value bTile,
                  mlir::Value acc, const MmaOptions &options, FLASHTILE_CALLER);
  /// S = Q K[tile]^T in f32, attn.mma with K's rows as B's columns (`q` in
  /// registers or shared memory); the result is the warp's slice of the KV
  /// tile. With a head range [headBegin, headEnd) (headEnd 0: the end),
  /// over that slice of the head dim only.
  mlir::Value dot(mlir::Value q, mlir::Value k, mlir::Value tile,
                  int64_t headBegin = 0, int64_t headEnd = 0, FLASHTILE_CALLER);
  /// acc + P V[tile], attn.mma with P in registers. An f32 `p` is
  /// converted to V's element type in the A-operand layout first
  /// (attn.convert).
  mlir::Value dotAccumulate(mlir::Value p, mlir::Value v, mlir::Value tile,
                            mlir::Value acc, FLASHTILE_CALLER);
  /// The scalar body of a map: its arguments are one per operand (elements
  /// of fragments, scalars as they are), then the row and, for a rank-2
  /// result, the column; it returns the f32 element.
  using MapBody = std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                            mlir::ValueRange)>;
  /// attn.map: the result's shape is the rank-2 operands' (else the rank-1
  /// ones').
  mlir::Value map(mlir::ValueRange operands, const MapBody &body,
                  FLASHTILE_CALLER);
  /// attn.map with the body left empty (its block has its arguments), for
  /// callers that trace the body themselves.
  MapOp createMap(mlir::ValueRange operands, FLASHTILE_CALLER);
  /// The body of a for_each: a map's arguments; it emits its atomic adds
  /// (memref.atomic_rmw addf into accumulate tensors) and returns nothing.
  using ForEachBody = std::function<void(mlir::OpBuilder &, mlir::Location,
                                         mlir::ValueRange)>;
  /// attn.for_each over the operands' elements (a map's shapes).
  void forEach(mlir::ValueRange operands, const ForEachBody &body,
               FLASHTILE_CALLER);
  /// attn.reduce_rows ("max" or "sum").
  mlir::Value reduceRows(mlir::Value source, llvm::StringRef kind,
                         FLASHTILE_CALLER);
  /// attn.convert to f16 / bf16 in the A-operand layout.
  mlir::Value convert(mlir::Value source, mlir::Type elementType,
                      FLASHTILE_CALLER);

  //===--- The fused steps of the built-in programs ----------------------===//
  /// attn.mask of the scores of KV tile `nBlock`.
  mlir::Value mask(mlir::Value s, const Block &block, mlir::Value nBlock,
                   int64_t windowLeft, int64_t windowRight, FLASHTILE_CALLER);
  /// attn.modify_scores with empty hook regions, for the caller to fill.
  ModifyScoresOp modifyScores(mlir::Value s, const Block &block,
                              mlir::Value nBlock, mlir::Value scale,
                              FLASHTILE_CALLER);
  /// attn.online_softmax: P (in `pType`'s element type) and the new state.
  OnlineSoftmaxOp onlineSoftmax(mlir::Value s, mlir::Value rowMax,
                                mlir::Value rowSum, mlir::Value acc,
                                mlir::Value scaleLog2, mlir::Type pElementType,
                                FLASHTILE_CALLER);
  /// attn.key_range and attn.block_ranges over `within`, regions empty.
  KeyRangeOp keyRange(const Block &block, const TileRange &within,
                      int64_t tileM, int64_t tileN, FLASHTILE_CALLER);
  /// With keyGrid, block.mBlock is the block's KV tile and block.head
  /// its KV head, and `within` is of query tiles.
  BlockRangesOp blockRanges(const Block &block, const TileRange &within,
                            int64_t tileM, int64_t tileN, bool perHead,
                            bool keyGrid, FLASHTILE_CALLER);
  /// attn.query_range of a key-grid block (whose KV tile is
  /// block.mBlock) over the query tiles `within` and the `group` query
  /// heads from `head`, reading `tables` when given; region empty.
  QueryRangeOp queryRange(const Block &block, mlir::Value head,
                          mlir::Value group, const TileRange &within,
                          int64_t tileM, int64_t tileN,
                          mlir::ValueRange tables, bool exact,
                          FLASHTILE_CALLER);

  //===--- The KV loop and the block's exits -----------------------------===//
  /// The body of a KV loop: given the tile index and the loop-carried
  /// values, returns their new values.
  using LoopBody = std::function<llvm::SmallVector<mlir::Value>(
      mlir::Value j, mlir::ValueRange carried)>;
  /// attn.kv_loop from `upper - 1` down to `lower`; `masked` records that
  /// the body masks scores.
  mlir::ValueRange loop(mlir::Value lower, mlir::Value upper,
                        mlir::ValueRange inits, bool masked,
                        const LoopBody &body, FLASHTILE_CALLER);
  /// attn.store of `acc` as the block's rows of O (`lseValues` optional).
  void store(mlir::Value acc, mlir::Value stage, const Block &block,
             mlir::Value lseValues = {}, FLASHTILE_CALLER);
  /// attn.store_tile: `value` (an accumulator, or a row state) into the
  /// kernel's tensor `dst` at `indices` (one per dimension), rounded to
  /// its type, or added with f32 / i32 atomics with `accumulate`.
  void storeTile(mlir::Value value, mlir::Value dst, mlir::ValueRange indices,
                 bool accumulate = false, FLASHTILE_CALLER);
  /// attn.load_tile: an M x N accumulator of `src`'s element type (f32 for
  /// a 16-bit float tensor, widened) read from the kernel's tensor `src` at
  /// `indices` (0 outside its extents).
  mlir::Value loadTile(mlir::Value src, mlir::ValueRange indices, int64_t rows,
                       int64_t cols, FLASHTILE_CALLER);
  /// attn.load_tile of an f32 vector of `size` values (`layout` rows or
  /// cols) from the (batch, heads, rows) tensor `src` at [batch, head, row].
  mlir::Value loadVector(mlir::Value src, mlir::ValueRange indices,
                         int64_t size, FragLayout layout, FLASHTILE_CALLER);
  /// attn.store_frag: an f32 accumulator into slot 0 of `dst`, rounded to
  /// its type (a layout change through shared memory).
  void storeFrag(mlir::Value value, mlir::Value dst, FLASHTILE_CALLER);
  /// attn.epilogue (normalise by l, LSE), its sink region empty.
  EpilogueOp epilogue(mlir::Value acc, mlir::Value rowMax, mlir::Value rowSum,
                      mlir::Value stage, const Block &block,
                      mlir::Value softmaxScale, mlir::Value merge = {},
                      FLASHTILE_CALLER);

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
  KernelOp kernel;
  bool callerLocations = false;
};

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_IR_TILEBUILDER_H
