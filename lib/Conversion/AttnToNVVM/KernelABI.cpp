//===- KernelABI.cpp - The interface of a compiled kernel -----------------===//

#include "flashtile/Conversion/AttnToNVVM/KernelABI.h"
#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

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

/// The sizes the tensors are declared over, as KernelABI.h orders them: the
/// rows sizes first, then the heads sizes, each once.
static std::vector<std::string> getTensorSizeNames(KernelOp kernel) {
  std::vector<std::string> names;
  SmallVector<TensorAttr> decls = kernel.getTensorDecls();
  for (bool heads : {false, true})
    for (TensorAttr decl : decls) {
      std::string name =
          (heads ? decl.getHeads() : decl.getRows()).getValue().str();
      if (!llvm::is_contained(names, name))
        names.push_back(name);
    }
  return names;
}

/// The strides a sequence tensor passes: all but its contiguous last one.
static const char *const kRank4StrideNames[] = {"batch", "seq", "head"};
static const char *const kRank3StrideNames[] = {"batch", "head"};

static int64_t getTensorRank(KernelOp kernel, unsigned i) {
  return cast<MemRefType>(kernel.getBodyBlock().getArgument(i).getType())
      .getRank();
}

/// The suffixes of a sequence tensor's stride parameters (all but its
/// contiguous last stride).
static ArrayRef<const char *> getStrideNames(int64_t rank) {
  if (rank == 3)
    return kRank3StrideNames;
  return kRank4StrideNames;
}

static bool isWorkspace(TensorAttr decl) {
  return decl.getRole().getValue() == "workspace";
}

/// The rows size of declaration `decl` as the plan evaluates it.
static Expr rowsOf(KernelOp kernel, TensorAttr decl) {
  StringRef rows = decl.getRows().getValue();
  return rows == abi::kKeySide.rows ? getSeqlenK(kernel)
                                    : Expr::named(rows.str());
}

/// The rows of a C tile (the 16-bit mma shape's C), which a C-tiled
/// tensor's rows are padded to a multiple of (#attn.tensor's order).
static int64_t getCTileRows() { return getOperandShape(16)->m; }

/// The allocated extents of sequence tensor `i`, outermost first: (batch,
/// rows, heads, dim) or (batch, heads, rows); a C-tiled one's rows
/// rounded up to whole tiles.
static std::vector<Expr> getExtents(KernelOp kernel, unsigned i) {
  TensorAttr decl = kernel.getTensorDecls()[i];
  Expr batch = Expr::named(abi::kBatchSize), rows = rowsOf(kernel, decl),
       heads = Expr::named(decl.getHeads().getValue().str());
  auto type = cast<MemRefType>(kernel.getBodyBlock().getArgument(i).getType());
  if (type.getRank() == 3)
    return {batch, heads, rows};
  if (decl.hasCTiles()) {
    Expr tileRows = Expr::constant(getCTileRows());
    rows = Expr::apply(Expr::Op::Mul,
                       {Expr::apply(Expr::Op::CeilDiv, {rows, tileRows}),
                        tileRows});
  }
  return {batch, rows, heads, Expr::constant(type.getDimSize(3))};
}

/// The strides but the last (1) of workspace `i`: contiguous over its
/// extents, and a C-tiled one's head stride one tile row of the plane
/// (16 x dim: each 16-row block holds its heads' planes one after another).
static std::vector<Expr> getWorkspaceStrides(KernelOp kernel, unsigned i) {
  std::vector<Expr> extents = getExtents(kernel, i);
  std::vector<Expr> strides(extents.size() - 1);
  Expr inner = extents.back();
  for (size_t d = extents.size() - 1; d-- > 0;) {
    strides[d] = inner;
    if (d > 0)
      inner = Expr::apply(Expr::Op::Mul, {extents[d], inner});
  }
  if (kernel.getTensorDecls()[i].hasCTiles())
    strides[2] = Expr::apply(Expr::Op::Mul, {Expr::constant(getCTileRows()),
                                             extents.back()});
  return strides;
}

