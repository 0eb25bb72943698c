//===- KernelABI.cpp - The interface of a compiled kernel -----------------===//

#include "flashtile/Conversion/AttnToNVVM/KernelABI.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using plan::Expr;
using plan::ParamSource;
using plan::ParamType;


static plan::DType toPlanDType(Type type) {
  if (type.isF16())
    return plan::DType::F16;
  if (type.isBF16())
    return plan::DType::BF16;
  if (type.isF32())
    return plan::DType::F32;
  if (type.isInteger(32))
    return plan::DType::I32;
  if (type.isInteger(8))
    return plan::DType::S8;
  if (isa<Float8E4M3FNType>(type))
    return plan::DType::E4M3;
  if (isa<Float8E5M2Type>(type))
    return plan::DType::E5M2;
  assert(type.isInteger(64) && "the kernel verifier limits element types");
  return plan::DType::I64;
}

static plan::Param param(std::string name, ParamType type,
                         ParamSource::Kind kind, std::string arg,
                         int64_t index = 0) {
  plan::Param p;
  p.name = std::move(name);
  p.type = type;
  p.source.kind = kind;
  p.source.arg = std::move(arg);
  p.source.index = index;
  return p;
}

static plan::Param sizeParam(std::string name) {
  plan::Param p;
  p.name = name;
  p.type = ParamType::I32;
  p.source.kind = ParamSource::Kind::Value;
  p.source.value = Expr::named(std::move(name));
  return p;
}

bool flashtile::isPagedKV(KernelOp kernel) {
  return kernel.getPageTableArg() >= 0;
}

Expr flashtile::getSeqlenK(KernelOp kernel) {
  if (!isPagedKV(kernel))
    return Expr::named("seqlen_k");
  return Expr::apply(Expr::Op::Mul, {Expr::named(kMaxPagesSize),
                                     Expr::named(kPageSizeSize)});
}

std::vector<plan::Param> flashtile::getKernelParams(KernelOp kernel) {
  using K = ParamSource::Kind;
  std::vector<plan::Param> params;
  for (const char *t : {"q", "k", "v", "o", "lse"})
    params.push_back(param(t, ParamType::Ptr, K::Data, t));
  for (const char *size : {"seqlen_q", "seqlen_k", "heads_q", "heads_kv"})
    params.push_back(sizeParam(size));
  params[kParamSeqlenK].source.value = getSeqlenK(kernel);
  static const char *const strideNames[] = {"batch", "seq", "head"};
  for (const char *t : {"q", "k", "v", "o"})
    for (int64_t i = 0; i < 3; ++i)
      params.push_back(param(std::string(t) + ".stride_" + strideNames[i],
                             ParamType::I64, K::Stride, t, i));
  // LSE is (batch, heads, seq): its batch and head strides.
  params.push_back(param("lse.stride_batch", ParamType::I64, K::Stride, "lse", 0));
  params.push_back(param("lse.stride_head", ParamType::I64, K::Stride, "lse", 1));
  params.push_back(
      param("softmax_scale", ParamType::F32, K::Scalar, "softmax_scale"));
  assert(params.size() == kNumFixedKernelParams &&
         "KernelParamIndex and the parameter list disagree");

  for (auto [i, arg] : llvm::enumerate(kernel.getExtraArgs())) {
    std::string name = kernel.getExtraArgName(i).str();
    if (auto memref = dyn_cast<MemRefType>(arg.getType())) {
      params.push_back(param(name, ParamType::Ptr, K::Data, name));
      for (int64_t d = 0; d < memref.getRank(); ++d)
        params.push_back(param(name + ".size" + std::to_string(d),
                               ParamType::I64, K::Dim, name, d));
      for (int64_t d = 0; d < memref.getRank(); ++d)
        params.push_back(param(name + ".stride" + std::to_string(d),
                               ParamType::I64, K::Stride, name, d));
      continue;
    }
    Type type = arg.getType();
    ParamType ptype = type.isF32()       ? ParamType::F32
                      : type.isInteger(32) ? ParamType::I32
                                           : ParamType::I64;
    params.push_back(param(name, ptype, K::Scalar, name));
  }
  if (readsBatchSize(kernel))
    params.push_back(sizeParam("batch"));
  if (isPagedKV(kernel))
    for (const char *size : {kPageSizeSize, kNumPagesSize})
      params.push_back(sizeParam(size));
  if (hasKVSplits(kernel)) {
    auto value = [](Expr expr) {
      ParamSource source;
      source.kind = K::Value;
      source.value = std::move(expr);
      return source;
    };
    params.push_back(
        {kKVSplitsSize, ParamType::I32, value(Expr::named(kKVSplitsSize))});
    params.push_back({kSplitRowsParam, ParamType::I32, value(getSplitRowCount())});
  }
  if (getBlockRanges(kernel))
    for (const char *workspace : {kBlockRangesWorkspace, kBlockTilesWorkspace})
      params.push_back(
          param(workspace, ParamType::Ptr, K::Workspace, workspace));
  if (getDiagonalTable(kernel))
    params.push_back(param(kDiagonalTableWorkspace, ParamType::Ptr,
                           K::Workspace, kDiagonalTableWorkspace));
  if (hasKVSplits(kernel))
    for (const char *workspace : {kPartialOWorkspace, kPartialLseWorkspace})
      params.push_back(
          param(workspace, ParamType::Ptr, K::Workspace, workspace));
  return params;
}

