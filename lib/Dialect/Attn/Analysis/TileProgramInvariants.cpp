//===- TileProgramInvariants.cpp - What the lowering relies on ------------===//

#include "flashtile/Dialect/Attn/Analysis/TileProgramInvariants.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

/// The bytes of one shared buffer (all its slots).
static int64_t bufferBytes(MemRefType type) {
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

LogicalResult attn::verifyAttentionTensors(KernelOp kernel) {
  for (StringRef name : {"q", "k", "v", "o", "lse"})
    if (!kernel.getTensor(name))
      return kernel.emitOpError()
             << "declares no tensor '" << name
             << "': the tile pipeline (config selection, the allocator's "
                "checks, the lowering) sizes a kernel by attention's q, k, "
                "v, o and lse";
  return success();
}

LogicalResult attn::verifyTileProgramInvariants(KernelOp kernel) {
  if (failed(verifyAttentionTensors(kernel)))
    return failure();
  ConfigAttr config = kernel.getConfigAttr();
  std::optional<int64_t> smemBytes = kernel.getSmemBytes();
  if (!config || !smemBytes)
    return kernel.emitOpError()
           << "must be an allocated tile program (a config and smem_bytes)";
  const ArchInfo &arch = kernel.getArch().getInfo();
  if (*smemBytes < 0 || *smemBytes > arch.smemPerBlock)
    return kernel.emitOpError()
           << "has smem_bytes = " << *smemBytes << ", outside [0, "
           << arch.smemPerBlock << "] for " << arch.name;

  int64_t tileM = config.getTileM(), tileN = config.getTileN();
  // With KV warps, each warp's score tile has tile_n / kv_warps columns.
  int64_t warpTileN = tileN / std::max<int64_t>(config.getKvWarps(), 1);
  int64_t headDim =
      getPaddedHeadDim(cast<MemRefType>(kernel.getQ().getType()).getDimSize(3));
  int64_t headDimV =
      getPaddedHeadDim(cast<MemRefType>(kernel.getV().getType()).getDimSize(3));

  // A key-grid kernel (the backward's dK / dV) holds a tile of keys and
  // streams tiles of queries, one of tile_m and the other of tile_n rows
  // (BuildBackward: queries tile_m, keys tile_n): its fragments have either
  // many rows (S^T and dK the keys', dQ the queries'), and a key-side tile
  // S^T has a query tile's columns beside its per-query 'cols' vectors.
  bool keyGrid = kernel.hasKeyGrid();
  int64_t rowWarps = config.getRowWarps();
  auto rowsAllowed = [&](int64_t rows) {
    return (rows == tileM || (keyGrid && rows == tileN)) &&
           rows % (16 * rowWarps) == 0;
  };
  // A key-grid kernel's KV warps split columns: S^T (and its LSE and D) is
  // a warp's share of a step's queries, dK, dV and dQ of the head dims.
  int64_t kvWarps = std::max<int64_t>(config.getKvWarps(), 1);
  auto colsAllowed = [&](int64_t cols) {
    return cols == tileN || cols == warpTileN || cols == headDim ||
           cols == headDimV || (keyGrid && cols == tileM) ||
           (keyGrid && kvWarps > 1 &&
            (cols == tileM / kvWarps || cols == headDim / kvWarps ||
             cols == headDimV / kvWarps));
  };
  // What the rules allow, for the errors.
  auto rowsText = [&] {
    return "the config's tile_m = " + std::to_string(tileM) +
           (keyGrid ? " or tile_n = " + std::to_string(tileN) +
                          " (the key grid's key and query tiles)"
                    : std::string()) +
           ", split over " + std::to_string(rowWarps) +
           " row warps of 16-row mma tiles";
  };
  auto colsText = [&] {
    return "none of the config's tile_n = " + std::to_string(tileN) + " (" +
           std::to_string(warpTileN) + " per KV warp)" +
           (keyGrid ? ", tile_m = " + std::to_string(tileM) : std::string()) +
           " and the head dims " + std::to_string(headDim) + ", " +
           std::to_string(headDimV) +
           (keyGrid && kvWarps > 1 ? " (or their shares per KV warp)"
                                   : std::string());
  };
  auto checkFrag = [&](Operation *at, Type type) -> LogicalResult {
    auto frag = dyn_cast<FragType>(type);
    if (!frag)
      return success();
    ArrayRef<int64_t> shape = frag.getShape();
    if (frag.getLayout() == FragLayout::Cols) {
      if (!colsAllowed(shape[0]))
        return at->emitOpError() << "has a column vector " << type
                                 << " whose size is " << colsText();
      return success();
    }
    if (shape.empty() || !rowsAllowed(shape[0]))
      return at->emitOpError() << "has a fragment " << type
                               << " whose rows are not " << rowsText();
    if (shape.size() == 2 && !colsAllowed(shape[1]))
      return at->emitOpError() << "has a fragment " << type
                               << " whose columns are " << colsText();
    return success();
  };

  WalkResult result = kernel.getBodyBlock().walk([&](Operation *op) {
    if (auto alloc = dyn_cast<SmemAllocOp>(op)) {
      if (!alloc.getOffset()) {
        alloc.emitOpError() << "has no offset; run attn-allocate-shared-memory";
        return WalkResult::interrupt();
      }
      int64_t offset = *alloc.getOffset();
      int64_t bytes = bufferBytes(alloc.getType());
      if (offset < 0 || offset + bytes > *smemBytes) {
        alloc.emitOpError()
            << "'" << alloc.getName() << "' lies at [" << offset << ", "
            << offset + bytes
            << ") B, outside the kernel's smem_bytes = " << *smemBytes;
        return WalkResult::interrupt();
      }
    }
    for (StringRef name : {"tile_m", "tile_n"}) {
      auto value = op->getAttrOfType<IntegerAttr>(name);
      if (!value)
        continue;
      int64_t expected = name == "tile_m" ? tileM : tileN;
      if (value.getInt() != expected) {
        op->emitOpError() << "has " << name << " = " << value.getInt()
                          << " but the kernel's config has " << name << " = "
                          << expected;
        return WalkResult::interrupt();
      }
    }
    for (Type type : op->getResultTypes())
      if (failed(checkFrag(op, type)))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (failed(checkFrag(op, arg.getType())))
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