std::vector<plan::Workspace> flashtile::getTensorWorkspaces(KernelOp kernel) {
  std::vector<plan::Workspace> workspaces;
  for (auto [i, decl] : llvm::enumerate(kernel.getTensorDecls())) {
    if (!isWorkspace(decl))
      continue;
    auto type =
        cast<MemRefType>(kernel.getBodyBlock().getArgument(i).getType());
    Expr bytes = Expr::constant(type.getElementTypeBitWidth() / 8);
    for (Expr &extent : getExtents(kernel, i))
      bytes = Expr::apply(Expr::Op::Mul, {std::move(extent), bytes});
    workspaces.push_back(
        {decl.getName().getValue().str(), std::move(bytes), /*zeroed=*/true});
  }
  return workspaces;
}

// getKernelParams owns the order; the positions are read back from it.
std::vector<TensorParams> flashtile::getTensorParams(KernelOp kernel) {
  llvm::StringMap<int64_t> index;
  for (auto [i, p] : llvm::enumerate(getKernelParams(kernel)))
    index.try_emplace(p.name, i);
  std::vector<TensorParams> tensors;
  for (auto [i, decl] : llvm::enumerate(kernel.getTensorDecls())) {
    TensorParams t;
    t.name = decl.getName().getValue().str();
    t.rank = getTensorRank(kernel, i);
    t.pointer = index.lookup(t.name);
    t.rows = index.lookup(decl.getRows().getValue());
    t.heads = index.lookup(decl.getHeads().getValue());
    for (const char *what : getStrideNames(t.rank))
      t.strides.push_back(index.lookup(t.name + ".stride_" + what));
    tensors.push_back(std::move(t));
  }
  return tensors;
}

TensorParams flashtile::getTensorParams(KernelOp kernel, StringRef name) {
  for (TensorParams &t : getTensorParams(kernel))
    if (t.name == name)
      return t;
  llvm_unreachable("the kernel declares no tensor of this name");
}

int64_t flashtile::getNumTensorParams(KernelOp kernel) {
  // The scale ends them.
  return getParamIndex(kernel, kSoftmaxScaleParam) + 1;
}

std::vector<plan::Param> flashtile::getKernelParams(KernelOp kernel) {
  using K = ParamSource::Kind;
  std::vector<plan::Param> params;
  SmallVector<TensorAttr> decls = kernel.getTensorDecls();
  for (TensorAttr decl : decls) {
    std::string name = decl.getName().getValue().str();
    params.push_back(param(name, ParamType::Ptr,
                           isWorkspace(decl) ? K::Workspace : K::Data, name));
  }
  for (const std::string &size : getTensorSizeNames(kernel)) {
    params.push_back(sizeParam(size));
    if (size == abi::kKeySide.rows)
      params.back().source.value = getSeqlenK(kernel);
  }
  for (auto [i, decl] : llvm::enumerate(decls)) {
    std::string name = decl.getName().getValue().str();
    int64_t rank = getTensorRank(kernel, i);
    std::vector<Expr> contiguous;
    if (isWorkspace(decl))
      contiguous = getWorkspaceStrides(kernel, i);
    for (auto [d, what] : llvm::enumerate(getStrideNames(rank))) {
      params.push_back(
          param(name + ".stride_" + what, ParamType::I64, K::Stride, name, d));
      if (isWorkspace(decl)) {
        params.back().source.kind = K::Value;
        params.back().source.value = contiguous[d];
      }
    }
  }
  params.push_back(
      param(kSoftmaxScaleParam, ParamType::F32, K::Scalar, kSoftmaxScaleParam));

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
  if (BlockRangesOp ranges = getBlockRanges(kernel)) {
    BlockMaskNames names = getBlockMaskNames(ranges);
    for (const char *workspace : {names.rangesWorkspace, names.tilesWorkspace})
      params.push_back(
          param(workspace, ParamType::Ptr, K::Workspace, workspace));
  }
  if (getDiagonalTable(kernel))
    params.push_back(param(kDiagonalTableWorkspace, ParamType::Ptr,
                           K::Workspace, kDiagonalTableWorkspace));
  if (hasKVSplits(kernel))
    for (const char *workspace : {kPartialOWorkspace, kPartialLseWorkspace})
      params.push_back(
          param(workspace, ParamType::Ptr, K::Workspace, workspace));
  // Last, so that the parameters every kernel had before the batch size
  // was one keep their numbers (and the code ptxas makes of them).
  params.push_back(sizeParam(abi::kBatchSize));
  return params;
}

