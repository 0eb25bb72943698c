//===- Synchronization.cpp - The race proof of a tile program -------------===//

#include "flashtile/Dialect/Attn/Analysis/Synchronization.h"
#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>
#include <numeric>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

namespace {

/// A byte range [lo, hi) of the block's shared memory.
struct Bytes {
  int64_t lo = 0, hi = 0;
  bool overlaps(const Bytes &o) const { return lo < o.hi && o.lo < hi; }
  bool covers(const Bytes &o) const { return lo <= o.lo && o.hi <= hi; }
};

struct BufferInfo {
  int64_t offset = 0, bytes = 0, slots = 1;
  StringRef name;
  int64_t slotBytes() const { return bytes / slots; }
};

int64_t floorMod(int64_t a, int64_t b) { return ((a % b) + b) % b; }

/// A tile index no trace gives a loop bound: values the traces do not pin
/// (the query tile, the batch) take it.
constexpr int64_t kFreeValue = 1000;
/// The first loop's upper bound, plus a residue, in every trace.
constexpr int64_t kTraceBase = 4000;

} // namespace

bool attn::isAsyncCopy(Operation *op) {
  return isa<CopyAsyncOp, CopyTileOp>(op);
}

SmallVector<SharedAccess> attn::getSharedAccesses(Operation *op) {
  SmallVector<SharedAccess> accesses;
  if (auto copy = dyn_cast<CopyAsyncOp>(op)) {
    accesses.push_back({copy.getDst(), copy.getSlotIndex(), /*write=*/true});
  } else if (auto copy = dyn_cast<CopyTileOp>(op)) {
    accesses.push_back({copy.getDst(), copy.getTile(), /*write=*/true});
  } else if (auto load = dyn_cast<LoadFragOp>(op)) {
    accesses.push_back({load.getSrc(), Value(), false});
  } else if (auto mma = dyn_cast<MmaOp>(op)) {
    // A one-slot A buffer without a slot index is read at slot 0.
    if (isa<MemRefType>(mma.getA().getType()))
      accesses.push_back({mma.getA(), mma.getATile(), false,
                          /*namesTile=*/bool(mma.getATile())});
    accesses.push_back({mma.getB(), mma.getBTile(), false, /*namesTile=*/true});
  } else if (auto store = dyn_cast<StoreFragOp>(op)) {
    accesses.push_back({store.getDst(), Value(), /*write=*/true,
                        /*namesTile=*/false, /*whole=*/true});
  } else if (auto store = dyn_cast<StoreOp>(op)) {
    accesses.push_back({store.getStage(), Value(), /*write=*/true,
                        /*namesTile=*/false, /*whole=*/true});
  } else if (auto epilogue = dyn_cast<EpilogueOp>(op)) {
    accesses.push_back({epilogue.getStage(), Value(), /*write=*/true,
                        /*namesTile=*/false, /*whole=*/true});
    if (Value merge = epilogue.getMerge())
      accesses.push_back({merge, Value(), /*write=*/true, /*namesTile=*/false,
                          /*whole=*/true});
  }
  return accesses;
}

struct SyncChecker::Impl {
  KernelOp kernel;
  llvm::DenseMap<Value, BufferInfo> buffers;
  SmallVector<KVLoopOp> loops;
  int64_t maxTrips = 0, residues = 1;
  /// Each access op's accesses, found once: every trace replays them, and
  /// the barrier pass only adds syncs, which access nothing.
  llvm::DenseMap<Operation *, SmallVector<SharedAccess>> accesses;

  //===--- One trace's state ----------------------------------------------===//
  struct Group {
    Operation *copy;
    Bytes bytes;
    int64_t time;
  };
  struct Content {
    Bytes bytes;
    int64_t group; // -1: written by the threads themselves (the epilogue)
    Value buffer;
    int64_t tile;
    Operation *op;
    int64_t time;
  };
  struct Read {
    Bytes bytes;
    Operation *op;
    int64_t time;
  };
  llvm::DenseMap<Value, int64_t> env;
  SmallVector<Group> groups;
  int64_t complete = 0, visible = 0; // groups [0, complete) have landed
  SmallVector<Content> contents;
  SmallVector<Read> reads; // since the last barrier
  int64_t time = 0, lastBarrier = -1, loopEntry = -1;
  int64_t probeIssued = -1;

  //===--- The run's inputs and findings
  //-----------------------------------===//
  const llvm::DenseSet<Operation *> *disabled = nullptr;
  Operation *only = nullptr, *probe = nullptr;
  Result *result = nullptr;
  llvm::DenseMap<std::tuple<Operation *, int, Operation *>, unsigned> seen;

