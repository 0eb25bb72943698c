//===- Tile.h - C++ DSL: kernels written in the tile language ---*- C++ -*-===//
//
// For variants that change the algorithm, not just a score or a mask: the
// program of one block, written with the tile builder (TileBuilder.h) and
// scalar math traced like the hooks' (Hooks.h):
//
//   TileKernelSpec spec;
//   spec.name = "sigmoid_attention";
//   Scalar bias = spec.addScalar("bias", DType::F32);
//   spec.body = [&](TileProgram &t) {
//     ...
//     Value p = t.map({s}, [&](ArrayRef<Expr> x, Expr row, Expr col) {
//       return 0.5f + 0.5f * tanh(0.5f * (x[0] * scale + bias));
//     });
//     ...
//   };
//   FailureOr<KernelOp> kernel = buildTileKernel(module, spec, loc);
//
// The program states tiles, copies, loops and math. The compiler owns the
// rest: thread layouts, shared-memory offsets (with the chip's limit, errors
// naming the program's buffers), and every wait and barrier, each proven
// needed (attn-insert-barriers).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DSL_TILE_H
#define FLASHTILE_DSL_TILE_H

#include "flashtile/DSL/FlashAttention.h"
#include "flashtile/Dialect/Attn/IR/TileBuilder.h"

#include <functional>

namespace flashtile::dsl {

class TileProgram;

/// A kernel written in the tile language: its signature (extra arguments
/// from KernelArgs), the config it is written for, and the program.
struct TileKernelSpec : KernelArgs {
  std::string name = "tile_kernel";
  Chip chip = Chip::sm_120;
  DType dtype = DType::BF16;
  int64_t headDim = 128;
  /// 0 means "same as headDim".
  int64_t headDimV = 0;
  /// The tile config (#attn.config) the program's tiles are sized for.
  int64_t tileM = 128, tileN = 128, stages = 1, warps = 8;
  bool qInRegs = true;
  /// The program of one block.
  std::function<void(TileProgram &)> body;
};

/// The builder a tile program gets: TileBuilder's ops, plus elementwise
/// math traced from Expr lambdas.
class TileProgram : public attn::TileBuilder {
public:
  /// Ops are located at the program's lines (useCallerLocations).
  TileProgram(mlir::OpBuilder &b, mlir::Location loc, attn::KernelOp kernel,
              const TileKernelSpec &spec)
      : TileBuilder(b, loc, kernel), spec(spec) {
    useCallerLocations(true);
  }

  const TileKernelSpec &getSpec() const { return spec; }
  /// Head dims as the buffers and fragments hold them (padded).
  int64_t headDim();
  int64_t headDimV();

  /// One element of a map: the operands' values (fragments' elements,
  /// scalars), the row and the column (-1 for a rank-1 result) within the
  /// tile; returns the f32 result element.
  using MapFn = std::function<Expr(llvm::ArrayRef<Expr>, Expr, Expr)>;
  /// attn.map with its body traced from `fn`; a misuse in `fn` is an error
  /// at the user's line and fails buildTileKernel.
  mlir::Value map(mlir::ValueRange operands, const MapFn &fn,
                  FLASHTILE_CALLER);
  using TileBuilder::map;

  bool hasFailed() const { return failed; }

private:
  const TileKernelSpec &spec;
  bool failed = false;
};

/// Appends the tile program of `spec` to `module` and verifies it; on an
/// error (a traced body's, a verifier's) the kernel is removed and the
/// diagnostic names the user's construct.
mlir::FailureOr<attn::KernelOp> buildTileKernel(mlir::ModuleOp module,
                                                const TileKernelSpec &spec,
                                                mlir::Location loc);

} // namespace flashtile::dsl

#endif // FLASHTILE_DSL_TILE_H