bool flashtile::hasKVSplits(KernelOp kernel) {
  ConfigAttr config = kernel.getConfigAttr();
  return config && config.getPackGqa() &&
         !kernel.getBodyBlock().getOps<KVSplitOp>().empty();
}

int64_t flashtile::getParamIndex(KernelOp kernel, StringRef name) {
  for (auto [i, p] : llvm::enumerate(getKernelParams(kernel)))
    if (p.name == name)
      return static_cast<int64_t>(i);
  return -1;
}

int64_t flashtile::getKVSplitsParamIndex(KernelOp kernel) {
  return getParamIndex(kernel, kKVSplitsSize);
}

int64_t flashtile::getPagedKVParamIndex(KernelOp kernel) {
  return getParamIndex(kernel, kPageSizeSize);
}

int64_t flashtile::getBatchParamIndex(KernelOp kernel) {
  // "batch" is a reserved size name, so only the size parameter has it.
  int64_t index = getParamIndex(kernel, abi::kBatchSize);
  assert(index >= 0 && "every kernel takes the batch size");
  return index;
}

static Expr named(const char *name) { return Expr::named(name); }
static Expr mul(std::vector<Expr> operands) {
  return Expr::apply(Expr::Op::Mul, std::move(operands));
}

Expr formula::padded(Expr length, int64_t tile) {
  return mul({Expr::ceilDiv(std::move(length), Expr::constant(tile)),
              Expr::constant(tile)});
}

Expr formula::queryTiles(int64_t tileM, bool packed) {
  // Packed rows: a block takes tile_m (position, head) pairs of one KV head.
  Expr rows = named(abi::kQuerySide.rows);
  if (packed)
    rows =
        mul({rows, Expr::apply(Expr::Op::Div, {named(abi::kQuerySide.heads),
                                               named(abi::kKeySide.heads)})});
  return Expr::ceilDiv(rows, Expr::constant(tileM));
}

Expr formula::keyTiles(int64_t tileN, Expr seqlenK) {
  return Expr::ceilDiv(std::move(seqlenK), Expr::constant(tileN));
}

Expr formula::heads(bool perHead) {
  return perHead ? named(abi::kQuerySide.heads) : Expr::constant(1);
}

formula::BlockRangesAxes formula::blockRangesAxes(bool keyGrid, bool perHead,
                                                  int64_t tileM, int64_t tileN,
                                                  Expr seqlenK) {
  if (keyGrid)
    return {keyTiles(tileN, std::move(seqlenK)),
            perHead ? named(abi::kKeySide.heads) : Expr::constant(1)};
  return {queryTiles(tileM, /*packed=*/false), heads(perHead)};
}

Expr formula::blockTilesRowBytes(int64_t tileN, Expr seqlenK) {
  return padded(keyTiles(tileN, std::move(seqlenK)), kBlockTilesRowAlign);
}

Expr formula::diagonalTableRow(int64_t tileM, int64_t tileN, Expr seqlenK) {
  return Expr::apply(Expr::Op::Add, {padded(named(abi::kQuerySide.rows), tileM),
                                     padded(std::move(seqlenK), tileN)});
}

Expr formula::diagonalTableOrigin(int64_t tileM) {
  return Expr::apply(Expr::Op::Sub, {padded(named(abi::kQuerySide.rows), tileM),
                                     Expr::constant(1)});
}

