//===- DiagonalTableKernel.cpp - The diagonal table's kernel --------------===//
//
// The `<name>_diagonal_table` kernel of a kernel whose score_mod has a
// diagonal term (KernelABI.h): same parameters, written directly as an
// llvm.func.
//
//===----------------------------------------------------------------------===//

#include "HookEmitter.h"
#include "Patterns.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

/// One thread per entry of a row, one row per (head or 0, batch or 0) on the
/// grid's y and z axes. Entry i holds the term at k - q = i - origin,
/// evaluated at q = 0, k = i - origin: the term depends on q and k only
/// through k - q (DiagonalTerm.h), so any pair with that difference gives
/// the same value. The score argument is never read by the term.
LogicalResult lowering::buildDiagonalTableKernel(KernelOp kernel) {
  DiagonalTable table = getDiagonalTable(kernel);
  Location loc = table.term.op->getLoc();
  OpBuilder b(kernel);
  createKernelFunc(b, kernel, kDiagonalTableKernelSuffix,
                   kDiagonalTableThreads, loc);
  Emitter e(b, loc);
  Type i32 = b.getI32Type();
  Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  Operation *anchor = tid.getDefiningOp();
  Value head = NVVM::BlockIdYOp::create(b, loc, i32);
  Value batch = NVVM::BlockIdZOp::create(b, loc, i32);
  Value index =
      e.add(e.mul(NVVM::BlockIdXOp::create(b, loc, i32), kDiagonalTableThreads),
            tid);
  Value row = getDiagonalTableRowLength(e, anchor, table);
  Value diagonal = e.sub(index, getDiagonalTableOrigin(e, anchor, table));

  HookEmitter hooks(e, anchor);
  Value value = hooks.emitTerm(table.op.getScoreMod(),
                               {e.f32(0.0f), batch, head, e.i32(0), diagonal},
                               table.term.op);
  Value address =
      getDiagonalTableEntry(e, anchor, table, batch, head, index);
  IRRewriter rewriter(b);
  emitIf(rewriter, loc, e.slt(index, row), [&] {
    LLVM::StoreOp::create(rewriter, loc, value, address, /*alignment=*/4);
  });
  LLVM::ReturnOp::create(rewriter, loc, ValueRange());
  return success();
}
