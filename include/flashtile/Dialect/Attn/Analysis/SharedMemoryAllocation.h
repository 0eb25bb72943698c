//===- SharedMemoryAllocation.h - Liveness and offsets of smem ---*- C++ -*-===//
//
// The shared-memory allocator of the tile program. Liveness comes from the
// program itself: a buffer lives from the first to the last top-level op of
// the kernel that touches it, so a use inside the KV loop keeps the buffer
// alive for the whole loop. Two buffers whose lifetimes do not overlap may
// share bytes; that is how V (and the O staging tile) reuse Q's bytes once Q
// has moved to registers before the loop.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_ANALYSIS_SHAREDMEMORYALLOCATION_H
#define FLASHTILE_DIALECT_ATTN_ANALYSIS_SHAREDMEMORYALLOCATION_H

#include "flashtile/ABI/TargetLimits.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "llvm/ADT/SmallVector.h"

namespace flashtile::attn {

/// The live range of one buffer, as indices of top-level ops of the kernel
/// body (inclusive).
struct LiveRange {
  int64_t begin = 0;
  int64_t end = -1;
  bool overlaps(const LiveRange &other) const {
    return begin <= other.end && other.begin <= end;
  }
};

/// One buffer of a plan.
struct BufferPlacement {
  /// An op handle: mutable so that a const plan can still annotate its op.
  mutable SmemAllocOp alloc;
  LiveRange live;
  int64_t offset = 0;
  int64_t bytes = 0;
  int64_t endOffset() const { return offset + bytes; }
  bool sharesBytesWith(const BufferPlacement &other) const {
    return offset < other.endOffset() && other.offset < endOffset();
  }
};

/// Liveness of every `attn.smem_alloc` of a tile-level kernel, in program
/// order. A buffer with no use has an empty range and takes no bytes.
llvm::SmallVector<BufferPlacement> computeSharedMemoryLiveness(KernelOp kernel);

/// The allocator: offsets for every buffer of `kernel` from liveness.
///
/// The algorithm is "greedy by size" offset assignment (Pisarchyk and Lee,
/// "Efficient Memory Management for Deep Neural Net Inference", 2020): take
/// the buffers from largest to smallest (program order breaks ties) and put
/// each at the lowest aligned offset where it overlaps no already-placed
/// buffer whose live range overlaps its own. With a handful of buffers this
/// finds the optimum for the tile programs FlashTile emits (Q->V reuse turns
/// Q + K + V into max(Q, V) + K) and is deterministic.
class SharedMemoryPlan {
public:
  explicit SharedMemoryPlan(KernelOp kernel);

  /// The buffers in program order, with their offsets.
  llvm::ArrayRef<BufferPlacement> getBuffers() const { return buffers; }
  /// Bytes of dynamic shared memory the block needs.
  int64_t getTotalBytes() const { return totalBytes; }

private:
  llvm::SmallVector<BufferPlacement> buffers;
  int64_t totalBytes = 0;
};

/// The names of the other buffers of `buffers` that share bytes with
/// `buffer` (both non-empty), in program order.
llvm::SmallVector<llvm::StringRef>
getBuffersSharingBytes(llvm::ArrayRef<BufferPlacement> buffers,
                       const BufferPlacement &buffer);

/// Reads the offsets that `attn-allocate-shared-memory` wrote back into a
/// plan-shaped list (liveness recomputed, offsets from the attributes).
/// Fails when a buffer has no offset.
mlir::FailureOr<llvm::SmallVector<BufferPlacement>>
readAllocatedBuffers(KernelOp kernel);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_ANALYSIS_SHAREDMEMORYALLOCATION_H