Expr flashtile::getQueryTileCount(KernelOp kernel) {
  ConfigAttr config = kernel.getConfigAttr();
  return formula::queryTiles(config.getTileM(), config.getPackGqa());
}

Expr flashtile::getKVSplitsRule(KernelOp kernel, int64_t blocksPerSM) {
  ConfigAttr config = kernel.getConfigAttr();
  Expr blocks =
      mul({getQueryTileCount(kernel), named(abi::kKeySide.heads),
           named(abi::kBatchSize)});
  Expr tiles = Expr::ceilDiv(getSeqlenK(kernel),
                             Expr::constant(config.getTileN()));
  return Expr::apply(Expr::Op::KVSplits,
                     {blocks, tiles, Expr::constant(blocksPerSM),
                      Expr::constant(kMaxKVSplits)});
}

Expr flashtile::getSplitRowCount() {
  return mul({named(abi::kBatchSize), named(abi::kQuerySide.heads),
              named(abi::kQuerySide.rows)});
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
  int64_t next = getNumTensorParams(kernel);
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
  return formula::queryTiles(op.getTileM(), /*packed=*/false);
}

static Expr keyTiles(BlockRangesOp op) {
  return formula::keyTiles(op.getTileN(),
                           getSeqlenK(op->getParentOfType<KernelOp>()));
}

BlockMaskNames flashtile::getBlockMaskNames(BlockRangesOp op) {
  if (op.getKeyGrid())
    return {kKeyGridTilesWorkspace, kKeyGridTilesKernelSuffix,
            kKeyGridRangesWorkspace, kKeyGridRangesKernelSuffix};
  return {kBlockTilesWorkspace, kBlockTilesKernelSuffix, kBlockRangesWorkspace,
          kBlockRangesKernelSuffix};
}

/// The (heads, batch) axes of the tiles kernel (per query head).
static void setRowAxes(BlockRangesOp op, std::array<Expr, 3> &grid) {
  grid[kGridAxisHead] = formula::heads(op.getPerHead());
  grid[kGridAxisBatch] = Expr::named(abi::kBatchSize);
}

/// The axes of the ranges kernel and its entries: (query tiles, query heads
/// or 1, batch), or with key_grid (KV tiles, KV heads or 1, batch).
static std::array<Expr, 3> getRangesEntries(BlockRangesOp op) {
  std::array<Expr, 3> entries;
  formula::BlockRangesAxes axes = formula::blockRangesAxes(
      op.getKeyGrid(), op.getPerHead(), op.getTileM(), op.getTileN(),
      getSeqlenK(op->getParentOfType<KernelOp>()));
  entries[kGridAxisMBlock] = axes.tiles;
  entries[kGridAxisHead] = axes.heads;
  entries[kGridAxisBatch] = Expr::named(abi::kBatchSize);
  return entries;
}

static Expr product(const std::array<Expr, 3> &grid) {
  using Op = Expr::Op;
  return Expr::apply(Op::Mul,
                     {grid[0], Expr::apply(Op::Mul, {grid[1], grid[2]})});
}

std::array<Expr, 3> flashtile::getBlockRangesGrid(BlockRangesOp op) {
  std::array<Expr, 3> grid = getRangesEntries(op);
  grid[kGridAxisMBlock] = Expr::ceilDiv(grid[kGridAxisMBlock],
                                        Expr::constant(kBlockRangesThreads));
  return grid;
}

Expr flashtile::getBlockRangesBytes(BlockRangesOp op) {
  std::array<Expr, 3> entries = getRangesEntries(op);
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
  bytes[kGridAxisMBlock] = Expr::apply(
      Expr::Op::Mul,
      {queryTiles(op),
       formula::blockTilesRowBytes(
           op.getTileN(), getSeqlenK(op->getParentOfType<KernelOp>()))});
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
  int64_t tensorParams = getNumTensorParams(kernel);
  for (auto [i, p] : llvm::enumerate(getKernelParams(kernel)))
    if (p.source.kind == ParamSource::Kind::Workspace &&
        static_cast<int64_t>(i) >= tensorParams)
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
  return formula::diagonalTableRow(
      table.tileM, table.tileN,
      getSeqlenK(table.op->getParentOfType<KernelOp>()));
}