bool flashtile::hasKVSplits(KernelOp kernel) {
  ConfigAttr config = kernel.getConfigAttr();
  return config && config.getPackGqa() &&
         !kernel.getBodyBlock().getOps<KVSplitOp>().empty();
}

static int64_t findParam(KernelOp kernel, StringRef name) {
  for (auto [i, p] : llvm::enumerate(getKernelParams(kernel)))
    if (p.name == name)
      return static_cast<int64_t>(i);
  return -1;
}

int64_t flashtile::getKVSplitsParamIndex(KernelOp kernel) {
  return findParam(kernel, kKVSplitsSize);
}

int64_t flashtile::getPagedKVParamIndex(KernelOp kernel) {
  return findParam(kernel, kPageSizeSize);
}

bool flashtile::readsBatchSize(KernelOp kernel) {
  return kernel
      .walk([](SizeOp size) {
        return size.getName() == "batch" ? WalkResult::interrupt()
                                         : WalkResult::advance();
      })
      .wasInterrupted();
}

int64_t flashtile::getBatchParamIndex(KernelOp kernel) {
  // "batch" is a reserved size name, so only the size parameter has it.
  return findParam(kernel, "batch");
}

static Expr named(const char *name) { return Expr::named(name); }
static Expr mul(std::vector<Expr> operands) {
  return Expr::apply(Expr::Op::Mul, std::move(operands));
}

Expr flashtile::getQueryTileCount(KernelOp kernel) {
  ConfigAttr config = kernel.getConfigAttr();
  // Packed rows: a block takes tile_m (position, head) pairs of one KV head.
  Expr rows = named("seqlen_q");
  if (config.getPackGqa())
    rows = mul({rows, Expr::apply(Expr::Op::Div,
                                  {named("heads_q"), named("heads_kv")})});
  return Expr::ceilDiv(rows, Expr::constant(config.getTileM()));
}

Expr flashtile::getKVSplitsRule(KernelOp kernel, int64_t blocksPerSM) {
  ConfigAttr config = kernel.getConfigAttr();
  Expr blocks =
      mul({getQueryTileCount(kernel), named("heads_kv"), named("batch")});
  Expr tiles = Expr::ceilDiv(getSeqlenK(kernel),
                             Expr::constant(config.getTileN()));
  return Expr::apply(Expr::Op::KVSplits,
                     {blocks, tiles, Expr::constant(blocksPerSM),
                      Expr::constant(kMaxKVSplits)});
}

