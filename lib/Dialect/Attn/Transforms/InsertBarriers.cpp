//===- InsertBarriers.cpp - attn-insert-barriers --------------------------===//
//
// Every attn.async_wait and attn.barrier of a tile program comes from here:
// the expansion and the users write none. The pass walks the program's
// shared-memory accesses in order and asks the race checker
// (Analysis/Synchronization.h) what each one races with, given the syncs
// placed so far:
//   - a read whose copy has not landed or is not visible gets a wait and a
//     barrier. When a barrier already sits just above the copies issued
//     before the read, the wait joins it (FlashAttention-2's schedule: wait
//     for K[j], one barrier, issue V's next copy, read K[j]); otherwise they
//     go right before the read, so the copies above it stay in flight;
//   - a write over bytes another warp may read, or an earlier copy may fill,
//     gets a barrier (and a wait), before the KV loop when every such access
//     came before the loop, else right before the write;
//   - the epilogue gets a wait for the copies still in flight.
// A wait's `pending` is the largest the traces allow. A read that no sync
// can fix (its slot holds another tile) is an error. Last, every wait and
// barrier is proven needed: without it some trace races. One that no trace
// needs (a user's, a leftover) is removed.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Analysis/Synchronization.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace flashtile::attn {
#define GEN_PASS_DEF_ATTNINSERTBARRIERS
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashtile::attn

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

using Kind = SyncHazard::Kind;

/// A wait inserted before its pending count is measured: it retires
/// nothing.
static constexpr int64_t kUnmeasured = std::numeric_limits<int32_t>::max();

/// The accesses of the kernel body and its KV loops, in program order.
static SmallVector<Operation *> collectAccesses(KernelOp kernel) {
  SmallVector<Operation *> accesses;
  for (Operation &op : kernel.getBodyBlock()) {
    if (auto loop = dyn_cast<KVLoopOp>(op)) {
      for (Operation &inner : loop.getBody().front())
        if (SyncChecker::accessesSharedMemory(&inner))
          accesses.push_back(&inner);
    } else if (SyncChecker::accessesSharedMemory(&op)) {
      accesses.push_back(&op);
    }
  }
  return accesses;
}

/// The syncs of the kernel body and its KV loops, in program order.
static SmallVector<Operation *> collectSyncs(KernelOp kernel) {
  SmallVector<Operation *> syncs;
  kernel.getBodyBlock().walk([&](Operation *op) {
    if (isa<AsyncWaitOp, BarrierOp>(op))
      syncs.push_back(op);
  });
  return syncs;
}

/// `op`, moved above the index arithmetic that computes its operands right
/// before it: a sync goes before a copy's tile computation.
static Operation *aboveOperandArith(Operation *op) {
  Operation *at = op;
  while (Operation *prev = at->getPrevNode()) {
    if (!isa<arith::ArithDialect>(prev->getDialect()))
      break;
    at = prev;
  }
  return at;
}

static void noteOther(InFlightDiagnostic &diag, const SyncHazard &hazard) {
  if (hazard.other)
    diag.attachNote(hazard.other->getLoc()) << "the conflicting access";
}