std::array<Expr, 3> flashtile::getDiagonalTableGrid(const DiagonalTable &table) {
  std::array<Expr, 3> grid;
  grid[kGridAxisMBlock] = Expr::ceilDiv(diagonalTableRow(table),
                                        Expr::constant(kDiagonalTableThreads));
  grid[kGridAxisHead] = formula::heads(table.term.usesHead);
  grid[kGridAxisBatch] =
      table.term.usesBatch ? Expr::named(abi::kBatchSize) : Expr::constant(1);
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
  if (kernel.hasKeyGrid()) {
    grid[kGridAxisMBlock] =
        formula::keyTiles(config.getTileN(), getSeqlenK(kernel));
    grid[kGridAxisHead] = Expr::named(abi::kKeySide.heads);
    grid[kGridAxisBatch] = Expr::named(abi::kBatchSize);
    return grid;
  }
  grid[kGridAxisMBlock] = getQueryTileCount(kernel);
  // Split-KV: kv_splits runs of the query tiles, split-major.
  if (hasKVSplits(kernel))
    grid[kGridAxisMBlock] = Expr::apply(
        Expr::Op::Mul, {Expr::named(kKVSplitsSize), grid[kGridAxisMBlock]});
  grid[kGridAxisHead] =
      Expr::named(config.getPackGqa() ? "heads_kv" : "heads_q");
  grid[kGridAxisBatch] = Expr::named(abi::kBatchSize);
  return grid;
}

/// A (batch, rows, heads, dim) tensor of the kernel; a page pool
/// (pages, rows, heads, dim) when `outer` names its first two extents.
static plan::Argument tensorArg(std::string name, plan::ArgRole role,
                                MemRefType type, StringRef rows,
                                StringRef heads,
                                StringRef outer = abi::kBatchSize) {
  plan::Argument a;
  a.name = std::move(name);
  a.kind = plan::ArgKind::Tensor;
  a.role = role;
  a.dtype = toPlanDType(type.getElementType());
  int64_t eltBytes = plan::getDTypeSize(a.dtype);
  a.shape = {Expr::named(outer.str()), Expr::named(rows.str()),
             Expr::named(heads.str()), Expr::constant(type.getDimSize(3))};
  a.alignBytes = kCopyChunkBytes;
  a.contiguousLastDim = true;
  a.strideMultiple = kCopyChunkBytes / eltBytes;
  return a;
}

/// A (batch, heads, rows) f32 tensor of one value per row (LSE).
static plan::Argument rowTensorArg(std::string name, plan::ArgRole role,
                                   StringRef rows, StringRef heads) {
  plan::Argument a;
  a.name = std::move(name);
  a.role = role;
  a.dtype = plan::DType::F32;
  a.shape = {Expr::named(abi::kBatchSize), Expr::named(heads.str()),
             Expr::named(rows.str())};
  a.alignBytes = plan::getDTypeSize(a.dtype);
  a.contiguousLastDim = true;
  return a;
}

static plan::ArgRole toArgRole(StringRef role) {
  return role == "out"          ? plan::ArgRole::Output
         : role == "accumulate" ? plan::ArgRole::Accumulate
                                : plan::ArgRole::Input;
}

