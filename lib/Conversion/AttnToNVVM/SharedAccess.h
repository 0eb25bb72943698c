//===- SharedAccess.h - Shared memory and its swizzle -----------*- C++ -*-===//
//
// Private to lib/Conversion/AttnToNVVM: the dynamic shared memory's base, the
// slots of ring buffers, the XOR swizzle of their rows and the walks of
// tile copies over 16-byte chunks.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_CONVERSION_ATTNTONVVM_SHAREDACCESS_H
#define FLASHTILE_LIB_CONVERSION_ATTNTONVVM_SHAREDACCESS_H

#include "Emitter.h"

namespace flashtile::attn::lowering {

/// The dynamic shared memory every buffer lives in.
constexpr llvm::StringLiteral kSmemSymbol = "__flashtile_smem";

/// Pointer (address space 3) to the start of the dynamic shared memory.
mlir::Value getSmemBase(Emitter &e, mlir::Operation *anchor);

/// A row of `type` (a shared buffer) in 16-bit columns, the unit the
/// swizzle addresses in: an 8-bit row of 64 elements is 32 columns.
inline int64_t getB16Columns(mlir::MemRefType type) {
  return type.getDimSize(2) * type.getElementTypeBitWidth() / 16;
}

/// The start of slot `tile mod slots` (floor modulo, so negative tiles map
/// to a slot too) of a ring buffer of `type` at `buffer`.
mlir::Value getSlotAddress(Emitter &e, mlir::Value buffer,
                           mlir::MemRefType type, mlir::Value tile);

/// Byte offset of 16-byte chunk `chunk` of row `row` in a row-major shared
/// tile of `cols` 16-bit elements per row. Chunks are XOR-swizzled with the
/// row so that eight consecutive rows read at one logical chunk hit eight
/// distinct 16-byte bank groups (ldmatrix reads 8 rows per phase): within
/// groups of 8 chunks by `row % 8` when a row has a multiple of 8 chunks,
/// within groups of 4 chunks by `(row / 2) % 4` otherwise (e.g. d = 96).
mlir::Value swizzledOffset(Emitter &e, mlir::Value row, mlir::Value chunk,
                           int64_t cols);

/// Addresses of 16-byte chunks of one lane in a swizzled shared tile, in the
/// form [register + immediate]. A lane's row is `laneRow` plus a compile-time
/// multiple of 8, and its chunk `laneChunk` plus a compile-time even number;
/// the swizzle key of a row does not change under a multiple of 8, so only
/// the chunk offset modulo the swizzle group (8 or 4 chunks) reaches a
/// register: one base per distinct value, everything else is an immediate.
/// This keeps loop-invariant address registers to a handful per operand
/// instead of one per ldmatrix.
class SwizzledTileAccess {
public:
  SwizzledTileAccess(Emitter &e, mlir::Value tileBase, mlir::Value laneRow,
                     mlir::Value laneChunk, int64_t cols);
  /// The address of (laneRow + rowOffset, laneChunk + chunkOffset).
  mlir::Value address(int64_t rowOffset, int64_t chunkOffset);

private:
  Emitter &e;
  mlir::Value rowBase, laneChunk, key;
  int64_t cols, group;
  llvm::SmallVector<mlir::Value, 8> bases;
};

/// The 16-byte chunks one thread moves when `threads` threads copy a
/// [rows x cols] tile whole rows at a time: chunk id `tid + step * threads`.
/// When the threads cover a multiple of 8 whole rows per step, a thread's
/// column and swizzle key never change, so every step is the first one plus
/// immediates.
class TileChunkWalk {
public:
  TileChunkWalk(Emitter &e, mlir::Value tid, int64_t threads, int64_t rows,
                int64_t cols);
  int64_t numSteps() const { return (chunks + threads - 1) / threads; }
  /// True when some threads have no chunk in `step`.
  bool isPartial(int64_t step) const { return (step + 1) * threads > chunks; }
  /// Whether this thread has a chunk in `step` (only for partial steps).
  mlir::Value isActive(int64_t step);
  mlir::Value row(int64_t step);
  mlir::Value chunk(int64_t step);
  /// Byte offset of the chunk in the swizzled tile.
  mlir::Value smemOffset(int64_t step);
  /// Rows between a thread's consecutive steps when every thread keeps one
  /// column and moves down by a fixed number of rows per step (then row(s)
  /// = row(0) + s * rowsPerStep()), else 0.
  int64_t getRowsPerStep() const { return rowsPerStep; }

private:
  mlir::Value chunkId(int64_t step);

  Emitter &e;
  mlir::Value tid;
  int64_t threads, rows, cols, chunksPerRow, chunks;
  /// Rows per step on the fast path, 0 otherwise.
  int64_t rowsPerStep = 0;
  mlir::Value firstRow, firstChunk, firstOffset;
};

} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_SHAREDACCESS_H
