//===- DiagonalTerm.h - score_mod terms that depend on k - q only -*- C++ -*-===//
//
// Relative-position biases (T5 buckets, tables indexed by k - q) compute,
// per score, a value that depends on the query and key positions only
// through their difference. A thread's scores cover about two distinct
// differences for every three scores, so a costly term (a logarithm, a
// table read) costs nearly as much as the scores' softmax. Such a term is
// better computed once per (batch, head, k - q), by a small kernel that
// runs before the attention kernel, into a table that the attention kernel
// reads (KernelABI.h: the `diagonal_table` workspace).
//
// The analysis is symbolic. Each value of the score_mod is classified by how
// it changes when q and k move together by t:
//   - constant: not at all, and it does not involve q or k (b, h, sizes,
//     scalars, constants);
//   - shifted: by exactly +t (q or k plus a constant term);
//   - invariant: not at all, and it involves q and k (their difference);
//   - varying: anything else, the score included.
// A shifted minus a shifted value is invariant; any op on invariant and
// constant operands is invariant.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_ANALYSIS_DIAGONALTERM_H
#define FLASHTILE_DIALECT_ATTN_ANALYSIS_DIAGONALTERM_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

namespace flashtile::attn {

/// The unit attribute ExpandToTiles puts on the op of a score_mod whose
/// result the diagonal table holds.
inline constexpr const char *kDiagonalTermAttrName = "attn.diagonal_table";

/// The term of a score_mod (an attn.modify_scores op's) that a diagonal
/// table holds, and what it depends on besides k - q.
struct DiagonalTerm {
  mlir::Operation *op = nullptr;
  bool usesBatch = false, usesHead = false;
  explicit operator bool() const { return op != nullptr; }
};

/// The costliest f32 invariant value of score_mod region `scoreMod` that a
/// varying op uses, if computing it takes a table read, a transcendental
/// or a division (cheaper terms, such as ALiBi's slope * (k - q), stay
/// inline); null otherwise.
mlir::Operation *findDiagonalTerm(mlir::Region &scoreMod);

/// The marked term of `op`'s score_mod (kDiagonalTermAttrName), if any.
DiagonalTerm getDiagonalTerm(ModifyScoresOp op);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_ANALYSIS_DIAGONALTERM_H
