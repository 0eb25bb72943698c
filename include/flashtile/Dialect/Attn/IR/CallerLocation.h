//===- CallerLocation.h - Where a program's builder call was written ------===//
//
// The C++ front ends' one located-error pattern. Every builder call a user
// writes (a TileBuilder op, a hook's function or tensor read) takes the
// caller's file and line as defaulted arguments (FLASHTILE_CALLER), and the
// op it builds is located there (getCallerLocation), so that a verifier's or
// tracer's diagnostic names the user's line. The Python front end's
// counterpart is flashtile._tracer._user_location.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_DIALECT_ATTN_IR_CALLERLOCATION_H
#define FLASHTILE_DIALECT_ATTN_IR_CALLERLOCATION_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

/// The caller's file and line, filled in at each call site.
#define FLASHTILE_CALLER                                                       \
  const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()

namespace flashtile::attn {

/// The location of a call written at `file`:`line`; `fallback` when the
/// file is unknown (a null `file`).
inline mlir::Location getCallerLocation(const char *file, unsigned line,
                                        mlir::Location fallback) {
  if (!file)
    return fallback;
  return mlir::FileLineColLoc::get(fallback.getContext(), file, line, 0);
}

} // namespace flashtile::attn

#endif // FLASHTILE_DIALECT_ATTN_IR_CALLERLOCATION_H
