//===- AttnDialect.cpp - The attn dialect, its attributes and types -------===//

#include "flashtile/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

#include "flashtile/Dialect/Attn/IR/AttnOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "flashtile/Dialect/Attn/IR/AttnAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "flashtile/Dialect/Attn/IR/AttnOpsTypes.cpp.inc"

void AttnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flashtile/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "flashtile/Dialect/Attn/IR/AttnOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "flashtile/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ArchAttr
//===----------------------------------------------------------------------===//

Attribute ArchAttr::parse(AsmParser &parser, Type) {
  std::string name;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeywordOrString(&name) ||
      parser.parseGreater())
    return {};
  const ArchInfo *info = lookupArch(name);
  if (!info) {
    parser.emitError(loc) << "unknown chip '" << name
                          << "'; known chips: " << knownArchNames();
    return {};
  }
  return ArchAttr::get(parser.getContext(), info->chip);
}

void ArchAttr::print(AsmPrinter &printer) const {
  printer << '<' << getInfo().name << '>';
}

LogicalResult attn::checkCodePathImplemented(Operation *op, ArchAttr arch) {
  const ArchInfo &info = arch.getInfo();
  switch (info.codePath) {
  case CodePath::Sm80:
    return success();
  case CodePath::Sm100:
    return op->emitError()
           << "chip " << info.name
           << " needs the tcgen05/TMEM code path, which is not implemented; "
              "the sm80 code path (ldmatrix, mma.sync, cp.async) serves "
           << archNamesWithCodePath(CodePath::Sm80);
  case CodePath::None:
    return op->emitError()
           << "chip " << info.name
           << " has no FlashTile code path: the sm80 path needs cp.async "
              "and bf16 mma.sync.m16n8k16 (compute capability 8.0 or "
              "later), which serve "
           << archNamesWithCodePath(CodePath::Sm80);
  }
  llvm_unreachable("unknown code path");
}

//===----------------------------------------------------------------------===//
// ConfigAttr
//===----------------------------------------------------------------------===//

std::optional<std::string> attn::explainInvalidConfig(int64_t tileM,
                                                     int64_t tileN,
                                                     int64_t stages,
                                                     int64_t warps,
                                                     int64_t kvWarps,
                                                     bool packGqa,
                                                     bool queryGrid) {
  std::string message;
  llvm::raw_string_ostream os(message);
  if (warps < 1 || warps > 16 || !llvm::isPowerOf2_64(warps))
    os << "warps = " << warps << " must be a power of two from 1 to 16";
  else if (kvWarps < 1 || warps % kvWarps != 0 || !llvm::isPowerOf2_64(kvWarps))
    os << "kv_warps = " << kvWarps
       << " must be a power of two that divides warps = " << warps;
  else if (int64_t rowWarps = warps / kvWarps;
           tileM <= 0 || tileM > 256 || tileM % (16 * rowWarps) != 0)
    os << "tile_m = " << tileM << " with warps = " << warps
       << (kvWarps > 1 ? " (" + std::to_string(rowWarps) + " along M)" : "")
       << " does not give each warp whole 16-row mma tiles: tile_m must be a "
          "multiple of 16 * warps = "
       << 16 * rowWarps << " and at most 256";
  else if (tileN <= 0 || tileN > 256 || tileN % (16 * kvWarps) != 0)
    os << "tile_n = " << tileN << " must be a multiple of " << 16 * kvWarps
       << " (the K of the PV mma.m16n8k16"
       << (kvWarps > 1 ? " times kv_warps" : "") << ") from 16 to 256";
  else if (stages < 1 || stages > 4)
    os << "stages = " << stages << " must be from 1 to 4";
  else if (queryGrid ? packGqa != (kvWarps > 1) : packGqa && kvWarps == 1)
    os << "kv_warps = " << kvWarps << " with pack_gqa = "
       << (packGqa ? "true" : "false")
       << ": KV warps and packed GQA rows go together (the decode family: "
          "pack_gqa = true with kv_warps > 1)";
  else
    return std::nullopt;
  return message;
}

