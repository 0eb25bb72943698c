//===- AllocateSharedMemory.cpp - attn-allocate-shared-memory -------------===//
//
// Turns the allocator's plan into IR (offsets, smem_bytes) and into the
// user-facing answer to "does this fit?": an error with every buffer when it
// does not, remarks with the plan and the occupancy when asked.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Dialect/Attn/Analysis/SharedMemoryAllocation.h"
#include "flashtile/Dialect/Attn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"

namespace flashtile::attn {
#define GEN_PASS_DEF_ATTNALLOCATESHAREDMEMORY
#include "flashtile/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashtile::attn

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

/// "128x128xf16 x 2 slots"
static std::string describeShape(MemRefType type) {
  std::string str;
  llvm::raw_string_ostream os(str);
  os << type.getDimSize(1) << "x" << type.getDimSize(2) << "x"
     << type.getElementType();
  if (type.getDimSize(0) > 1)
    os << " x " << type.getDimSize(0) << " slots";
  return str;
}

namespace {
struct AttnAllocateSharedMemoryPass
    : public attn::impl::AttnAllocateSharedMemoryBase<
          AttnAllocateSharedMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    KernelOp kernel = getOperation();
    const ArchInfo &arch = kernel.getArch().getInfo();
    SharedMemoryPlan plan(kernel);
    int64_t total = plan.getTotalBytes();

    if (total > arch.smemPerBlock) {
      InFlightDiagnostic diag =
          kernel.emitError()
          << "shared memory plan needs " << total << " B but " << arch.name
          << " allows " << arch.smemPerBlock << " B per block";
      if (ConfigAttr config = kernel.getConfigAttr())
        diag << " (config: " << formatConfig(config) << ")";
      for (const BufferPlacement &buffer : plan.getBuffers()) {
        Diagnostic &note = diag.attachNote(buffer.alloc.getLoc());
        note << buffer.alloc.getName() << ": " << buffer.bytes << " B ("
             << describeShape(buffer.alloc.getType()) << ") at offset "
             << buffer.offset;
      }
      ConfigAttr config = kernel.getConfigAttr();
      Diagnostic &hint = diag.attachNote();
      hint << "hint: use a smaller tile_n or tile_m, fewer stages";
      // Q in registers is the forward's option (a key grid's Q tiles are
      // the ones it walks).
      if ((!config || !config.getQInRegs()) && !kernel.hasKeyGrid())
        hint << ", or q_in_regs = true so that V can reuse Q's bytes";
      return signalPassFailure();
    }

    Builder b(kernel.getContext());
    for (const BufferPlacement &buffer : plan.getBuffers())
      buffer.alloc.setOffsetAttr(b.getI64IntegerAttr(buffer.offset));
    kernel.setSmemBytesAttr(b.getI64IntegerAttr(total));

    if (!remarks)
      return;
    for (const BufferPlacement &buffer : plan.getBuffers()) {
      InFlightDiagnostic remark = buffer.alloc.emitRemark()
                                  << buffer.alloc.getName() << ": offset "
                                  << buffer.offset << ", " << buffer.bytes
                                  << " B, live [" << buffer.live.begin << ", "
                                  << buffer.live.end << "]";
      SmallVector<StringRef> sharing =
          getBuffersSharingBytes(plan.getBuffers(), buffer);
      if (!sharing.empty())
        remark << ", shares bytes with " << llvm::join(sharing, ", ");
    }
    kernel.emitRemark() << "shared memory: " << total << " B of "
                        << arch.smemPerBlock << " B per block on " << arch.name
                        << "; " << blocksPerSMBySmem(arch, total)
                        << " block(s) per SM by shared memory ("
                        << arch.smemPerSM << " B per SM, "
                        << arch.smemReservedPerBlock
                        << " B reserved per block)";
  }
};
} // namespace
