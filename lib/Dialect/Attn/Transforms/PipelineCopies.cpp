//===- PipelineCopies.cpp - attn-pipeline-copies --------------------------===//
//
// A tile program copies a KV tile where it uses it: `copy K[j]` at the top
// of step j, `copy V[j]` before P V[j]. That is correct and slow: every
// step waits for its own copies. This pass software-pipelines such copies,
// so that each lands while the block computes on the tiles before it.
//
// A buffer X with S slots, copied at the loop index in every KV loop of a
// chain (loops whose bounds meet, run one after the other: their steps are
// one descending sequence of tiles), is issued d steps ahead:
//   - d = S when some shared-memory read follows X's last read in the step:
//     the slot X[j - S] fills is X[j]'s own, so its copy goes after that
//     last read, right before the next shared-memory read, so that the
//     barrier that read needs also orders the copy (K: after S = Q K^T,
//     overlapping P V);
//   - d = S - 1 otherwise, at the top of the step: the slot X[j - S + 1]
//     fills was read in the step before (V: overlapping Q K^T and the
//     softmax).
// The first loop's tiles end-1 ... end-d are copied before the chain, in the
// order the first steps read them. The first such copy goes right after
// the copies already issued before the chain, so it overlaps their wait;
// the others go after the last shared-memory access before the chain, so
// that no buffer's life grows over another's last read (the allocator reuses
// those bytes: V in Q's). The last steps copy tiles before the range, which
// copy_async zero-fills or reads harmlessly.
//
// With S = 1 and 2 this is FlashAttention-2's schedule, and the built-in
// expansion relies on it. A copy that names its step by the loop index
// (`slot %j`) while its tile and head are computed from it (the backward's
// walk over a GQA group's heads) is pipelined the same way: the pure ops
// that compute them are re-emitted for step j - d. A copy the pass does
// not recognise (another index, a second copy of the buffer, a read
// before the copy) is left where the program put it. The pass only moves
// copies; the waits and barriers, and the proof that the result is
// race-free, come from attn-insert-barriers.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Transforms/PipelineCopies.h"
#include "flashtile/Dialect/Attn/Analysis/Synchronization.h"
#include "flashtile/Dialect/Attn/IR/TileBuilder.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace flashtile::attn {
#define GEN_PASS_DEF_ATTNPIPELINECOPIES
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashtile::attn

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {

bool reads(Operation *op, Value buffer) {
  return llvm::any_of(getSharedAccesses(op), [&](const SharedAccess &a) {
    return !a.write && (!buffer || a.buffer == buffer);
  });
}
bool accesses(Operation *op, Value buffer) {
  return llvm::any_of(getSharedAccesses(op), [&](const SharedAccess &a) {
    return a.buffer == buffer;
  });
}

/// The ops of `loop`'s body that `roots` are computed by, in body order
/// (empty when every root is defined outside the body), or failure when
/// one of them has memory effects or reads shared memory, or they read a
/// loop-carried value (re-emitting them at another step is then not safe:
/// only the loop index names the step).
FailureOr<SmallVector<Operation *>> computedInBody(KVLoopOp loop,
                                                  ArrayRef<Value> roots) {
  Block &body = loop.getBody().front();
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &body && arg.getArgNumber() != 0)
        return failure();
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body || slice.contains(def))
      continue;
    if (!isMemoryEffectFree(def) || def->getNumRegions() != 0 ||
        !getSharedAccesses(def).empty())
      return failure();
    slice.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ordered = slice.takeVector();
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

/// Whether `value` of loop `a`'s body and `other` of loop `b`'s are the
/// same function of each loop's index: the index itself, one value from
/// outside both, or ops of the same kind, attributes and such operands.
/// The pipeline issues a chain's copies ahead across its loops with the
/// first loop's computation, so every loop must compute the same one.
bool sameFunctionOfIndex(Value value, KVLoopOp a, Value other, KVLoopOp b) {
  Block &bodyA = a.getBody().front(), &bodyB = b.getBody().front();
  if (value == bodyA.getArgument(0) || other == bodyB.getArgument(0))
    return value == bodyA.getArgument(0) && other == bodyB.getArgument(0);
  Operation *x = value.getDefiningOp(), *y = other.getDefiningOp();
  bool xInside = x && x->getBlock() == &bodyA;
  bool yInside = y && y->getBlock() == &bodyB;
  if (!xInside || !yInside)
    return !xInside && !yInside && value == other;
  if (x->getName() != y->getName() || x->getAttrs() != y->getAttrs() ||
      x->getNumOperands() != y->getNumOperands() ||
      cast<OpResult>(value).getResultNumber() !=
          cast<OpResult>(other).getResultNumber())
    return false;
  for (auto [p, q] : llvm::zip(x->getOperands(), y->getOperands()))
    if (!sameFunctionOfIndex(p, a, q, b))
      return false;
  return true;
}