LogicalResult ConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t tileM, int64_t tileN, int64_t stages,
                                 int64_t warps, bool, int64_t kvWarps,
                                 bool packGqa) {
  if (std::optional<std::string> problem =
          explainInvalidConfig(tileM, tileN, stages, warps, kvWarps, packGqa,
                               /*queryGrid=*/false))
    return emitError() << *problem;
  return success();
}

//===----------------------------------------------------------------------===//
// FragType
//===----------------------------------------------------------------------===//

FragLayout attn::getDefaultFragLayout(int64_t rank, Type elementType) {
  if (rank == 1)
    return FragLayout::Rows;
  if (elementType.isF32() || elementType.isInteger(32))
    return FragLayout::Acc;
  return FragLayout::A;
}

std::string attn::formatConfig(ConfigAttr config) {
  // The attribute's own printer owns the spelling: #attn.config<...>.
  std::string text;
  llvm::raw_string_ostream os(text);
  Attribute(config).print(os);
  llvm::StringRef inner = text;
  inner.consume_front("#attn.config<");
  inner.consume_back(">");
  return inner.str();
}

StringRef attn::stringifyFragLayout(FragLayout layout) {
  switch (layout) {
  case FragLayout::Acc:
    return "acc";
  case FragLayout::A:
    return "a";
  case FragLayout::Rows:
    return "rows";
  case FragLayout::Cols:
    return "cols";
  }
  llvm_unreachable("every layout kind has a name");
}

Type FragType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return {};
  if (shape.empty() || shape.size() > 2) {
    parser.emitError(parser.getNameLoc())
        << "!attn.frag must have rank 1 or 2, got rank " << shape.size();
    return {};
  }
  FragLayout layout = getDefaultFragLayout(shape.size(), elementType);
  if (succeeded(parser.parseOptionalComma())) {
    SMLoc at = parser.getCurrentLocation();
    StringRef kind;
    if (parser.parseKeyword(&kind))
      return {};
    std::optional<FragLayout> parsed;
    for (FragLayout l : {FragLayout::Acc, FragLayout::A, FragLayout::Rows,
                         FragLayout::Cols})
      if (kind == stringifyFragLayout(l))
        parsed = l;
    if (!parsed) {
      parser.emitError(at) << "unknown fragment layout '" << kind
                           << "'; expected acc, a, rows or cols";
      return {};
    }
    layout = *parsed;
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<FragType>(parser.getContext(), shape, elementType,
                                     layout);
}

void FragType::print(AsmPrinter &printer) const {
  printer << '<';
  for (int64_t dim : getShape())
    printer << dim << 'x';
  printer << getElementType();
  if (getLayout() != getDefaultFragLayout(getRank(), getElementType()))
    printer << ", " << stringifyFragLayout(getLayout());
  printer << '>';
}

LogicalResult FragType::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape, Type elementType,
                               FragLayout layout) {
  if (isVectorLayout(layout) != (shape.size() == 1))
    return emitError() << "a fragment of rank " << shape.size()
                       << " cannot have the '" << stringifyFragLayout(layout)
                       << "' layout: rank 1 is 'rows' or 'cols', rank 2 "
                          "'acc' or 'a'";
  if (layout == FragLayout::Cols && (!elementType.isF32() || shape[0] % 8))
    return emitError() << "a 'cols' fragment holds f32 values of a multiple "
                          "of 8 columns (one mma tile's width), got "
                       << shape[0] << " x " << elementType;
  if (layout == FragLayout::A &&
      (!elementType.isIntOrFloat() || elementType.getIntOrFloatBitWidth() > 16))
    return emitError() << "an A-operand fragment holds 16- or 8-bit "
                          "elements, got "
                       << elementType;
  return success();
}