Expr flashtile::getSplitRowCount() {
  return mul({named("batch"), named("heads_q"), named("seqlen_q")});
}

/// kv_splits * batch * heads_q * seqlen_q, 0 with one split.
static Expr partialRows(KernelOp kernel) {
  (void)kernel;
  Expr split = Expr::apply(Expr::Op::Gt,
                           {named(kKVSplitsSize), Expr::constant(1)});
  return mul({split, named(kKVSplitsSize), getSplitRowCount()});
}

Expr flashtile::getPartialOBytes(KernelOp kernel) {
  auto vType = cast<MemRefType>(kernel.getV().getType());
  return mul({partialRows(kernel),
              Expr::constant(getPaddedHeadDim(vType.getDimSize(3)) * 4)});
}

Expr flashtile::getPartialLseBytes(KernelOp kernel) {
  return mul({partialRows(kernel), Expr::constant(4)});
}

std::array<Expr, 3> flashtile::getCombineGrid(KernelOp kernel) {
  (void)kernel;
  std::array<Expr, 3> grid;
  grid[0] =
      Expr::ceilDiv(getSplitRowCount(), Expr::constant(kCombineRowsPerBlock));
  grid[1] = Expr::constant(1);
  grid[2] = Expr::constant(1);
  return grid;
}

std::vector<int64_t> flashtile::getExtraArgParamIndices(KernelOp kernel) {
  std::vector<int64_t> indices;
  int64_t next = kNumFixedKernelParams;
  for (BlockArgument arg : kernel.getExtraArgs()) {
    indices.push_back(next);
    auto memref = dyn_cast<MemRefType>(arg.getType());
    next += memref ? 1 + 2 * memref.getRank() : 1;
  }
  return indices;
}

BlockRangesOp flashtile::getBlockRanges(KernelOp kernel) {
  auto ops = kernel.getBodyBlock().getOps<BlockRangesOp>();
  return ops.empty() ? BlockRangesOp() : *ops.begin();
}

static Expr queryTiles(BlockRangesOp op) {
  return Expr::ceilDiv(Expr::named("seqlen_q"), Expr::constant(op.getTileM()));
}

static Expr keyTiles(BlockRangesOp op) {
  return Expr::ceilDiv(getSeqlenK(op->getParentOfType<KernelOp>()),
                       Expr::constant(op.getTileN()));
}

/// The (heads, batch) axes of both block-mask kernels.
static void setRowAxes(BlockRangesOp op, std::array<Expr, 3> &grid) {
  grid[kGridAxisHead] =
      op.getPerHead() ? Expr::named("heads_q") : Expr::constant(1);
  grid[kGridAxisBatch] = Expr::named("batch");
}

static Expr product(const std::array<Expr, 3> &grid) {
  using Op = Expr::Op;
  return Expr::apply(Op::Mul,
                     {grid[0], Expr::apply(Op::Mul, {grid[1], grid[2]})});
}

std::array<Expr, 3> flashtile::getBlockRangesGrid(BlockRangesOp op) {
  std::array<Expr, 3> grid;
  grid[kGridAxisMBlock] =
      Expr::ceilDiv(queryTiles(op), Expr::constant(kBlockRangesThreads));
  setRowAxes(op, grid);
  return grid;
}

Expr flashtile::getBlockRangesBytes(BlockRangesOp op) {
  std::array<Expr, 3> entries;
  entries[kGridAxisMBlock] = queryTiles(op);
  setRowAxes(op, entries);
  return Expr::apply(Expr::Op::Mul,
                     {product(entries), Expr::constant(kBlockRangesFields * 4)});
}

std::array<Expr, 3> flashtile::getBlockTilesGrid(BlockRangesOp op) {
  std::array<Expr, 3> grid;
  grid[kGridAxisMBlock] =
      Expr::apply(Expr::Op::Mul, {queryTiles(op), keyTiles(op)});
  setRowAxes(op, grid);
  return grid;
}