/// Whether two copies read the same tensor rows the same way (all but the
/// tile index; copies with a slot compute their tile and head from their
/// loops' indices, the same way).
bool sameSource(CopyAsyncOp a, KVLoopOp aLoop, CopyAsyncOp b, KVLoopOp bLoop) {
  bool perStep = a.getSlot() && b.getSlot();
  if (bool(a.getSlot()) != bool(b.getSlot()))
    return false;
  if (perStep && (!sameFunctionOfIndex(a.getTile(), aLoop, b.getTile(), bLoop) ||
                  !sameFunctionOfIndex(a.getHead(), aLoop, b.getHead(), bLoop)))
    return false;
  return a.getSrc() == b.getSrc() && a.getBatch() == b.getBatch() &&
         (perStep || a.getHead() == b.getHead()) && a.getDst() == b.getDst() &&
         a.getPages() == b.getPages() && a.getLimit() == b.getLimit() &&
         a.getPacked() == b.getPacked();
}

/// The copy of one buffer in one loop of a chain, and where its pipelined
/// copy goes.
struct Step {
  KVLoopOp loop;
  CopyAsyncOp copy;
  /// The body's ops that compute the copy's tile and head (a copy with a
  /// slot; empty otherwise).
  SmallVector<Operation *> computation;
  /// The op the pipelined copy goes before, when d = S.
  Operation *afterLastRead = nullptr;
  /// Whether a shared-memory read follows the buffer's last read.
  bool readFollows = false;
  /// Position of the buffer's first read in the body (for the prologue's
  /// order).
  unsigned firstRead = 0;
};

/// The loop's copy of `buffer` in the user's form (at the loop index,
/// before every read of the buffer, the only write to it), or failure.
FailureOr<Step> findStep(KVLoopOp loop, CopyAsyncOp like, KVLoopOp likeLoop) {
  Block &body = loop.getBody().front();
  Value j = body.getArgument(0), buffer = like.getDst();
  Step step{loop, nullptr};
  Operation *lastRead = nullptr;
  unsigned position = 0;
  for (Operation &op : body) {
    ++position;
    // The bodies of maps and hooks compute on registers only.
    bool nestedAccess = false;
    for (Region &region : op.getRegions())
      region.walk([&](Operation *inner) {
        nestedAccess |= !getSharedAccesses(inner).empty();
      });
    if (nestedAccess)
      return failure();
    if (!accesses(&op, buffer))
      continue;
    if (auto copy = dyn_cast<CopyAsyncOp>(op)) {
      // A copy without a slot reads at the index, everything else from
      // outside the loop; one with a slot computes its tile and head from
      // the index alone.
      FailureOr<SmallVector<Operation *>> computation =
          computedInBody(loop, {copy.getTile(), copy.getHead()});
      if (step.copy || lastRead || copy.getSlotIndex() != j ||
          !sameSource(copy, loop, like, likeLoop) || failed(computation) ||
          (!copy.getSlot() && !computation->empty()))
        return failure();
      step.copy = copy;
      step.computation = std::move(*computation);
      continue;
    }
    if (!step.copy || !reads(&op, buffer) ||
        llvm::any_of(getSharedAccesses(&op), [&](const SharedAccess &a) {
          return a.buffer == buffer && a.write;
        }))
      return failure();
    if (!lastRead)
      step.firstRead = position;
    lastRead = &op;
  }
  if (!step.copy || !lastRead)
    return failure();
  step.afterLastRead = body.getTerminator();
  for (Operation *op = lastRead->getNextNode(); op; op = op->getNextNode())
    if (reads(op, Value())) {
      step.afterLastRead = op;
      step.readFollows = true;
      break;
    }
  return step;
}

