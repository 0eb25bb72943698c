//===- document_mask.cpp - Packed documents: attend within one's own ------===//
//
// Several documents packed into one sequence; a query sees the keys of its
// own document, causally. `doc_ids` is an extra (batch, seqlen) i32 tensor of
// per-token document ids.

#include "Example.h"

using namespace flashtile::dsl;

int main(int argc, char **argv) {
  AttentionSpec spec;
  spec.name = "document_mask";
  spec.dtype = DType::BF16;
  spec.headDim = 128;
  spec.causal = true;
  Tensor docIds = spec.addTensor("doc_ids", DType::I32, 2);
  spec.maskMod = [=](Idx b, Idx h, Idx q, Idx k) {
    return docIds(b, q) == docIds(b, k);
  };
  return flashtile::examples::printKernel(argc, argv, spec);
}