Expr flashtile::getBlockTilesBytes(BlockRangesOp op) {
  std::array<Expr, 3> bytes;
  Expr align = Expr::constant(kBlockTilesRowAlign);
  bytes[kGridAxisMBlock] = Expr::apply(
      Expr::Op::Mul,
      {queryTiles(op),
       Expr::apply(Expr::Op::Mul, {Expr::ceilDiv(keyTiles(op), align), align})});
  setRowAxes(op, bytes);
  return product(bytes);
}

plan::Check flashtile::getBlockTilesCheck(BlockRangesOp op) {
  return {Expr::apply(Expr::Op::Le,
                      {Expr::apply(Expr::Op::Mul, {queryTiles(op), keyTiles(op)}),
                       Expr::constant(std::numeric_limits<int32_t>::max())}),
          "the run-time block mask classifies at most 2^31 - 1 (query tile, "
          "KV tile) pairs: ceil(seqlen_q / " +
              std::to_string(op.getTileM()) + ") * ceil(seqlen_k / " +
              std::to_string(op.getTileN()) + ") is larger"};
}

std::vector<std::pair<std::string, int64_t>>
flashtile::getWorkspaceParamIndices(KernelOp kernel) {
  std::vector<std::pair<std::string, int64_t>> indices;
  for (auto [i, p] : llvm::enumerate(getKernelParams(kernel)))
    if (p.source.kind == ParamSource::Kind::Workspace)
      indices.emplace_back(p.source.arg, i);
  return indices;
}

DiagonalTable flashtile::getDiagonalTable(ModifyScoresOp op) {
  DiagonalTable table;
  table.term = getDiagonalTerm(op);
  if (!table.term)
    return table;
  table.op = op;
  auto type = cast<FragType>(op.getS().getType());
  table.tileM = type.getDimSize(0);
  table.tileN = type.getDimSize(1);
  return table;
}

DiagonalTable flashtile::getDiagonalTable(KernelOp kernel) {
  DiagonalTable table;
  kernel.walk([&](ModifyScoresOp op) {
    table = getDiagonalTable(op);
    return table ? WalkResult::interrupt() : WalkResult::advance();
  });
  return table;
}

/// Entries of one row of the diagonal table (KernelABI.h).
static Expr diagonalTableRow(const DiagonalTable &table) {
  using Op = Expr::Op;
  auto padded = [](Expr length, int64_t tile) {
    return Expr::apply(Op::Mul, {Expr::ceilDiv(std::move(length),
                                               Expr::constant(tile)),
                                 Expr::constant(tile)});
  };
  return Expr::apply(
      Op::Add,
      {padded(Expr::named("seqlen_q"), table.tileM),
       padded(getSeqlenK(table.op->getParentOfType<KernelOp>()), table.tileN)});
}

std::array<Expr, 3> flashtile::getDiagonalTableGrid(const DiagonalTable &table) {
  std::array<Expr, 3> grid;
  grid[kGridAxisMBlock] = Expr::ceilDiv(diagonalTableRow(table),
                                        Expr::constant(kDiagonalTableThreads));
  grid[kGridAxisHead] = table.term.usesHead ? Expr::named("heads_q")
                                            : Expr::constant(1);
  grid[kGridAxisBatch] =
      table.term.usesBatch ? Expr::named("batch") : Expr::constant(1);
  return grid;
}

Expr flashtile::getDiagonalTableBytes(const DiagonalTable &table) {
  using Op = Expr::Op;
  std::array<Expr, 3> grid = getDiagonalTableGrid(table);
  Expr rows = Expr::apply(Op::Mul, {grid[kGridAxisHead], grid[kGridAxisBatch]});
  return Expr::apply(
      Op::Mul, {Expr::apply(Op::Mul, {rows, diagonalTableRow(table)}),
                Expr::constant(4)});
}

