//===- GlobalAccess.h - Tensors in global memory ----------------*- C++ -*-===//
//
// Private to lib/Conversion/AttnToNVVM: the descriptor of a tensor argument
// and the rows of one (batch, head) of a sequence tensor, contiguous or paged.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_CONVERSION_ATTNTONVVM_GLOBALACCESS_H
#define FLASHTILE_LIB_CONVERSION_ATTNTONVVM_GLOBALACCESS_H

#include "Emitter.h"

namespace flashtile::attn::lowering {

/// The descriptor of a tensor in global memory, chosen by its type alone:
/// MLIR's memref descriptor of its rank (allocated and aligned pointer,
/// offset, extents, strides; i64) with global pointers. The kernel lowering
/// builds one per tensor argument from its parameters (a sequence
/// tensor's batch extent is the batch parameter).
mlir::LLVM::LLVMStructType getGlobalTensorDescType(mlir::MLIRContext *ctx,
                                                   int64_t rank);

class TileOpContext;

/// The rows of one (batch, head) of a rank-4 sequence tensor (Q, K, V, O,
/// ...), from its descriptor (getGlobalTensorDescType):
/// the address of 16-byte chunk `chunk` of row `row`. With `packedBy` (a
/// kernel with packed rows), the rows of Q or O are the packed (position,
/// head) pairs of the group whose first head is `head`: seqlen() counts
/// seqlen * G of them.
class TensorRows {
public:
  TensorRows(Emitter &e, mlir::Value desc, mlir::Value batch,
             mlir::Value head, TileOpContext *packedBy = nullptr);
  /// The rows of K or V in a page pool (attn.copy_async's `pages`), read
  /// through the block table, page size and page count parameters of the
  /// llvm.func that `pagedIn` belongs to.
  TensorRows(Emitter &e, mlir::Value desc, mlir::Value batch,
             mlir::Value head, mlir::Operation *pagedIn);
  mlir::Value seqlen() const { return length; }
  bool isPaged() const { return pages.has_value(); }
  mlir::Value chunkAddress(mlir::Value row, mlir::Value chunk);

  /// Paged: the element offset (i64) of row `row`'s start, through the
  /// block table. Any row, in range or not, gives an offset inside the
  /// pool: negative rows read row 0, and slots and entries are clamped.
  mlir::Value pagedRowOffset(mlir::Value row);
  /// The address of chunk `chunk` of the row at element offset `rowOffset`.
  mlir::Value chunkAddressAt(mlir::Value rowOffset, mlir::Value chunk);

private:
  /// base, length and the batch, sequence and head strides, from the
  /// tensor's descriptor.
  void readDescriptor(mlir::Value desc);

  Emitter &e;
  TileOpContext *packedBy;
  mlir::Value base, length, strideBatch, strideSeq, strideHead, headOffset;
  struct PageTable {
    mlir::Value pageSize, lastPage, lastSlot, strideBatch, tableRow,
        tableStride;
  };
  std::optional<PageTable> pages;
};

} // namespace flashtile::attn::lowering

#endif // FLASHTILE_LIB_CONVERSION_ATTNTONVVM_GLOBALACCESS_H