  std::optional<int64_t> evalKnown(Value v);
  int64_t eval(Value v);
  bool isLeaf(Value v);
  void assignLoopBounds(ArrayRef<int64_t> trips, int64_t base);
  void runTrace(ArrayRef<int64_t> trips, int64_t base);
  void runBlock(Block &block);
  void runOp(Operation *op);
  void access(Operation *op, const SharedAccess &a);
  void report(SyncHazard::Kind kind, Operation *op, Operation *other,
              Value buffer, int64_t slot, bool inFlight, int64_t otherTime,
              int64_t group);
};

std::optional<int64_t> SyncChecker::Impl::evalKnown(Value v) {
  if (auto it = env.find(v); it != env.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto c = dyn_cast<arith::ConstantOp>(def))
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      return i.getInt();
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(def)) {
    std::optional<int64_t> l = evalKnown(def->getOperand(0));
    std::optional<int64_t> r = evalKnown(def->getOperand(1));
    if (!l || !r)
      return std::nullopt;
    if (isa<arith::AddIOp>(def))
      return *l + *r;
    if (isa<arith::SubIOp>(def))
      return *l - *r;
    return *l * *r;
  }
  return std::nullopt;
}

bool SyncChecker::Impl::isLeaf(Value v) {
  Operation *def = v.getDefiningOp();
  return !def ||
         !isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp>(
             def);
}

int64_t SyncChecker::Impl::eval(Value v) {
  if (std::optional<int64_t> known = evalKnown(v))
    return *known;
  if (isLeaf(v))
    return env[v] = kFreeValue;
  Operation *def = v.getDefiningOp();
  for (Value operand : def->getOperands())
    (void)eval(operand);
  return *evalKnown(v);
}

void SyncChecker::Impl::assignLoopBounds(ArrayRef<int64_t> trips,
                                         int64_t base) {
  for (auto [loop, trip] : llvm::zip(loops, trips)) {
    // A bound the block computes (a leaf, or an expression of leaves such
    // as a backward's group * tiles) takes the value that gives the trace
    // its trip count: it is a free value of the trace like a leaf.
    Value lo = loop.getLower(), hi = loop.getUpper();
    std::optional<int64_t> h = evalKnown(hi), l = evalKnown(lo);
    if (h && !l)
      env[lo] = *h - trip;
    else if (l && !h)
      env[hi] = *l + trip;
    else if (!h && !l) {
      env[hi] = base;
      env[lo] = base - trip;
    }
  }
}

void SyncChecker::Impl::report(SyncHazard::Kind kind, Operation *op,
                               Operation *other, Value buffer, int64_t slot,
                               bool inFlight, int64_t otherTime,
                               int64_t group) {
  if (only && op != only)
    return;
  bool inLoop = isa<KVLoopOp>(op->getParentOp());
  bool beforeLoop = !inLoop || otherTime < loopEntry;
  // The probe must retire `group` for this access.
  if (probe && inFlight && group >= 0)
    result->probePending =
        std::min(result->probePending, probeIssued - 1 - group);
  auto key = std::make_tuple(op, static_cast<int>(kind), other);
  auto [it, inserted] = seen.try_emplace(key, result->hazards.size());
  if (inserted) {
    SyncHazard hazard{kind, op, other, buffer, slot, inFlight, beforeLoop};
    result->hazards.push_back(hazard);
    return;
  }
  SyncHazard &hazard = result->hazards[it->second];
  hazard.inFlight |= inFlight;
  hazard.otherBeforeLoop &= beforeLoop;
}