std::array<Expr, 3> flashtile::getKernelGrid(KernelOp kernel) {
  std::array<Expr, 3> grid;
  ConfigAttr config = kernel.getConfigAttr();
  grid[kGridAxisMBlock] = getQueryTileCount(kernel);
  // Split-KV: kv_splits runs of the query tiles, split-major.
  if (hasKVSplits(kernel))
    grid[kGridAxisMBlock] = Expr::apply(
        Expr::Op::Mul, {Expr::named(kKVSplitsSize), grid[kGridAxisMBlock]});
  grid[kGridAxisHead] =
      Expr::named(config.getPackGqa() ? "heads_kv" : "heads_q");
  grid[kGridAxisBatch] = Expr::named("batch");
  return grid;
}

/// A (batch, seq, heads, dim) tensor of the kernel; a page pool
/// (pages, rows, heads, dim) when `outer` names its first two extents.
static plan::Argument tensorArg(std::string name, plan::ArgRole role,
                                MemRefType type, const char *seq,
                                const char *heads,
                                const char *outer = "batch") {
  plan::Argument a;
  a.name = std::move(name);
  a.kind = plan::ArgKind::Tensor;
  a.role = role;
  a.dtype = toPlanDType(type.getElementType());
  int64_t eltBytes = plan::getDTypeSize(a.dtype);
  a.shape = {Expr::named(outer), Expr::named(seq), Expr::named(heads),
             Expr::constant(type.getDimSize(3))};
  a.alignBytes = kCopyChunkBytes;
  a.contiguousLastDim = true;
  a.strideMultiple = kCopyChunkBytes / eltBytes;
  return a;
}

