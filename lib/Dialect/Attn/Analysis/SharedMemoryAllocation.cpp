//===- SharedMemoryAllocation.cpp - Liveness and offsets of smem ----------===//

#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

SmallVector<BufferPlacement>
attn::computeSharedMemoryLiveness(KernelOp kernel) {
  Block &body = kernel.getBodyBlock();
  DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(body))
    index[&op] = i;

  SmallVector<BufferPlacement> buffers;
  for (auto alloc : body.getOps<SmemAllocOp>()) {
    BufferPlacement placement;
    placement.alloc = alloc;
    placement.bytes = alloc.getSizeInBytes();
    placement.live = {std::numeric_limits<int64_t>::max(), -1};
    for (Operation *user : alloc->getUsers()) {
      int64_t at = index.lookup(body.findAncestorOpInBlock(*user));
      placement.live.begin = std::min(placement.live.begin, at);
      placement.live.end = std::max(placement.live.end, at);
    }
    if (placement.live.end < 0) {
      // Never used: no bytes, and no range to collide with.
      placement.live = {0, -1};
      placement.bytes = 0;
    }
    buffers.push_back(placement);
  }
  return buffers;
}

SharedMemoryPlan::SharedMemoryPlan(KernelOp kernel)
    : buffers(computeSharedMemoryLiveness(kernel)) {
  SmallVector<unsigned> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    return buffers[a].bytes > buffers[b].bytes;
  });

  SmallVector<unsigned> placed;
  for (unsigned i : order) {
    BufferPlacement &buffer = buffers[i];
    if (buffer.bytes == 0)
      continue;
    // The placed buffers this one must not touch, by offset.
    SmallVector<unsigned> conflicts;
    for (unsigned j : placed)
      if (buffers[j].live.overlaps(buffer.live))
        conflicts.push_back(j);
    llvm::sort(conflicts, [&](unsigned a, unsigned b) {
      return buffers[a].offset < buffers[b].offset;
    });
    // Lowest gap that fits.
    int64_t offset = 0;
    for (unsigned j : conflicts) {
      if (offset + buffer.bytes <= buffers[j].offset)
        break;
      offset = std::max(
          offset, static_cast<int64_t>(llvm::alignTo(buffers[j].endOffset(),
                                                     kSmemAlignment)));
    }
    buffer.offset = offset;
    totalBytes = std::max(totalBytes, buffer.endOffset());
    placed.push_back(i);
  }
}

SmallVector<StringRef>
attn::getBuffersSharingBytes(ArrayRef<BufferPlacement> buffers,
                             const BufferPlacement &buffer) {
  SmallVector<StringRef> names;
  for (const BufferPlacement &other : buffers)
    if (other.alloc != buffer.alloc && other.bytes && buffer.bytes &&
        other.sharesBytesWith(buffer))
      names.push_back(other.alloc.getName());
  return names;
}

FailureOr<SmallVector<BufferPlacement>>
attn::readAllocatedBuffers(KernelOp kernel) {
  SmallVector<BufferPlacement> buffers = computeSharedMemoryLiveness(kernel);
  for (BufferPlacement &buffer : buffers) {
    std::optional<int64_t> offset = buffer.alloc.getOffset();
    if (!offset)
      return buffer.alloc.emitOpError()
             << "has no offset; run attn-allocate-shared-memory first";
    buffer.offset = *offset;
  }
  return buffers;
}
