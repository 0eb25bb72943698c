//===- SharedAccess.cpp - Shared memory and its swizzle -------------------===//

#include "SharedAccess.h"

#include "KernelParams.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

Value lowering::getSmemBase(Emitter &e, Operation *anchor) {
  auto module = anchor->getParentOfType<ModuleOp>();
  OpBuilder &b = e.builder();
  if (!module.lookupSymbol(kSmemSymbol)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto global = LLVM::GlobalOp::create(
        b, e.location(), LLVM::LLVMArrayType::get(b.getI8Type(), 0),
        /*isConstant=*/false, LLVM::Linkage::External, kSmemSymbol,
        Attribute(), /*alignment=*/128, /*addrSpace=*/3);
    (void)global;
  }
  return LLVM::AddressOfOp::create(b, e.location(),
                                   LLVM::LLVMPointerType::get(b.getContext(), 3),
                                   kSmemSymbol);
}

Value lowering::getSlotAddress(Emitter &e, Value buffer, MemRefType type,
                               Value tile) {
  int64_t slots = type.getDimSize(0);
  if (slots == 1)
    return buffer;
  Value slot;
  if (llvm::isPowerOf2_64(slots)) {
    slot = e.bitAnd(tile, slots - 1);
  } else {
    Value rem = LLVM::SRemOp::create(e.builder(), e.location(), tile,
                                     e.i32(slots));
    slot = e.urem(e.add(rem, slots), slots);
  }
  int64_t slotBytes =
      type.getDimSize(1) * type.getDimSize(2) * type.getElementTypeBitWidth() / 8;
  return e.gep(buffer, e.mul(slot, slotBytes));
}

/// Chunks per swizzle group for rows of `cols` 16-bit elements.
static int64_t swizzleGroup(int64_t cols) {
  return (cols / 8) % 8 == 0 ? 8 : 4;
}

/// The XOR key of `row`: row % 8 for groups of 8 chunks; (row / 2) % 4 for
/// groups of 4, whose rows of 12 chunks (d = 96) already start at bank group
/// 4 * row, so that rows 2r and 2r + 1 differ.
static Value swizzleKey(Emitter &e, Value row, int64_t group) {
  return group == 8 ? e.bitAnd(row, 7) : e.bitAnd(e.lshr(row, 1), 3);
}

Value lowering::swizzledOffset(Emitter &e, Value row, Value chunk,
                               int64_t cols) {
  Value physical = e.bitXor(chunk, swizzleKey(e, row, swizzleGroup(cols)));
  return e.add(e.mul(row, cols * 2), e.shl(physical, 4));
}

SwizzledTileAccess::SwizzledTileAccess(Emitter &e, Value tileBase,
                                       Value laneRow, Value laneChunk,
                                       int64_t cols)
    : e(e), laneChunk(laneChunk), cols(cols), group(swizzleGroup(cols)) {
  rowBase = e.gep(tileBase, e.mul(laneRow, cols * 2));
  key = swizzleKey(e, laneRow, group);
  bases.resize(group);
}

Value SwizzledTileAccess::address(int64_t rowOffset, int64_t chunkOffset) {
  assert(rowOffset % 8 == 0 && "row offsets keep the swizzle key");
  int64_t inGroup = chunkOffset % group;
  Value &base = bases[inGroup];
  if (!base) {
    Value chunk = e.bitXor(e.add(laneChunk, inGroup), key);
    base = e.gep(rowBase, e.shl(chunk, 4));
  }
  int64_t immediate = rowOffset * cols * 2 + (chunkOffset - inGroup) * 16;
  return immediate ? e.gep(base, e.i32(immediate)) : base;
}

TileChunkWalk::TileChunkWalk(Emitter &e, Value tid, int64_t threads,
                             int64_t rows, int64_t cols)
    : e(e), tid(tid), threads(threads), rows(rows), cols(cols),
      chunksPerRow(cols / 8), chunks(rows * (cols / 8)) {
  if (threads % chunksPerRow == 0 &&
      ((threads / chunksPerRow) % 8 == 0 || numSteps() == 1)) {
    rowsPerStep = threads / chunksPerRow;
    firstRow = e.udiv(tid, chunksPerRow);
    firstChunk = e.urem(tid, chunksPerRow);
    firstOffset = swizzledOffset(e, firstRow, firstChunk, cols);
  }
}

Value TileChunkWalk::chunkId(int64_t step) {
  return e.add(tid, step * threads);
}

Value TileChunkWalk::isActive(int64_t step) {
  return e.cmp(LLVM::ICmpPredicate::ult, chunkId(step), e.i32(chunks));
}

Value TileChunkWalk::row(int64_t step) {
  if (rowsPerStep)
    return step ? e.add(firstRow, step * rowsPerStep) : firstRow;
  return e.udiv(chunkId(step), chunksPerRow);
}

Value TileChunkWalk::chunk(int64_t step) {
  if (rowsPerStep)
    return firstChunk;
  return e.urem(chunkId(step), chunksPerRow);
}

Value TileChunkWalk::smemOffset(int64_t step) {
  if (rowsPerStep)
    return step ? e.add(firstOffset, step * rowsPerStep * cols * 2)
                : firstOffset;
  return swizzledOffset(e, row(step), chunk(step), cols);
}