void flashtile::describeKernelArguments(KernelOp kernel,
                                        plan::LaunchPlan &plan) {
  // Paged KV: K and V are page pools, the block table lists each
  // sequence's pages, and seqlen_k is getSeqlenK's product.
  int64_t pageTable = kernel.getPageTableArg();
  bool paged = pageTable >= 0;
  // Each size is bound to the first tensor that is declared over it
  // (batch to the first tensor's); the runtime checks the others.
  std::vector<plan::SizeBinding> bindings;
  auto bind = [&](StringRef size, StringRef arg, int64_t dim) {
    for (const plan::SizeBinding &b : bindings)
      if (b.name == size)
        return;
    bindings.push_back({size.str(), arg.str(), dim});
  };
  for (auto [i, decl] : llvm::enumerate(kernel.getTensorDecls())) {
    // Workspaces are the plan's (getTensorWorkspaces), not arguments.
    if (isWorkspace(decl))
      continue;
    std::string name = decl.getName().getValue().str();
    plan::ArgRole role = toArgRole(decl.getRole().getValue());
    StringRef rows = decl.getRows().getValue(),
              heads = decl.getHeads().getValue();
    auto type =
        cast<MemRefType>(kernel.getBodyBlock().getArgument(i).getType());
    if (type.getRank() == 3) {
      plan.arguments.push_back(rowTensorArg(name, role, rows, heads));
      bind(abi::kBatchSize, name, 0);
      bind(heads, name, 1);
      bind(rows, name, 2);
      continue;
    }
    bool pool = paged && rows == abi::kKeySide.rows;
    plan.arguments.push_back(
        pool ? tensorArg(name, role, type, kPageSizeSize, heads, kNumPagesSize)
             : tensorArg(name, role, type, rows, heads));
    if (pool) {
      bind(kNumPagesSize, name, 0);
      bind(heads, name, 2);
      continue;
    }
    bind(abi::kBatchSize, name, 0);
    bind(rows, name, 1);
    bind(heads, name, 2);
  }
  for (auto [i, arg] : llvm::enumerate(kernel.getExtraArgs())) {
    plan::Argument a;
    a.name = kernel.getExtraArgName(i).str();
    a.role = toArgRole(kernel.getExtraArgRole(i));
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
      a.shape = {Expr::named(abi::kBatchSize), Expr::named(kMaxPagesSize)};
    plan.arguments.push_back(std::move(a));
  }

  plan::Argument scale;
  scale.name = kSoftmaxScaleParam;
  scale.kind = plan::ArgKind::Scalar;
  scale.dtype = plan::DType::F32;
  scale.defaultValue =
      kernel.getProblemInfo().getSoftmaxScale().getValueAsDouble();
  // The kernel's row max is of the unscaled scores: a scale of 0 or less
  // would make it the wrong max.
  scale.positive = true;
  plan.arguments.push_back(scale);

  plan.sizes = std::move(bindings);
  using Op = Expr::Op;
  if (paged) {
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
  std::vector<std::string> sizes = getTensorSizeNames(kernel);
  auto declares = [&](const char *size) {
    return llvm::is_contained(sizes, size);
  };
  if (declares(abi::kKeySide.heads))
    plan.checks.push_back(
        {Expr::apply(Op::Ge,
                     {Expr::named(abi::kKeySide.heads), Expr::constant(1)}),
         "K and V need at least one head"});
  if (declares(abi::kKeySide.heads) && declares(abi::kQuerySide.heads))
    plan.checks.push_back(
        {Expr::apply(Op::Eq,
                     {Expr::apply(Op::Mod, {Expr::named(abi::kQuerySide.heads),
                                            Expr::named(abi::kKeySide.heads)}),
                      Expr::constant(0)}),
         "heads_q must be a multiple of heads_kv (grouped-query attention)"});
  for (abi::SequenceSide side : abi::kSequenceSides) {
    if (!declares(side.rows))
      continue;
    bool keys = StringRef(side.rows) == abi::kKeySide.rows;
    Expr length = keys ? getSeqlenK(kernel) : Expr::named(side.rows);
    std::string name = side.rows;
    if (keys && paged)
      name += " (max_pages * page_size)";
    plan.checks.push_back(
        {Expr::apply(Op::Le, {length, Expr::constant(kMaxSequenceExtent)}),
         name + " must be at most " + std::to_string(kMaxSequenceExtent) +
             " (the kernel's index arithmetic is 32-bit)"});
  }
  // seqlen_k = 0 is valid: the KV loop runs no step, and every row ends as
  // a row that sees no key (O = 0, LSE = -inf).
}