void SyncChecker::Impl::access(Operation *op, const SharedAccess &a) {
  const BufferInfo &info = buffers.lookup(a.buffer);
  int64_t tile = a.tile ? eval(a.tile) : 0;
  int64_t slot = a.tile ? floorMod(tile, info.slots) : 0;
  Bytes bytes = a.whole ? Bytes{info.offset, info.offset + info.bytes}
                        : Bytes{info.offset + slot * info.slotBytes(),
                                info.offset + (slot + 1) * info.slotBytes()};
  using Kind = SyncHazard::Kind;
  if (a.write) {
    for (const Read &read : reads)
      if (read.bytes.overlaps(bytes))
        report(Kind::WriteAfterRead, op, read.op, a.buffer, slot, false,
               read.time, -1);
    for (int64_t g = visible, e = groups.size(); g < e; ++g)
      if (groups[g].bytes.overlaps(bytes))
        report(Kind::WriteOverCopy, op, groups[g].copy, a.buffer, slot,
               g >= complete, groups[g].time, g);
    bool async = isAsyncCopy(op);
    if (async)
      groups.push_back({op, bytes, time});
    // Contents this write covers are gone.
    llvm::erase_if(contents,
                   [&](const Content &c) { return bytes.covers(c.bytes); });
    contents.push_back({bytes, async ? int64_t(groups.size()) - 1 : -1,
                        a.buffer, tile, op, time});
    return;
  }

  const Content *last = nullptr;
  for (const Content &c : contents)
    if (c.bytes.overlaps(bytes))
      last = &c; // contents are in program order: the newest wins
  if (!last || last->buffer != a.buffer || !last->bytes.covers(bytes) ||
      (a.namesTile && last->tile != tile)) {
    report(Kind::StaleRead, op, last ? last->op : nullptr, a.buffer, slot,
           false, last ? last->time : -1, -1);
  } else if (last->group >= 0 ? last->group >= visible
                              : last->time > lastBarrier) {
    bool inFlight = last->group >= complete;
    report(Kind::ReadBeforeVisible, op, last->op, a.buffer, slot, inFlight,
           last->time, last->group);
  }
  reads.push_back({bytes, op, time});
}

void SyncChecker::Impl::runOp(Operation *op) {
  ++time;
  if (auto loop = dyn_cast<KVLoopOp>(op)) {
    int64_t lo = eval(loop.getLower()), hi = eval(loop.getUpper());
    loopEntry = time;
    Value j = loop.getBody().front().getArgument(0);
    for (int64_t t = hi - 1; t >= lo; --t) {
      env[j] = t;
      runBlock(loop.getBody().front());
    }
    return;
  }
  if (disabled && disabled->contains(op))
    return;
  if (auto wait = dyn_cast<AsyncWaitOp>(op)) {
    if (op == probe)
      probeIssued = groups.size();
    int64_t retired = int64_t(groups.size()) -
                      std::min<int64_t>(wait.getPending(), groups.size());
    complete = std::max(complete, retired);
    return;
  }
  if (isa<BarrierOp>(op)) {
    visible = complete;
    lastBarrier = time;
    reads.clear();
    return;
  }
  auto found = accesses.find(op);
  if (found == accesses.end())
    return;
  // The block's exits: the epilogue, or a tile program's store (their first
  // access is the staging buffer).
  if (isa<EpilogueOp, StoreOp>(op) && complete < int64_t(groups.size()))
    report(SyncHazard::Kind::CopyInFlightAtExit, op, nullptr,
           found->second.front().buffer, 0, true, -1,
           int64_t(groups.size()) - 1);
  for (const SharedAccess &a : found->second)
    access(op, a);
}

void SyncChecker::Impl::runBlock(Block &block) {
  for (Operation &op : block)
    runOp(&op);
}

void SyncChecker::Impl::runTrace(ArrayRef<int64_t> trips, int64_t base) {
  env.clear();
  groups.clear();
  contents.clear();
  reads.clear();
  complete = visible = 0;
  time = 0;
  lastBarrier = loopEntry = probeIssued = -1;
  assignLoopBounds(trips, base);
  runBlock(kernel.getBodyBlock());
}

//===----------------------------------------------------------------------===//
// SyncChecker
//===----------------------------------------------------------------------===//

