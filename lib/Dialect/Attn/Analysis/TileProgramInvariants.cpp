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

  auto checkFrag = [&](Operation *at, Type type) -> LogicalResult {
    auto frag = dyn_cast<FragType>(type);
    if (!frag)
      return success();
    ArrayRef<int64_t> shape = frag.getShape();
    if (shape.empty() || shape[0] != tileM)
      return at->emitOpError()
             << "has a fragment " << type
             << " whose rows are not the config's tile_m = " << tileM;
    if (shape.size() == 2 && shape[1] != tileN && shape[1] != warpTileN &&
        shape[1] != headDim &&
        shape[1] != headDimV)
      return at->emitOpError()
             << "has a fragment " << type
             << " whose columns are none of the config's tile_n = " << tileN
             << " (" << warpTileN << " per KV warp) and the head dims "
             << headDim << ", " << headDimV;
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