/// What a pipelined copy reads and writes, all but the tile.
struct CopySource {
  Location loc;
  Value src, batch, tile, head, dst, pages, limit;
  bool packed, perStep;
  /// With a slot: the loop index, and the body's ops that compute the tile
  /// and the head from it.
  Value index;
  SmallVector<Operation *> computation;
  explicit CopySource(const Step &step)
      : CopySource(step.copy, step.loop, step.computation) {}
  CopySource(CopyAsyncOp copy, KVLoopOp loop,
             ArrayRef<Operation *> computation)
      : loc(copy.getLoc()), src(copy.getSrc()), batch(copy.getBatch()),
        tile(copy.getTile()), head(copy.getHead()), dst(copy.getDst()),
        pages(copy.getPages()), limit(copy.getLimit()),
        packed(copy.getPacked()), perStep(bool(copy.getSlot())),
        index(loop.getBody().front().getArgument(0)),
        computation(computation) {}

  /// The values from outside the loop the copy of a step needs.
  SmallVector<Value> outsideOperands() const {
    SmallVector<Value> operands = {src, batch, dst, pages, limit};
    // A tile or head the loop does not compute is an operand as it is.
    for (Value v : {tile, head})
      if (v != index && !llvm::is_contained(computation, v.getDefiningOp()))
        operands.push_back(v);
    for (Operation *op : computation)
      for (Value v : op->getOperands())
        if (v != index && !llvm::is_contained(computation, v.getDefiningOp()))
          operands.push_back(v);
    return operands;
  }

  /// The copy of step `step - back`.
  void build(OpBuilder &b, KernelOp kernel, Value step, int64_t back) const {
    TileBuilder t(b, loc, kernel);
    Value earlier = t.minus(step, back);
    if (!perStep) {
      t.copy(src, batch, earlier, head, dst, pages, limit, packed);
      return;
    }
    IRMapping mapping;
    mapping.map(index, earlier);
    for (Operation *op : computation)
      b.clone(*op, mapping);
    t.copy(src, batch, mapping.lookupOrDefault(tile),
           mapping.lookupOrDefault(head), dst, pages, limit, packed, earlier);
  }
};

/// One prologue copy: tile `end - back` of `source`.
struct PrologueCopy {
  int64_t back;
  unsigned firstRead;
  CopySource source;
};

class CopyPipeliner {
public:
  explicit CopyPipeliner(bool remarks) : remarks(remarks) {}

  void run(KernelOp kernel) {
    SmallVector<SmallVector<KVLoopOp>> chains;
    for (Operation &op : kernel.getBodyBlock()) {
      auto loop = dyn_cast<KVLoopOp>(op);
      if (!loop)
        continue;
      if (!chains.empty() && chains.back().back().getLower() == loop.getUpper())
        chains.back().push_back(loop);
      else
        chains.push_back({loop});
    }
    for (ArrayRef<KVLoopOp> chain : chains)
      pipeline(kernel, chain);
  }

private:
  void pipeline(KernelOp kernel, ArrayRef<KVLoopOp> chain) {
    KVLoopOp first = chain.front();
    Value j0 = first.getBody().front().getArgument(0);
    SmallVector<CopyAsyncOp> candidates;
    for (auto copy : first.getBody().front().getOps<CopyAsyncOp>())
      if (copy.getSlotIndex() == j0)
        candidates.push_back(copy);

    SmallVector<PrologueCopy> prologue;
    for (CopyAsyncOp like : candidates) {
      SmallVector<Step> steps;
      for (KVLoopOp loop : chain) {
        FailureOr<Step> step = findStep(loop, like, first);
        if (failed(step))
          break;
        steps.push_back(*step);
      }
      if (steps.size() != chain.size())
        continue;
      int64_t slots = cast<MemRefType>(like.getDst().getType()).getDimSize(0);
      bool ahead =
          llvm::any_of(steps, [](const Step &s) { return s.readFollows; });
      int64_t distance = ahead ? slots : slots - 1;
      if (remarks)
        like.emitRemark() << "copy of " << bufferName(like) << " issued "
                          << distance << (distance == 1 ? " step" : " steps")
                          << " ahead, "
                          << (ahead ? "after its last read"
                                    : "at the top of the step");
      if (distance > 0)
        prologue.push_back(
            {distance, steps.front().firstRead, CopySource(steps.front())});
      for (Step &step : steps)
        moveCopy(kernel, step, distance, ahead);
    }
    buildPrologue(kernel, first, prologue);
  }