namespace {
struct AttnInsertBarriersPass
    : public attn::impl::AttnInsertBarriersBase<AttnInsertBarriersPass> {
  using AttnInsertBarriersBase::AttnInsertBarriersBase;

  SyncChecker *checker = nullptr;

  /// Makes sure a barrier (when `barrier`) and a wait (when `wait`, before
  /// the barrier) sit right before `at`, reusing the ones already there, and
  /// measures the wait's pending count for the hazards of `access`.
  LogicalResult ensureSync(Operation *at, Operation *access, bool barrier,
                           bool wait) {
    OpBuilder b(at);
    Location loc = access->getLoc();
    Operation *anchor = at;
    if (barrier) {
      if (auto existing = dyn_cast_or_null<BarrierOp>(at->getPrevNode()))
        anchor = existing;
      else
        anchor = BarrierOp::create(b, loc);
    }
    if (!wait)
      return success();
    auto probe = dyn_cast_or_null<AsyncWaitOp>(anchor->getPrevNode());
    bool created = !probe;
    if (created) {
      b.setInsertionPoint(anchor);
      probe = AsyncWaitOp::create(b, loc, kUnmeasured);
    }
    int64_t pending = checker->run({}, access, probe).probePending;
    if (pending == std::numeric_limits<int64_t>::max()) {
      if (created)
        probe.erase();
      return success();
    }
    if (pending < 0)
      return access->emitOpError()
             << "reads a copy issued after the point where its wait would go";
    probe.setPending(std::min<int64_t>(probe.getPending(), pending));
    return success();
  }

  /// Inserts the syncs that the hazards of `access` call for.
  LogicalResult repair(Operation *access, ArrayRef<SyncHazard> hazards) {
    for (const SyncHazard &hazard : hazards)
      if (hazard.kind == Kind::StaleRead) {
        InFlightDiagnostic diag = access->emitOpError()
                                  << "cannot be synchronized: "
                                  << hazard.describe();
        noteOther(diag, hazard);
        return diag;
      }
    bool reads = llvm::any_of(hazards, [](const SyncHazard &h) {
      return h.kind == Kind::ReadBeforeVisible;
    });
    if (reads) {
      // Join a barrier just above the copies issued before the read that it
      // does not need.
      llvm::SmallPtrSet<Operation *, 4> needed;
      bool wait = false;
      for (const SyncHazard &hazard : hazards) {
        needed.insert(hazard.other);
        wait |= hazard.inFlight;
      }
      Operation *at = aboveOperandArith(access);
      Operation *prev = at->getPrevNode();
      while (prev && ((isAsyncCopy(prev) && !needed.contains(prev)) ||
                      isa<arith::ArithDialect>(prev->getDialect())))
        prev = prev->getPrevNode();
      if (prev && isa<BarrierOp>(prev))
        at = prev->getNextNode();
      return ensureSync(at, access, /*barrier=*/true, wait);
    }

    bool barrier = false, wait = false, beforeLoop = true;
    for (const SyncHazard &hazard : hazards) {
      barrier |= hazard.kind != Kind::CopyInFlightAtExit;
      wait |= hazard.inFlight;
      beforeLoop &= hazard.otherBeforeLoop;
    }
    Operation *at = aboveOperandArith(access);
    if (beforeLoop && isa<KVLoopOp>(access->getParentOp()))
      at = aboveOperandArith(access->getParentOp());
    return ensureSync(at, access, barrier, wait);
  }

  void runOnOperation() override {
    KernelOp kernel = getOperation();
    FailureOr<std::unique_ptr<SyncChecker>> created =
        SyncChecker::create(kernel);
    if (failed(created))
      return signalPassFailure();
    checker = created->get();

    for (Operation *access : collectAccesses(kernel)) {
      SyncChecker::Result found = checker->run({}, access);
      if (found.hazards.empty())
        continue;
      if (failed(repair(access, found.hazards)))
        return signalPassFailure();
      SyncChecker::Result left = checker->run({}, access);
      if (!left.hazards.empty()) {
        InFlightDiagnostic diag = access->emitOpError()
                                  << "cannot be synchronized: "
                                  << left.hazards.front().describe();
        noteOther(diag, left.hazards.front());
        return signalPassFailure();
      }
    }

    // Every sync left is needed: without it, some trace races.
    for (Operation *sync : collectSyncs(kernel)) {
      llvm::DenseSet<Operation *> without = {sync};
      SyncChecker::Result result = checker->run(without);
      if (result.hazards.empty()) {
        if (remarks)
          sync->emitRemark() << "removed: no trace needs it";
        sync->erase();
        continue;
      }
      if (remarks)
        sync->emitRemark() << "needed: without it, "
                           << result.hazards.front().describe();
    }
  }
};
} // namespace
