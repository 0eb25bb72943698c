//===- InsertBarriers.cpp - attn-insert-barriers --------------------------===//
//
// Shared bytes that change owner need a barrier between the old owner's last
// access and the new owner's first one, or a fast warp overwrites data a slow
// warp still reads (a write-after-read hazard). The allocator decides which
// buffers share bytes; this pass makes the IR safe for that decision.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace flashtile::attn {
#define GEN_PASS_DEF_ATTNINSERTBARRIERS
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashtile::attn

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

/// True when `op` is, or contains, a use of `buffer`.
static bool touches(Operation *op, Value buffer) {
  bool found = false;
  op->walk([&](Operation *nested) {
    if (llvm::is_contained(nested->getOperands(), buffer)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// The first op, in program order, that uses `buffer`: descend from the
/// first top-level op that touches it into its regions.
static Operation *findFirstAccess(Block &body, Value buffer) {
  Operation *first = nullptr;
  for (Operation &op : body)
    if (touches(&op, buffer)) {
      first = &op;
      break;
    }
  while (first && !llvm::is_contained(first->getOperands(), buffer)) {
    Operation *inner = nullptr;
    for (Region &region : first->getRegions())
      for (Operation &op : region.getOps())
        if (!inner && touches(&op, buffer))
          inner = &op;
    first = inner;
  }
  return first;
}

/// Walks back from `use` through its enclosing blocks up to the kernel body.
/// True when an `attn.barrier` that always executes before `use` is met
/// before any access to `previous`.
static bool isSeparatedByBarrier(Operation *use, Value previous,
                                 KernelOp kernel) {
  for (Operation *cur = use; cur != kernel; cur = cur->getParentOp()) {
    for (Operation *op = cur->getPrevNode(); op; op = op->getPrevNode()) {
      if (isa<BarrierOp>(op))
        return true;
      if (touches(op, previous))
        return false;
    }
  }
  return false;
}

namespace {
struct AttnInsertBarriersPass
    : public attn::impl::AttnInsertBarriersBase<AttnInsertBarriersPass> {
  void runOnOperation() override {
    KernelOp kernel = getOperation();
    FailureOr<SmallVector<BufferPlacement>> buffers =
        readAllocatedBuffers(kernel);
    if (failed(buffers))
      return signalPassFailure();

    Block &body = kernel.getBodyBlock();
    for (const BufferPlacement &later : *buffers) {
      if (!later.bytes)
        continue;
      Value laterValue = later.alloc.getBuffer();
      Operation *first = findFirstAccess(body, laterValue);
      if (!first)
        continue;

      for (const BufferPlacement &earlier : *buffers) {
        if (!earlier.bytes || earlier.alloc == later.alloc ||
            !earlier.sharesBytesWith(later) ||
            earlier.live.end >= later.live.begin)
          continue;
        Value earlierValue = earlier.alloc.getBuffer();
        if (isSeparatedByBarrier(first, earlierValue, kernel))
          continue;
        // Never inside a loop: the top-level ancestor of the first access
        // comes after the earlier buffer's last one (their lives are
        // disjoint), so a barrier just before it serves every path.
        OpBuilder b(body.findAncestorOpInBlock(*first));
        BarrierOp::create(b, first->getLoc());
      }
    }
  }
};
} // namespace