  static StringRef bufferName(CopyAsyncOp copy) {
    if (auto alloc = copy.getDst().getDefiningOp<SmemAllocOp>())
      if (StringAttr name = alloc.getNameAttr())
        return name.getValue();
    return "a buffer";
  }

  /// Replaces the step's copy of tile j by one of tile j - distance at its
  /// place in the schedule.
  void moveCopy(KernelOp kernel, Step &step, int64_t distance, bool ahead) {
    Block &body = step.loop.getBody().front();
    OpBuilder b(kernel.getContext());
    if (ahead)
      b.setInsertionPoint(step.afterLastRead);
    else
      b.setInsertionPointToStart(&body);
    CopySource(step).build(b, kernel, body.getArgument(0), distance);
    step.copy.erase();
    step.copy = nullptr;
  }

  /// The copies of the chain's first tiles, before the chain.
  void buildPrologue(KernelOp kernel, KVLoopOp first,
                     MutableArrayRef<PrologueCopy> prologue) {
    if (prologue.empty())
      return;
    SmallVector<PrologueCopy> order;
    int64_t deepest = 0;
    for (const PrologueCopy &p : prologue)
      deepest = std::max(deepest, p.back);
    // The first steps' tiles in the order those steps read them.
    for (int64_t back = 1; back <= deepest; ++back) {
      SmallVector<PrologueCopy> tile;
      for (const PrologueCopy &p : prologue)
        if (p.back >= back)
          tile.push_back({back, p.firstRead, p.source});
      llvm::stable_sort(tile, [](const PrologueCopy &a, const PrologueCopy &b) {
        return a.firstRead < b.firstRead;
      });
      order.append(tile);
    }

    // Where the chain's prologue may start: after the last loop before it.
    Operation *lastCopy = nullptr, *lastAccess = nullptr;
    for (Operation *op = first->getPrevNode(); op; op = op->getPrevNode()) {
      if (isa<KVLoopOp>(op))
        break;
      if (!lastAccess && !getSharedAccesses(op).empty())
        lastAccess = op;
      if (!lastCopy && isa<CopyAsyncOp>(op))
        lastCopy = op;
    }
    OpBuilder b(kernel.getContext());
    Operation *after = nullptr;
    for (auto [index, p] : llvm::enumerate(order)) {
      Operation *at = index == 0 ? lastCopy : lastAccess;
      // Never above the previous prologue copy or an operand's definition.
      if (after && (!at || at->isBeforeInBlock(after)))
        at = after;
      at = belowOperands(first, p.source, at);
      if (at)
        b.setInsertionPointAfter(at);
      else
        b.setInsertionPoint(first);
      p.source.build(b, kernel, first.getUpper(), p.back);
      after = &*std::prev(b.getInsertionPoint());
    }
  }

private:
  bool remarks;

  /// `at`, or the latest definition in the kernel's block of an operand the
  /// prologue copy of `source` needs, whichever comes later (null: the top).
  static Operation *belowOperands(KVLoopOp first, const CopySource &source,
                                  Operation *at) {
    SmallVector<Value> operands = source.outsideOperands();
    operands.push_back(first.getUpper());
    Block *block = first->getBlock();
    for (Value v : operands) {
      Operation *def = v ? v.getDefiningOp() : nullptr;
      if (!def)
        continue;
      def = block->findAncestorOpInBlock(*def);
      if (def && (!at || at->isBeforeInBlock(def)))
        at = def;
    }
    return at;
  }
};

struct AttnPipelineCopiesPass
    : public attn::impl::AttnPipelineCopiesBase<AttnPipelineCopiesPass> {
  using Base::Base;
  void runOnOperation() override { pipelineCopies(getOperation(), remarks); }
};

} // namespace

void attn::pipelineCopies(KernelOp kernel, bool remarks) {
  CopyPipeliner(remarks).run(kernel);
}