SyncChecker::SyncChecker(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
SyncChecker::~SyncChecker() = default;

bool SyncChecker::accessesSharedMemory(Operation *op) {
  return !getSharedAccesses(op).empty();
}

FailureOr<std::unique_ptr<SyncChecker>> SyncChecker::create(KernelOp kernel) {
  FailureOr<SmallVector<BufferPlacement>> placements =
      readAllocatedBuffers(kernel);
  if (failed(placements))
    return failure();
  auto impl = std::make_unique<Impl>();
  impl->kernel = kernel;
  int64_t maxSlots = 1;
  for (const BufferPlacement &p : *placements) {
    MemRefType type = p.alloc.getType();
    BufferInfo info{p.offset, p.alloc.getSizeInBytes(), type.getDimSize(0),
                    p.alloc.getName()};
    impl->buffers[p.alloc.getBuffer()] = info;
    maxSlots = std::max(maxSlots, info.slots);
    impl->residues = std::lcm(impl->residues, info.slots);
  }
  impl->maxTrips = maxSlots + 2;

  Block &body = kernel.getBodyBlock();
  WalkResult walk = body.walk([&](Operation *op) {
    if (auto loop = dyn_cast<KVLoopOp>(op)) {
      if (op->getBlock() != &body) {
        op->emitOpError() << "is nested in another loop; the barrier pass "
                             "proves top-level KV loops only";
        return WalkResult::interrupt();
      }
      impl->loops.push_back(loop);
      return WalkResult::advance();
    }
    if (SmallVector<SharedAccess> found = getSharedAccesses(op); !found.empty()) {
      // Accesses outside straight-line code and KV loops (in a hook
      // region) are outside the model.
      if (!isa<KernelOp, KVLoopOp>(op->getParentOp())) {
        op->emitOpError() << "must be in the kernel body or a KV loop's body";
        return WalkResult::interrupt();
      }
      impl->accesses[op] = std::move(found);
      return WalkResult::advance();
    }
    if (isa<SmemAllocOp>(op))
      return WalkResult::advance();
    for (Value operand : op->getOperands())
      if (auto alloc = operand.getDefiningOp<SmemAllocOp>()) {
        op->emitOpError() << "uses shared buffer '" << alloc.getName()
                          << "' in a way the barrier pass does not model";
        return WalkResult::interrupt();
      }
    if (isa<AsyncWaitOp, BarrierOp>(op) &&
        !isa<KernelOp, KVLoopOp>(op->getParentOp())) {
      op->emitOpError() << "must be in the kernel body or a KV loop's body";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return std::unique_ptr<SyncChecker>(new SyncChecker(std::move(impl)));
}

SyncChecker::Result
SyncChecker::run(const llvm::DenseSet<Operation *> &disabled, Operation *only,
                 Operation *probe) {
  Result result;
  impl->disabled = &disabled;
  impl->only = only;
  impl->probe = probe;
  impl->result = &result;
  impl->seen.clear();
  size_t numLoops = impl->loops.size();
  SmallVector<int64_t> trips(numLoops, 0);
  for (int64_t residue = 0; residue < impl->residues; ++residue) {
    // Every combination of trip counts, the last loop's varying fastest.
    std::fill(trips.begin(), trips.end(), 0);
    while (true) {
      impl->runTrace(trips, kTraceBase + residue);
      size_t k = numLoops;
      while (k > 0 && trips[k - 1] == impl->maxTrips)
        trips[--k] = 0;
      if (k == 0)
        break;
      ++trips[k - 1];
    }
  }
  impl->result = nullptr;
  return result;
}

//===----------------------------------------------------------------------===//
// Descriptions
//===----------------------------------------------------------------------===//

static std::string bufferName(Value buffer) {
  if (auto alloc = buffer.getDefiningOp<SmemAllocOp>())
    return alloc.getName().str();
  return "?";
}

std::string SyncHazard::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string name = op->getName().getStringRef().str();
  std::string otherName =
      other ? other->getName().getStringRef().str() : std::string();
  std::string where =
      "'" + bufferName(buffer) + "' slot " + std::to_string(slot);
  switch (kind) {
  case Kind::ReadBeforeVisible:
    os << name << " reads " << where << " before the " << otherName
       << " that fills it "
       << (inFlight ? "has landed: no attn.async_wait retires its group first"
                    : "is visible to every warp: no attn.barrier follows the "
                      "attn.async_wait that retires it");
    break;
  case Kind::StaleRead:
    if (other)
      os << name << " reads " << where << ", which holds another tile then "
         << "(written by the " << otherName << " noted)";
    else
      os << name << " reads " << where << ", which no copy has filled";
    break;
  case Kind::WriteAfterRead:
    os << name << " writes " << where << " while another warp may still read "
       << "those bytes in the " << otherName
       << " noted: no attn.barrier separates them";
    break;
  case Kind::WriteOverCopy:
    os << name << " writes " << where << " while the " << otherName
       << " noted may still "
       << (inFlight ? "land there" : "be landing there for another warp");
    break;
  case Kind::CopyInFlightAtExit:
    os << name << " starts with asynchronous copies in flight";
    break;
  }
  return text;
}

LogicalResult attn::verifySynchronization(KernelOp kernel) {
  FailureOr<std::unique_ptr<SyncChecker>> checker = SyncChecker::create(kernel);
  if (failed(checker))
    return failure();
  SyncChecker::Result result = (*checker)->run();
  if (result.hazards.empty())
    return success();
  const SyncHazard &hazard = result.hazards.front();
  InFlightDiagnostic diag = hazard.op->emitOpError()
                            << "is not proven race-free: " << hazard.describe();
  if (hazard.kind != SyncHazard::Kind::StaleRead)
    diag << " (attn-insert-barriers places the waits and barriers)";
  if (hazard.other)
    diag.attachNote(hazard.other->getLoc()) << "the conflicting access";
  return failure();
}
