//===- GlobalAccess.cpp - Tensors in global memory ------------------------===//

#include "GlobalAccess.h"

#include "KernelParams.h"
#include "TileOpContext.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;
using namespace flashtile::attn::lowering;

LLVM::LLVMStructType lowering::getGlobalTensorDescType(MLIRContext *ctx,
                                                       int64_t rank) {
  Type i64 = IntegerType::get(ctx, 64);
  auto ptr = LLVM::LLVMPointerType::get(ctx, 1);
  if (rank == 0)
    return LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr, i64});
  auto array = LLVM::LLVMArrayType::get(i64, rank);
  return LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr, i64, array, array});
}

void TensorRows::readDescriptor(Value desc) {
  // A (batch, rows, heads, dim) tensor.
  MemRefDescriptor d(desc);
  OpBuilder &b = e.builder();
  Location loc = e.location();
  base = d.alignedPtr(b, loc);
  length = e.trunc32(d.size(b, loc, 1));
  strideBatch = d.stride(b, loc, 0);
  strideSeq = d.stride(b, loc, 1);
  strideHead = d.stride(b, loc, 2);
}

TensorRows::TensorRows(Emitter &e, Value desc, Value batch, Value head,
                       TileOpContext *packedBy)
    : e(e), packedBy(packedBy) {
  readDescriptor(desc);
  headOffset = e.add64(e.mul64(e.sext64(batch), strideBatch),
                       e.mul64(e.sext64(head), strideHead));
  if (packedBy)
    length = e.mul(length, packedBy->groupSize());
}

TensorRows::TensorRows(Emitter &e, Value desc, Value batch, Value head,
                       Operation *pagedIn)
    : e(e), packedBy(nullptr) {
  readDescriptor(desc);
  // The batch picks the block table's row, not the pool's page.
  headOffset = e.mul64(e.sext64(head), strideHead);
  LLVM::LLVMFuncOp func = getKernelFunc(pagedIn);
  auto indices = func->getAttrOfType<DenseI64ArrayAttr>(kPagedKVParamsAttrName);
  assert(indices && "the kernel lowering marks paged KV's parameters");
  auto param = [&](int64_t index) { return func.getArgument(index); };
  int64_t sizes = indices[0], table = indices[1];
  pages.emplace();
  pages->pageSize = param(sizes);
  pages->lastPage = e.sub(param(sizes + 1), e.i32(1));
  pages->strideBatch = strideBatch;
  // The block table (batch, max_pages): its row of `batch`.
  pages->tableStride = param(getExtraTensorStrideParam(table, 2, 1));
  pages->lastSlot = e.sub(
      LLVM::TruncOp::create(e.builder(), e.location(),
                            e.builder().getI32Type(),
                            param(getExtraTensorSizeParam(table, 1))),
      e.i32(1));
  pages->tableRow = e.gep(
      param(table),
      e.mul64(e.mul64(e.sext64(batch),
                      param(getExtraTensorStrideParam(table, 2, 0))),
              e.i64(4)));
}

Value TensorRows::pagedRowOffset(Value row) {
  // Row r is row r mod page_size of the page the table lists at
  // r / page_size. A slot past the table's row is clamped into it, and a
  // stale entry (past the sequence's keys) into the pool (unsigned, so
  // negative entries too): it may be read, never fault.
  OpBuilder &b = e.builder();
  Location loc = e.location();
  row = e.smax(row, e.i32(0));
  Value slot = LLVM::UDivOp::create(b, loc, row, pages->pageSize);
  Value within = e.sub(row, e.mul(slot, pages->pageSize));
  slot = LLVM::UMinOp::create(b, loc, slot, pages->lastSlot);
  Value entryAddress = e.gep(
      pages->tableRow,
      e.mul64(e.mul64(e.sext64(slot), pages->tableStride), e.i64(4)));
  // No kernel writes the block table: an invariant load (ld.global.nc,
  // the read-only cache path).
  Value page = LLVM::LoadOp::create(b, loc, b.getI32Type(), entryAddress,
                                    /*alignment=*/4, /*isVolatile=*/false,
                                    /*isNonTemporal=*/false,
                                    /*isInvariant=*/true);
  page = LLVM::UMinOp::create(b, loc, page, pages->lastPage);
  return e.add64(e.add64(e.mul64(e.sext64(page), pages->strideBatch),
                         e.mul64(e.sext64(within), strideSeq)),
                 headOffset);
}

Value TensorRows::chunkAddressAt(Value rowOffset, Value chunk) {
  Value element = e.add64(rowOffset, e.sext64(e.mul(chunk, 8)));
  return e.gep(base, e.mul64(element, e.i64(2)));
}

Value TensorRows::chunkAddress(Value row, Value chunk) {
  if (pages)
    return chunkAddressAt(pagedRowOffset(row), chunk);
  Value chunkOffset = e.sext64(e.mul(chunk, 8));
  Value rowOffset;
  if (packedBy) {
    auto [position, head] = packedBy->unpackRow(row);
    rowOffset = e.add64(e.mul64(e.sext64(position), strideSeq),
                        e.mul64(e.sext64(head), strideHead));
  } else {
    rowOffset = e.mul64(e.sext64(row), strideSeq);
  }
  Value element = e.add64(e.add64(headOffset, rowOffset), chunkOffset);
  return e.gep(base, e.mul64(element, e.i64(2)));
}