void flashtile::describeKernelArguments(KernelOp kernel,
                                        plan::LaunchPlan &plan) {
  using plan::ArgRole;
  auto memref = [](Value v) { return cast<MemRefType>(v.getType()); };
  plan.arguments.push_back(tensorArg("q", ArgRole::Input, memref(kernel.getQ()),
                                     "seqlen_q", "heads_q"));
  // Paged KV: K and V are page pools, the block table lists each
  // sequence's pages, and seqlen_k is getSeqlenK's product.
  int64_t pageTable = kernel.getPageTableArg();
  bool paged = pageTable >= 0;
  const char *kvOuter = paged ? kNumPagesSize : "batch";
  const char *kvRows = paged ? kPageSizeSize : "seqlen_k";
  plan.arguments.push_back(tensorArg("k", ArgRole::Input, memref(kernel.getK()),
                                     kvRows, "heads_kv", kvOuter));
  plan.arguments.push_back(tensorArg("v", ArgRole::Input, memref(kernel.getV()),
                                     kvRows, "heads_kv", kvOuter));
  plan.arguments.push_back(tensorArg("o", ArgRole::Output,
                                     memref(kernel.getO()), "seqlen_q",
                                     "heads_q"));
  plan::Argument lse;
  lse.name = "lse";
  lse.role = ArgRole::Output;
  lse.dtype = plan::DType::F32;
  lse.shape = {Expr::named("batch"), Expr::named("heads_q"),
               Expr::named("seqlen_q")};
  lse.alignBytes = plan::getDTypeSize(lse.dtype);
  lse.contiguousLastDim = true;
  plan.arguments.push_back(lse);

  for (auto [i, arg] : llvm::enumerate(kernel.getExtraArgs())) {
    plan::Argument a;
    a.name = kernel.getExtraArgName(i).str();
    StringRef role = kernel.getExtraArgRole(i);
    a.role = role == "out"          ? plan::ArgRole::Output
             : role == "accumulate" ? plan::ArgRole::Accumulate
                                    : plan::ArgRole::Input;
    if (auto type = dyn_cast<MemRefType>(arg.getType())) {
      a.kind = plan::ArgKind::Tensor;
      a.dtype = toPlanDType(type.getElementType());
      for (int64_t dim : type.getShape())
        a.shape.push_back(ShapedType::isDynamic(dim)
                              ? std::nullopt
                              : std::optional<Expr>(Expr::constant(dim)));
      a.alignBytes = plan::getDTypeSize(a.dtype);
      SmallVector<int64_t> strides;
      int64_t offset;
      if (succeeded(type.getStridesAndOffset(strides, offset)))
        a.contiguousLastDim = !strides.empty() && strides.back() == 1;
      // A tensor attn.copy_tile reads moves in 16-byte chunks: its rows
      // start 16-byte aligned.
      bool copied = llvm::any_of(arg.getUsers(), [](Operation *user) {
        return isa<attn::CopyTileOp>(user);
      });
      if (copied) {
        a.alignBytes = kCopyChunkBytes;
        a.strideMultiple = kCopyChunkBytes / plan::getDTypeSize(a.dtype);
      }
    } else {
      a.kind = plan::ArgKind::Scalar;
      a.dtype = toPlanDType(arg.getType());
    }
    if (static_cast<int64_t>(i) == pageTable)
      a.shape = {Expr::named("batch"), Expr::named(kMaxPagesSize)};
    plan.arguments.push_back(std::move(a));
  }

  plan::Argument scale;
  scale.name = "softmax_scale";
  scale.kind = plan::ArgKind::Scalar;
  scale.dtype = plan::DType::F32;
  scale.defaultValue =
      kernel.getProblemInfo().getSoftmaxScale().getValueAsDouble();
  // The kernel's row max is of the unscaled scores: a scale of 0 or less
  // would make it the wrong max.
  scale.positive = true;
  plan.arguments.push_back(scale);

  plan.sizes = {{"batch", "q", 0},
                {"seqlen_q", "q", 1},
                {"heads_q", "q", 2},
                {"seqlen_k", "k", 1},
                {"heads_kv", "k", 2}};
  using Op = Expr::Op;
  Expr seqlenK = getSeqlenK(kernel);
  if (paged) {
    plan.sizes[3] = {kNumPagesSize, "k", 0};
    plan.sizes.push_back({kPageSizeSize, "k", 1});
    plan.sizes.push_back(
        {kMaxPagesSize, kernel.getExtraArgName(pageTable).str(), 1});
    for (const char *size : {kNumPagesSize, kPageSizeSize})
      plan.checks.push_back(
          {Expr::apply(Op::Ge, {Expr::named(size), Expr::constant(1)}),
           std::string("paged KV needs ") + size + " >= 1"});
    // The kernel clamps each entry into [0, num_pages) with 32-bit
    // arithmetic.
    plan.checks.push_back(
        {Expr::apply(Op::Le, {Expr::named(kNumPagesSize),
                              Expr::constant(kMaxSequenceExtent)}),
         std::string("num_pages must be at most ") +
             std::to_string(kMaxSequenceExtent)});
  }
  plan.checks.push_back(
      {Expr::apply(Op::Ge, {Expr::named("heads_kv"), Expr::constant(1)}),
       "K and V need at least one head"});
  plan.checks.push_back(
      {Expr::apply(Op::Eq, {Expr::apply(Op::Mod, {Expr::named("heads_q"),
                                                 Expr::named("heads_kv")}),
                            Expr::constant(0)}),
       "heads_q must be a multiple of heads_kv (grouped-query attention)"});
  const char *seqlenKName =
      paged ? "seqlen_k (max_pages * page_size)" : "seqlen_k";
  for (auto [length, name] : {std::pair{Expr::named("seqlen_q"), "seqlen_q"},
                              std::pair{seqlenK, seqlenKName}})
    plan.checks.push_back(
        {Expr::apply(Op::Le,
                     {length, Expr::constant(kMaxSequenceExtent)}),
         std::string(name) + " must be at most " +
             std::to_string(kMaxSequenceExtent) +
             " (the kernel's index arithmetic is 32-bit)"});
  // seqlen_k = 0 is valid: the KV loop runs no step, and every row ends as
  // a row that sees no key (O = 0, LSE = -inf).
}
