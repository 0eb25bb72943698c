//===- PipelineCopies.h - Software pipelining of KV copies -------*- C++
//-*-===//

#ifndef FLASHTILE_DIALECT_ATTN_TRANSFORMS_PIPELINECOPIES_H
#define FLASHTILE_DIALECT_ATTN_TRANSFORMS_PIPELINECOPIES_H

#include "flashtile/Dialect/Attn/IR/Attn.h"

namespace flashtile::attn {

/// Issues the KV tiles' copies of `kernel`'s tile program ahead of their
/// use (attn-pipeline-copies: the rule is in PipelineCopies.cpp). Copies it
/// does not recognise stay where they are; it cannot fail. With `remarks`,
/// each pipelined copy gets a remark saying how far ahead it goes.
void pipelineCopies(KernelOp kernel, bool remarks = false);

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_TRANSFORMS_PIPELINECOPIES_H
