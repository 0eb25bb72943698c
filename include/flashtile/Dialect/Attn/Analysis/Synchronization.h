//===- Synchronization.h - The race proof of a tile program -----*- C++ -*-===//
//
// A tile program moves tiles from global to shared memory with asynchronous
// copies (cp.async) and reads them with every warp of the block. Three facts
// make such a program correct, and a user gets each of them wrong easily:
//   - a read of a slot sees the tile it names: the copy that wrote the slot
//     last is that tile's copy (no stale or clobbered slot);
//   - that copy's group has landed (an attn.async_wait retired it) and every
//     warp sees it (an attn.barrier followed the wait);
//   - a write (a copy, the epilogue's staging) never lands on bytes another
//     warp may still read (an attn.barrier separates them) or on bytes an
//     earlier copy may still fill.
// Bytes are the allocator's (`offset`), so two buffers sharing bytes (V in
// Q's, O in K's) are checked like one ring's slots. A block leaves no copy
// in flight when it reaches the epilogue.
//
// The checker is a bounded model check over the control flow of a tile
// program: straight-line code and top-level attn.kv_loops, whose trip counts
// are block-uniform. Every trace runs the program with concrete tile
// indices: each loop runs 0 to (largest ring + 2) times, in every
// combination, and the first loop starts at each residue of the rings' slot
// counts. A ring's state repeats with the period of its slot count, so a
// race that any longer trace has, one of these traces has too. Tile indices
// must be affine in the loop index and the block's sizes (constants,
// additions, subtractions, multiplications); a loop bound that is an opaque
// value (attn.kv_bounds' results) is given the value that makes the trace's
// trip count, and the bounds of consecutive loops chain as the built-in
// programs' do.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_ANALYSIS_SYNCHRONIZATION_H
#define FLASHTILE_DIALECT_ATTN_ANALYSIS_SYNCHRONIZATION_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>

namespace flashtile::attn {

/// One access of an op to a shared buffer.
struct SharedAccess {
  mlir::Value buffer;
  /// The tile whose slot is accessed; null: slot 0.
  mlir::Value tile;
  bool write = false;
  /// A read that must see a copy of `tile` (false: any copy into the
  /// buffer).
  bool namesTile = false;
  /// Every slot (the epilogue's staging and merge buffers).
  bool whole = false;
};

/// What `op` does to shared memory, in the order it does it: the one model
/// of the tile ops' accesses, which the race checker and the copy pipeliner
/// share.
llvm::SmallVector<SharedAccess> getSharedAccesses(mlir::Operation *op);

/// True for the ops that commit one cp.async group (attn.copy_async,
/// attn.copy_tile): their writes land only once an attn.async_wait counts
/// them complete.
bool isAsyncCopy(mlir::Operation *op);

/// One race of a tile program, found on some trace.
struct SyncHazard {
  enum class Kind {
    /// A read of a slot whose copy has not landed (`inFlight`) or has
    /// landed but no barrier since makes it visible to every warp.
    ReadBeforeVisible,
    /// A read of a slot that holds another tile, or that no copy wrote.
    StaleRead,
    /// A write to bytes another warp may still be reading.
    WriteAfterRead,
    /// A write to bytes an earlier copy may still fill (`inFlight`), or
    /// that copy's bytes are not yet visible to every warp.
    WriteOverCopy,
    /// The epilogue starts with copies in flight.
    CopyInFlightAtExit,
  };
  Kind kind;
  /// The access that races.
  mlir::Operation *op = nullptr;
  /// The copy or read it races with (null for CopyInFlightAtExit and for a
  /// read of a slot that no copy wrote).
  mlir::Operation *other = nullptr;
  /// The buffer `op` accesses, and the slot.
  mlir::Value buffer;
  int64_t slot = 0;
  /// Whether some trace had the group still in flight (not just unseen).
  bool inFlight = false;
  /// Whether, on every trace, `other` ran before `op`'s KV loop began.
  bool otherBeforeLoop = true;

  /// One sentence naming both ops and the buffer, for diagnostics.
  std::string describe() const;
};

/// The checker of one allocated tile program.
class SyncChecker {
public:
  /// Fails, with an error at the op, when the program is outside what the
  /// checker models: an unallocated buffer, a nested KV loop, an op it does
  /// not know that takes a shared buffer, or a tile index it cannot
  /// evaluate.
  static mlir::FailureOr<std::unique_ptr<SyncChecker>> create(KernelOp kernel);
  ~SyncChecker();

  /// Whether the checker models `op` as an access to shared memory (a copy,
  /// a fragment load, an mma reading a slot, the epilogue's staging).
  static bool accessesSharedMemory(mlir::Operation *op);

  /// What one run over every trace found.
  struct Result {
    /// One hazard per (op, kind, other), merged over the traces.
    llvm::SmallVector<SyncHazard> hazards;
    /// With a probe: the largest `pending` the probe wait may have so that
    /// every group the hazards of `only` need has landed when it returns
    /// (INT64_MAX when they need none).
    int64_t probePending = INT64_MAX;
  };
  /// Runs every trace. `disabled` sync ops are skipped; with `only`, only
  /// its hazards are kept; `probe` is the wait to measure for them.
  Result run(const llvm::DenseSet<mlir::Operation *> &disabled = {},
             mlir::Operation *only = nullptr, mlir::Operation *probe = nullptr);

private:
  struct Impl;
  explicit SyncChecker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// The proof that the lowering asks for: an error at the first race of the
/// program (or at what the checker cannot model), success when there is
/// none.
mlir::LogicalResult verifySynchronization(KernelOp kernel);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_ANALYSIS_SYNCHRONIZATION_H
