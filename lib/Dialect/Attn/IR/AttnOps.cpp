//===- AttnOps.cpp - attn operations and their verifiers ------------------===//
//
// The verifiers are the user's first line of defence: each message names the
// operand, the numbers and what would be accepted.
//
//===----------------------------------------------------------------------===//

#include "flashtile/ABI/KernelRules.h"
#include "flashtile/Dialect/Attn/IR/Attn.h"
#include "flashtile/Dialect/Attn/Utils/MmaFragments.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include <cmath>

using namespace mlir;
using namespace flashtile;
using namespace flashtile::attn;

#define GET_OP_CLASSES
#include "flashtile/Dialect/Attn/IR/AttnOps.cpp.inc"

std::optional<std::string> attn::explainUnsupportedHeadDim(int64_t dim) {
  if (abi::isSupportedHeadDim(dim))
    return std::nullopt;
  return llvm::formatv("it must be a multiple of {0} from {0} to {1} (rows "
                       "move in 16-byte chunks)",
                       abi::kHeadDimGranule, abi::kMaxHeadDim)
      .str();
}

int64_t attn::getPaddedHeadDim(int64_t dim) {
  return abi::getPaddedHeadDim(dim);
}

float attn::getDefaultSoftmaxScale(int64_t headDim) {
  return abi::getDefaultSoftmaxScale(headDim);
}

/// The PTX identifier rule (PTX ISA, "Identifiers"), restricted to C
/// identifiers so that the name also works as a C symbol and a file stem.
std::optional<std::string> attn::explainInvalidKernelName(StringRef name) {
  constexpr size_t kMaxLength = 256;
  if (name.empty())
    return std::string("it is empty");
  if (name.size() > kMaxLength)
    return llvm::formatv("it has {0} characters, at most {1} are allowed",
                         name.size(), kMaxLength)
        .str();
  if (name.starts_with("__flashtile"))
    return std::string("names starting with '__flashtile' are reserved for "
                       "the compiler's own symbols");
  if (!llvm::isAlpha(name[0]) && name[0] != '_')
    return std::string("it must start with a letter or '_'");
  for (char c : name)
    if (!llvm::isAlnum(c) && c != '_')
      return llvm::formatv("{0} is not allowed: use ASCII letters, digits "
                           "and '_'",
                           llvm::isPrint(c)
                               ? "character '" + std::string(1, c) + "'"
                               : "byte 0x" + llvm::utohexstr(uint8_t(c)))
          .str();
  return std::nullopt;
}

/// The head-dim rule, as a verifier error.
static LogicalResult verifyHeadDim(Operation *op, StringRef what,
                                   int64_t dim) {
  if (ShapedType::isDynamic(dim))
    return op->emitOpError() << what << " must be static";
  if (std::optional<std::string> why = attn::explainUnsupportedHeadDim(dim))
    return op->emitOpError() << what << " = " << dim << " is not supported: "
                             << *why;
  return success();
}

/// True when the innermost dimension of `type` is contiguous.
static bool hasContiguousLastDim(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return !strides.empty() && strides.back() == 1;
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

/// Names the launch plan gives to the kernel's own scalar and sizes; no
/// argument may take one (nor a sequence tensor's name).
static bool isReservedArgName(StringRef name) {
  static const char *const kReserved[] = {"softmax_scale",
                                          // Paged KV's sizes (KernelABI.h).
                                          "page_size", "num_pages",
                                          "max_pages"};
  return llvm::is_contained(kReserved, name) ||
         llvm::is_contained(abi::kSizeNames, name);
}

/// The roles a kernel's tensors and extra arguments may declare.
static bool isArgRole(StringRef role) {
  return role == "in" || role == "out" || role == "accumulate";
}

SmallVector<TensorAttr> KernelOp::getDefaultTensorDecls(MLIRContext *ctx) {
  auto decl = [&](StringRef name, StringRef role, abi::SequenceSide side) {
    auto str = [&](StringRef v) { return StringAttr::get(ctx, v); };
    return TensorAttr::get(ctx, str(name), str(role), str(side.rows),
                           str(side.heads));
  };
  return {decl("q", "in", abi::kQuerySide), decl("k", "in", abi::kKeySide),
          decl("v", "in", abi::kKeySide), decl("o", "out", abi::kQuerySide),
          decl("lse", "out", abi::kQuerySide)};
}

SmallVector<TensorAttr> KernelOp::getTensorDecls() {
  if (ArrayAttr tensors = getTensorsAttr())
    return llvm::to_vector(tensors.getAsRange<TensorAttr>());
  return getDefaultTensorDecls(getContext());
}

unsigned KernelOp::getNumTensors() {
  ArrayAttr tensors = getTensorsAttr();
  unsigned declared = tensors ? tensors.size() : 5;
  // The verifier holds the block to the declaration; until then, never
  // more than there are.
  return std::min(declared, getBodyBlock().getNumArguments());
}

Value KernelOp::getTensor(StringRef name) {
  for (auto [i, decl] : llvm::enumerate(getTensorDecls()))
    if (decl.getName() == name && i < getBodyBlock().getNumArguments())
      return getBodyBlock().getArgument(i);
  return Value();
}

int64_t KernelOp::getExtraArgIndex(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &getBodyBlock() ||
      arg.getArgNumber() < getNumTensors())
    return -1;
  return arg.getArgNumber() - getNumTensors();
}

StringRef KernelOp::getExtraArgName(unsigned i) {
  return cast<StringAttr>((*getArgNames())[i]).getValue();
}

StringRef KernelOp::getExtraArgRole(unsigned i) {
  std::optional<ArrayAttr> roles = getArgRoles();
  return roles ? cast<StringAttr>((*roles)[i]).getValue() : "in";
}

std::pair<StringRef, StringRef> KernelOp::getArgNameAndRole(Value value) {
  int64_t extra = getExtraArgIndex(value);
  if (extra >= 0)
    return {getExtraArgName(extra), getExtraArgRole(extra)};
  TensorAttr decl = getTensorDecl(value);
  if (!decl)
    return {};
  return {decl.getName().getValue(), decl.getRole().getValue()};
}

TensorAttr KernelOp::getTensorDecl(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &getBodyBlock())
    return {};
  SmallVector<TensorAttr> decls = getTensorDecls();
  if (arg.getArgNumber() >= decls.size())
    return {};
  return decls[arg.getArgNumber()];
}

ProblemAttr KernelOp::getProblemInfo() {
  auto attentions = getBodyBlock().getOps<AttentionOp>();
  if (attentions.empty()) {
    if (ProblemAttr problem = getProblemAttr())
      return problem;
    return getTileProgramProblem();
  }
  AttentionOp attention = *attentions.begin();
  auto [left, right] = attention.getEffectiveWindow();
  Builder b(getContext());
  int64_t pageTable = -1;
  if (Value table = attention.getBlockTable())
    pageTable = getExtraArgIndex(table);
  return ProblemAttr::get(getContext(), attention.getCausal(), left, right,
                          b.getF32FloatAttr(attention.getScale()), pageTable);
}

/// A tile program states its problem through its ops: the window of its
/// first attn.kv_bounds (none: every key) and the default of its
/// attn.softmax_scale (none: 1 / sqrt(head_dim)).
ProblemAttr KernelOp::getTileProgramProblem() {
  int64_t left = -1, right = -1;
  auto bounds = getBodyBlock().getOps<KVBoundsOp>();
  if (!bounds.empty()) {
    left = (*bounds.begin()).getWindowLeft();
    right = (*bounds.begin()).getWindowRight();
  }
  auto scales = getBodyBlock().getOps<SoftmaxScaleOp>();
  // A kernel without Q has no default scale of its own: 1.
  float scale = 1.0f;
  if (!scales.empty())
    scale = (*scales.begin()).getDefaultValue().convertToFloat();
  else if (Value q = getQ())
    scale = getDefaultSoftmaxScale(cast<MemRefType>(q.getType()).getDimSize(3));
  Builder b(getContext());
  return ProblemAttr::get(getContext(), /*causal=*/left < 0 && right == 0,
                          left, right, b.getF32FloatAttr(scale),
                          /*page_table=*/-1);
}

int64_t KernelOp::getPageTableArg() {
  ProblemAttr problem = getProblemInfo();
  return problem ? problem.getPageTable() : -1;
}

/// Extra arguments: tensors of any rank and the listed element types, or
/// scalars; each named by `arg_names`.
static LogicalResult verifyExtraArgs(KernelOp op) {
  auto extras = op.getExtraArgs();
  ArrayAttr names = op.getArgNamesAttr();
  size_t numNames = names ? names.size() : 0;
  if (numNames != extras.size())
    return op.emitOpError() << "has " << extras.size()
                            << " extra argument(s) after its tensors but "
                               "arg_names "
                               "lists "
                            << numNames << "; name each extra argument";
  if (std::optional<ArrayAttr> roles = op.getArgRoles()) {
    if (roles->size() != extras.size())
      return op.emitOpError() << "arg_roles lists " << roles->size()
                              << " role(s) for " << extras.size()
                              << " extra argument(s)";
    for (auto [i, role] : llvm::enumerate(roles->getAsValueRange<StringAttr>()))
      if (!isArgRole(role))
        return op.emitOpError() << "extra argument '" << op.getExtraArgName(i)
                                << "' has role '" << role
                                << "'; expected in, out or accumulate";
  }
  llvm::StringSet<> seen;
  for (TensorAttr decl : op.getTensorDecls())
    seen.insert(decl.getName().getValue());
  for (auto [i, arg] : llvm::enumerate(extras)) {
    StringRef name = op.getExtraArgName(i);
    unsigned position = op.getNumTensors() + i;
    if (std::optional<std::string> why = attn::explainInvalidKernelName(name))
      return op.emitOpError() << "extra argument #" << position << " name '"
                              << name << "' is invalid: " << *why;
    if (isReservedArgName(name) || op.getTensor(name))
      return op.emitOpError() << "extra argument #" << position << " name '"
                              << name << "' is taken by the kernel's own "
                                         "arguments and sizes";
    if (!seen.insert(name).second)
      return op.emitOpError() << "extra argument name '" << name
                              << "' is used twice";
    Type type = arg.getType();
    if (auto memref = dyn_cast<MemRefType>(type)) {
      Type elt = memref.getElementType();
      if (!elt.isF16() && !elt.isBF16() && !elt.isF32() &&
          !elt.isInteger(32) && !elt.isInteger(64) && !elt.isInteger(8) &&
          !isa<Float8E4M3FNType, Float8E5M2Type>(elt))
        return op.emitOpError()
               << "extra tensor '" << name << "' has element type " << elt
               << "; supported: f16, bf16, f32, i32, i64, i8, f8E4M3FN, "
                  "f8E5M2";
      if (memref.getMemorySpace())
        return op.emitOpError() << "extra tensor '" << name
                                << "' must be in global memory, got " << type;
      SmallVector<int64_t> strides;
      int64_t offset;
      if (failed(memref.getStridesAndOffset(strides, offset)) ||
          offset != 0)
        return op.emitOpError() << "extra tensor '" << name
                                << "' must have a strided layout with offset "
                                   "0, got "
                                << type;
      // The caller's strides are passed at run time; a static stride would
      // be one the kernel assumes and the launch plan does not check. Only
      // a contiguous last dimension may be static.
      for (auto [d, stride] : llvm::enumerate(strides)) {
        bool last = d + 1 == strides.size();
        if (!ShapedType::isDynamic(stride) && !(last && stride == 1))
          return op.emitOpError()
                 << "extra tensor '" << name << "' has static stride "
                 << stride << " in dimension " << d
                 << "; strides are run-time values: use strided<[?, ..., ?]> "
                    "(the last may be 1)";
      }
      continue;
    }
    if (op.getExtraArgRole(i) != "in")
      return op.emitOpError() << "extra scalar '" << name
                              << "' is declared '" << op.getExtraArgRole(i)
                              << "'; a scalar is always an input ('in')";
    if (type.isInteger(32) || type.isInteger(64) || type.isF32())
      continue;
    return op.emitOpError() << "extra argument '" << name << "' has type "
                            << type
                            << "; supported: memref (tensor) or i32, i64, f32 "
                               "(scalar)";
  }
  return success();
}

/// A kernel tensor lives in global memory and takes its sizes and strides
/// at run time: the launch plan binds them from the caller's tensors, so a
/// static size or stride in the type would be ignored. Only the head dim
/// (the last dimension of Q, K, V, O) and its unit stride are static.
static LogicalResult verifyRunTimeShape(KernelOp kernel, StringRef name,
                                        MemRefType type, bool isLse) {
  if (Attribute space = type.getMemorySpace())
    if (!isa<IntegerAttr>(space) || cast<IntegerAttr>(space).getInt() != 0)
      return kernel.emitOpError()
             << name << " must be in global memory (memory space 0), got "
             << type;
  int64_t dynamicDims = isLse ? type.getRank() : type.getRank() - 1;
  for (int64_t d = 0; d < dynamicDims; ++d)
    if (!type.isDynamicDim(d))
      return kernel.emitOpError()
             << name << " dimension " << d << " is " << type.getDimSize(d)
             << "; sizes other than the head dim are run-time values: write "
                "? (got "
             << type << ")";
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return kernel.emitOpError() << name << " has a layout FlashTile cannot "
                                   "read: "
                                << type;
  if (offset != 0 && !ShapedType::isDynamic(offset))
    return kernel.emitOpError()
           << name << " has a static offset " << offset
           << "; the caller's pointer carries the offset (got " << type << ")";
  if (!type.getLayout().isIdentity())
    for (int64_t d = 0; d + 1 < type.getRank(); ++d)
      if (!ShapedType::isDynamic(strides[d]))
        return kernel.emitOpError()
               << name << " stride " << d << " is " << strides[d]
               << "; strides other than the last are run-time values: write "
                  "? (got "
               << type << ")";
  return success();
}

/// How messages name sequence tensor `decl`: the forward's five by their
/// capitals (Q, K, V, O, LSE), a declared one by its name.
static std::string describeTensor(KernelOp op, TensorAttr decl) {
  if (!op.getTensorsAttr())
    return decl.getName().getValue().upper();
  return ("tensor '" + decl.getName().getValue() + "'").str();
}

/// A declaration's own rules: its name, role and sizes.
static LogicalResult verifyTensorDecl(KernelOp op, TensorAttr decl,
                                      llvm::StringSet<> &seen) {
  StringRef name = decl.getName().getValue();
  if (std::optional<std::string> why = explainInvalidKernelName(name))
    return op.emitOpError()
           << "tensor name '" << name << "' is invalid: " << *why;
  if (isReservedArgName(name))
    return op.emitOpError() << "tensor name '" << name
                            << "' is taken by the kernel's own scalar and "
                               "sizes";
  if (!seen.insert(name).second)
    return op.emitOpError() << "tensor name '" << name << "' is used twice";
  StringRef role = decl.getRole().getValue();
  if (!isArgRole(role) && role != "workspace")
    return op.emitOpError() << "tensor '" << name << "' has role '" << role
                            << "'; expected in, out, accumulate or workspace";
  if (StringAttr order = decl.getOrder()) {
    if (order.getValue() != TensorAttr::kCTiles)
      return op.emitOpError() << "tensor '" << name << "' has order '"
                              << order.getValue() << "'; the one order is '"
                              << TensorAttr::kCTiles << "'";
    // The plan allocates, pads and aligns a workspace; an argument's
    // layout is its caller's.
    if (role != "workspace")
      return op.emitOpError()
             << "tensor '" << name << "' is in order '" << order.getValue()
             << "' but has role '" << role
             << "'; only a workspace (whose bytes the plan lays out) can be";
  }
  StringRef rows = decl.getRows().getValue(),
            heads = decl.getHeads().getValue();
  for (abi::SequenceSide side : abi::kSequenceSides)
    if (rows == side.rows && heads == side.heads)
      return success();
  return op.emitOpError() << "tensor '" << name << "' has rows '" << rows
                          << "' and heads '" << heads << "'; expected "
                          << abi::kQuerySide.rows << " and "
                          << abi::kQuerySide.heads << " (query side) or "
                          << abi::kKeySide.rows << " and "
                          << abi::kKeySide.heads << " (key side)";
}

/// The sequence tensors: each a rank-4 (batch, rows, heads, dim) tensor or
/// a rank-3 f32 (batch, heads, rows) one, in global memory with run-time
/// sizes and strides; then what attention asks of q, k, v, o and lse.
static LogicalResult verifyTensorCount(KernelOp op) {
  size_t declared = op.getTensorDecls().size();
  unsigned args = op.getBodyBlock().getNumArguments();
  if (args >= declared)
    return success();
  if (!op.getTensorsAttr())
    return op.emitOpError()
           << "expects " << declared
           << " tensor arguments (Q, K, V, O, LSE), got " << args;
  return op.emitOpError() << "declares " << declared << " tensors but has "
                          << args << " arguments";
}

/// A workspace's sizes come from the arguments: each size it is declared
/// over must be some argument tensor's too (the plan binds sizes to
/// arguments), and batch with them.
static LogicalResult verifyWorkspaceSizes(KernelOp op,
                                          ArrayRef<TensorAttr> decls) {
  llvm::StringSet<> bound;
  for (TensorAttr decl : decls)
    if (decl.getRole().getValue() != "workspace") {
      bound.insert(decl.getRows().getValue());
      bound.insert(decl.getHeads().getValue());
    }
  for (TensorAttr decl : decls) {
    if (decl.getRole().getValue() != "workspace")
      continue;
    for (StringAttr size : {decl.getRows(), decl.getHeads()})
      if (!bound.contains(size.getValue()))
        return op.emitOpError()
               << "workspace '" << decl.getName().getValue()
               << "' is sized by '" << size.getValue()
               << "', which no argument tensor is declared over; the plan "
                  "takes sizes from the arguments";
  }
  return success();
}

static LogicalResult verifyTensors(KernelOp op) {
  SmallVector<TensorAttr> decls = op.getTensorDecls();
  if (op.getTensorsAttr() && failed(verifyWorkspaceSizes(op, decls)))
    return failure();
  Block &body = op.getBodyBlock();
  bool declared = static_cast<bool>(op.getTensorsAttr());
  llvm::StringSet<> seen;
  Type sixteenBit;
  for (auto [i, decl] : llvm::enumerate(decls)) {
    if (declared && failed(verifyTensorDecl(op, decl, seen)))
      return failure();
    std::string what = describeTensor(op, decl);
    Type argType = body.getArgument(i).getType();
    auto type = dyn_cast<MemRefType>(argType);
    // The forward's LSE is its fifth; a declared tensor of rank 3 is one.
    bool rowTensor = declared ? type && type.getRank() == 3 : i == 4;
    unsigned rank = rowTensor ? 3 : 4;
    if (!type || type.getRank() != rank) {
      if (!declared)
        return op.emitOpError() << what << " must be a rank-" << rank
                                << " memref, got " << argType;
      return op.emitOpError() << what
                              << " must be a rank-4 (batch, rows, heads, "
                                 "dim) or rank-3 (batch, heads, rows) "
                                 "memref, got "
                              << argType;
    }
    if (!hasContiguousLastDim(type))
      return op.emitOpError() << what
                              << " must have a contiguous last dimension "
                                 "(stride 1), got "
                              << type;
    if (failed(verifyRunTimeShape(op, what, type, rowTensor)))
      return failure();
    Type elt = type.getElementType();
    if (rowTensor && !elt.isF32())
      return op.emitOpError() << what << " must be f32, got " << elt;
    if (!declared)
      continue;
    if (decl.getRole().getValue() == "accumulate" && !elt.isF32())
      return op.emitOpError() << what
                              << " is accumulated with f32 atomics, "
                                 "so it must be f32, got "
                              << elt;
    if (decl.hasCTiles() && (rowTensor || !elt.isF32()))
      return op.emitOpError() << what
                              << " is stored in C-fragment tiles, so it "
                                 "must be a rank-4 f32 tensor, got "
                              << type;
    if (rowTensor)
      continue;
    if (!elt.isF16() && !elt.isBF16() && !elt.isF32())
      return op.emitOpError() << what << " has element type " << elt
                              << "; supported: f16, bf16, f32";
    if (failed(verifyHeadDim(op, what + " head dim", type.getDimSize(3))))
      return failure();
    // One 16-bit operand type per kernel, as attention's Q, K, V, O share.
    if (elt.isF32())
      continue;
    if (sixteenBit && elt != sixteenBit)
      return op.emitOpError() << "mismatched dtypes: " << what << " is " << elt
                              << " but an earlier tensor is " << sixteenBit;
    sixteenBit = elt;
  }

  // What attention asks of the tensors it names.
  auto typeOf = [](Value v) {
    return v ? cast<MemRefType>(v.getType()) : MemRefType();
  };
  MemRefType q = typeOf(op.getQ()), k = typeOf(op.getK()),
             v = typeOf(op.getV()), o = typeOf(op.getO());
  if (q) {
    Type dtype = q.getElementType();
    if (!dtype.isF16() && !dtype.isBF16())
      return op.emitOpError()
             << "Q has element type " << dtype << "; supported: f16, bf16";
    for (auto [name, type] : {std::pair{"K", k}, {"V", v}, {"O", o}})
      if (type && type.getElementType() != dtype)
        return op.emitOpError()
               << "mismatched dtypes: Q is " << dtype << " but " << name
               << " is " << type.getElementType();
    if (failed(verifyHeadDim(op, "head_dim", q.getDimSize(3))))
      return failure();
  }
  if (v && failed(verifyHeadDim(op, "head_dim_v", v.getDimSize(3))))
    return failure();
  if (q && k && k.getDimSize(3) != q.getDimSize(3))
    return op.emitOpError() << "K has head_dim " << k.getDimSize(3)
                            << " but Q has " << q.getDimSize(3);
  if (v && o && o.getDimSize(3) != v.getDimSize(3))
    return op.emitOpError() << "O has head_dim " << o.getDimSize(3)
                            << " but V has " << v.getDimSize(3);
  return success();
}

LogicalResult KernelOp::verify() {
  if (std::optional<std::string> why = explainInvalidKernelName(getSymName()))
    return emitOpError() << "name '" << getSymName()
                         << "' cannot be a kernel's PTX name: " << *why;
  Block &body = getBodyBlock();
  if (failed(verifyTensorCount(*this)) || failed(verifyExtraArgs(*this)) ||
      failed(verifyTensors(*this)))
    return failure();
  // Kernel level (an attn.attention) or tile level (none), never both: the
  // plan and the expansion describe one attention and nothing else.
  AttentionOp attention;
  for (Operation &op : body) {
    auto current = dyn_cast<AttentionOp>(op);
    if (current && attention)
      return current.emitOpError()
             << "is the kernel's second attn.attention; a kernel computes "
                "one attention";
    if (current)
      attention = current;
  }
  if (attention)
    for (Operation &op : body)
      if (!isa<AttentionOp>(op))
        return op.emitOpError()
               << "cannot sit next to an attn.attention: a kernel-level "
                  "kernel holds only its attention (tile-level ops come "
                  "from its expansion, or make a tile program without one)";
  // The config's grid-dependent rule (KV warps on the query grid come with
  // packed rows); the attribute's verifier checked the rest.
  if (ConfigAttr config = getConfigAttr(); config && !hasKeyGrid())
    if (std::optional<std::string> problem = explainInvalidConfig(
            config.getTileM(), config.getTileN(), config.getStages(),
            config.getWarps(), config.getKvWarps(), config.getPackGqa()))
      return emitOpError() << "has a config invalid on the query grid: "
                           << *problem;
  if (std::optional<StringRef> grid = getGrid()) {
    if (*grid != "queries" && *grid != "keys")
      return emitOpError() << "has grid = \"" << *grid
                           << "\"; expected \"queries\" or \"keys\"";
    ConfigAttr config = getConfigAttr();
    if (hasKeyGrid() && (attention || (config && config.getPackGqa())))
      return emitOpError()
             << "has grid = \"keys\", whose blocks own key tiles; "
             << (attention ? "attn.attention" : "packed rows (pack_gqa)")
             << " tiles the query side";
  }
  if (ProblemAttr problem = getProblemAttr())
    if (int64_t table = problem.getPageTable(); table != -1) {
      auto extras = getExtraArgs();
      auto type = table >= 0 && table < static_cast<int64_t>(extras.size())
                      ? dyn_cast<MemRefType>(extras[table].getType())
                      : MemRefType();
      if (!type || type.getRank() != 2 ||
          !type.getElementType().isInteger(32))
        return emitOpError() << "problem's page_table = " << table
                             << " must name an extra i32 tensor of rank 2 "
                                "(the kernel has "
                             << extras.size() << " extra argument(s))";
    }
  return success();
}

//===----------------------------------------------------------------------===//
// FamilyOp
//===----------------------------------------------------------------------===//

SmallVector<KernelOp, 4> FamilyOp::getKernelOps() {
  SmallVector<KernelOp, 4> kernels;
  for (Attribute ref : getKernels())
    kernels.push_back(SymbolTable::lookupNearestSymbolFrom<KernelOp>(
        *this, cast<FlatSymbolRefAttr>(ref)));
  return kernels;
}

LogicalResult FamilyOp::verify() {
  SmallVector<KernelOp, 4> kernels = getKernelOps();
  llvm::SmallPtrSet<Operation *, 4> seen;
  KernelOp first;
  for (auto [ref, kernel] : llvm::zip(getKernels(), kernels)) {
    StringRef name = cast<FlatSymbolRefAttr>(ref).getValue();
    if (!kernel)
      return emitOpError() << "lists @" << name
                           << ", which is no attn.kernel of the module";
    if (!seen.insert(kernel).second)
      return emitOpError() << "lists @" << name << " twice";
    if (!kernel.getConfigAttr() ||
        !kernel.getBodyBlock().getOps<AttentionOp>().empty())
      return emitOpError() << "lists @" << name
                           << ", which is not a tile program with a stated "
                              "config; a family's kernels are";
    if (!first) {
      first = kernel;
      continue;
    }
    auto types = [](KernelOp k) {
      return llvm::to_vector(k.getBodyBlock().getArgumentTypes());
    };
    if (kernel.getTensorDecls() != first.getTensorDecls() ||
        types(kernel) != types(first) ||
        kernel.getArgNamesAttr() != first.getArgNamesAttr() ||
        kernel.getArgRolesAttr() != first.getArgRolesAttr())
      return emitOpError() << "lists @" << name << " and @"
                           << first.getSymName()
                           << ", whose arguments differ; a family's kernels "
                              "declare the same tensors and extra arguments "
                              "(the family's)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

// I64Attr getters return uint64_t; the window is signed (-1: unbounded).
std::pair<int64_t, int64_t> AttentionOp::getEffectiveWindow() {
  int64_t left = getWindowLeft(), right = getWindowRight();
  return {left, getCausal() ? 0 : right};
}

float AttentionOp::getScale() {
  if (FloatAttr scale = getSoftmaxScaleAttr())
    return scale.getValueAsDouble();
  return getDefaultSoftmaxScale(
      cast<MemRefType>(getQ().getType()).getDimSize(3));
}

/// The attn.yield ending `block`; null when the block is empty or ends in
/// another op (the verifiers report that instead of asking
/// Block::getTerminator, which requires a terminator).
static YieldOp getYield(Block &block) {
  return block.empty() ? YieldOp() : dyn_cast<YieldOp>(&block.back());
}

/// Checks a hook region's signature: `argTypes` in, one `resultType` out.
static LogicalResult verifyHook(Operation *op, Region &region, StringRef name,
                                TypeRange argTypes, Type resultType) {
  if (region.empty())
    return success();
  if (!region.hasOneBlock())
    return op->emitOpError() << name << " region must have one block, it has "
                             << region.getBlocks().size();
  Block &block = region.front();
  if (block.getArgumentTypes() != argTypes) {
    std::string expected, got;
    llvm::raw_string_ostream expectedOs(expected), gotOs(got);
    llvm::interleaveComma(argTypes, expectedOs);
    llvm::interleaveComma(block.getArgumentTypes(), gotOs);
    return op->emitOpError() << name << " region must take (" << expected
                             << "), got (" << got << ")";
  }
  YieldOp yield = getYield(block);
  if (!yield || yield.getValues().size() != 1 ||
      yield.getValues()[0].getType() != resultType)
    return op->emitOpError()
           << name << " region must yield exactly one " << resultType;
  return success();
}

/// The sink region of `op`, if any: (batch, head: index) -> f32, and the
/// hook contract.
static LogicalResult verifySink(Operation *op, Region &sink) {
  Builder b(op->getContext());
  Type index = b.getIndexType();
  if (failed(verifyHook(op, sink, "sink", {index, index}, b.getF32Type())))
    return failure();
  return verifyHookBody(op, sink, "sink");
}

/// The score_mod and mask_mod regions of `op`, either of which may be empty:
/// their signatures and the hook contract.
static LogicalResult verifyHooks(Operation *op, Region &scoreMod,
                                 Region &maskMod) {
  Builder b(op->getContext());
  Type index = b.getIndexType();
  if (failed(verifyHook(op, scoreMod, "score_mod",
                        {b.getF32Type(), index, index, index, index},
                        b.getF32Type())) ||
      failed(verifyHook(op, maskMod, "mask_mod",
                        {index, index, index, index}, b.getI1Type())) ||
      failed(verifyHookBody(op, scoreMod, "score_mod")) ||
      failed(verifyHookBody(op, maskMod, "mask_mod")))
    return failure();
  return success();
}

LogicalResult AttentionOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  // The forward's interface is attention's: its five tensors, in order.
  if (kernel.getTensorsAttr() &&
      kernel.getTensorsAttr() !=
          ArrayAttr::get(getContext(),
                         llvm::to_vector_of<Attribute>(
                             KernelOp::getDefaultTensorDecls(getContext()))))
    return emitOpError() << "needs the forward's tensors (q, k, v, o, lse: "
                            "the kernel's default); the kernel declares "
                            "others";
  static const char *const names[] = {"Q", "K", "V", "O", "LSE"};
  for (auto [i, operand] : llvm::enumerate(getOperands().take_front(5)))
    if (operand != kernel.getBodyBlock().getArgument(i))
      return emitOpError() << "operand #" << i << " must be the kernel's "
                           << names[i] << " argument";
  if (Value table = getBlockTable())
    if (kernel.getExtraArgIndex(table) < 0)
      return emitOpError() << "pages: the block table must be one of the "
                              "kernel's extra arguments (after LSE)";

  int64_t left = getWindowLeft(), right = getWindowRight();
  if (left < -1 || right < -1 || left > kMaxSequenceExtent ||
      right > kMaxSequenceExtent)
    return emitOpError() << "window (" << left << ", " << right
                         << ") is invalid: each side is -1 (unbounded) or a "
                            "number of keys from 0 to "
                         << kMaxSequenceExtent;
  if (getCausal() && right > 0)
    return emitOpError() << "causal conflicts with window_right = " << right
                         << ": causal means window_right = 0";
  if (FloatAttr scaleAttr = getSoftmaxScaleAttr()) {
    double scale = scaleAttr.getValueAsDouble();
    if (!(scale > 0.0) || !std::isfinite(scale))
      return emitOpError() << "softmax_scale = " << scale
                           << " must be finite and positive";
  }

  if (failed(verifySink(*this, getSink())))
    return failure();
  return verifyHooks(*this, getScoreMod(), getMaskMod());
}

//===----------------------------------------------------------------------===//
// Hook reads
//===----------------------------------------------------------------------===//

LogicalResult SizeOp::verify() {
  // The names attn.size accepts: the kernel rules' size names.
  if (llvm::is_contained(abi::kSizeNames, getName()))
    return success();
  InFlightDiagnostic diag = emitOpError() << "size '" << getName()
                                          << "' is unknown; expected one of ";
  llvm::interleaveComma(abi::kSizeNames, diag);
  return diag;
}

LogicalResult KernelArgOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (!kernel)
    return emitOpError() << "must be inside an attn.kernel";
  auto extras = kernel.getExtraArgs();
  uint64_t index = getIndex();
  if (index >= extras.size())
    return emitOpError() << "refers to extra argument " << index
                         << " but the kernel has " << extras.size();
  if (extras[index].getType() != getType())
    return emitOpError() << "has type " << getType()
                         << " but extra argument " << index << " is "
                         << extras[index].getType();
  return success();
}

/// The tile sizes a block-level range op (key_range, query_range,
/// block_ranges) takes: positive.
static LogicalResult verifyTileSizes(Operation *op, int64_t tileM,
                                     int64_t tileN) {
  if (tileM <= 0 || tileN <= 0)
    return op->emitOpError() << "tile sizes must be positive";
  return success();
}

/// The checks of a key_range body (attn.key_range, attn.query_range): it
/// takes (batch, head, q_idx) and yields the interval (lo, hi).
static LogicalResult verifyKeyInterval(Operation *op, Region &body,
                                       int64_t tileM, int64_t tileN) {
  Builder b(op->getContext());
  Type index = b.getIndexType();
  Block &block = body.front();
  if (block.getArgumentTypes() != TypeRange{index, index, index})
    return op->emitOpError() << "region must take (index, index, index): "
                                "batch, head, q_idx";
  YieldOp yield = getYield(block);
  if (!yield || yield.getValues().size() != 2 ||
      !yield.getValues()[0].getType().isIndex() ||
      !yield.getValues()[1].getType().isIndex())
    return op->emitOpError() << "region must yield (lo, hi) as two indices";
  if (failed(verifyTileSizes(op, tileM, tileN)))
    return failure();
  return verifyHookBody(op, body, op->getName().stripDialect());
}

LogicalResult KeyRangeOp::verify() {
  return verifyKeyInterval(*this, getBody(), getTileM(), getTileN());
}

LogicalResult QueryRangeOp::verify() {
  if (getTables().empty()) {
    if (getBody().empty())
      return emitOpError() << "needs a key_range body or tables";
    return verifyKeyInterval(*this, getBody(), getTileM(), getTileN());
  }
  if (!getBody().empty())
    return emitOpError() << "takes a key_range body or tables, not both";
  size_t expected = getExact() ? 4 : 2;
  if (getTables().size() != expected)
    return emitOpError() << "takes " << expected
                         << " tables (the first and the end KV tile per "
                            "query tile"
                         << (getExact() ? ", then the unmasked first and end"
                                        : "")
                         << "), got " << getTables().size();
  for (Value table : getTables()) {
    auto type = cast<MemRefType>(table.getType());
    if (type.getRank() != 3 || !type.getElementType().isF32())
      return emitOpError() << "tables are f32 (batch, heads, seqlen_q) "
                              "tensors, got "
                           << type;
  }
  return verifyTileSizes(*this, getTileM(), getTileN());
}

LogicalResult BlockRangesOp::verify() {
  Builder b(getContext());
  Type index = b.getIndexType();
  if (failed(verifyTileSizes(*this, getTileM(), getTileN())))
    return failure();
  // The entry a block reads is of the tile it owns: a query tile's KV
  // tiles, or (key_grid) a KV tile's query tiles.
  if (auto kernel = (*this)->getParentOfType<KernelOp>();
      kernel && kernel.hasKeyGrid() != getKeyGrid())
    return emitOpError()
           << (getKeyGrid()
                   ? "has key_grid (the query tiles of a KV tile), in a "
                     "kernel whose blocks own query tiles; drop key_grid"
                   : "ranges the KV tiles of a query tile, in a kernel whose "
                     "blocks own KV tiles (grid = \"keys\"); add key_grid");
  if (failed(verifyHook(*this, getMaskMod(), "mask_mod",
                        {index, index, index, index}, b.getI1Type())))
    return failure();
  return verifyHookBody(*this, getMaskMod(), "mask_mod");
}

LogicalResult ModifyScoresOp::verify() {
  auto s = cast<FragType>(getS().getType());
  if (s.getRank() != 2 || !s.getElementType().isF32())
    return emitOpError() << "scores must be a rank-2 f32 fragment, got " << s;
  if (getScoreMod().empty() && getMaskMod().empty())
    return emitOpError() << "has neither a score_mod nor a mask_mod region";
  return verifyHooks(*this, getScoreMod(), getMaskMod());
}

//===----------------------------------------------------------------------===//
// Tile-level ops
//===----------------------------------------------------------------------===//

int64_t SmemAllocOp::getSizeInBytes() {
  MemRefType type = getType();
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

/// The KV warps of the kernel around `op` (1 without a config): a score
/// fragment holds tile_n / kv_warps keys.
static int64_t getKvWarps(Operation *op) {
  auto kernel = op->getParentOfType<KernelOp>();
  ConfigAttr config = kernel ? kernel.getConfigAttr() : ConfigAttr();
  return config ? config.getKvWarps() : 1;
}

/// Whether the KV warps of the kernel around `op` split columns: a
/// key-grid kernel's (the backward's), where every mma splits its N over
/// them (transpose_b or split_n), so each accumulator and column vector is
/// the warp's share of its columns and no value is a partial sum. The
/// decode family's KV warps split K instead: its accumulators are partial.
static bool kvWarpsSplitColumns(Operation *op) {
  auto kernel = op->getParentOfType<KernelOp>();
  return kernel && kernel.hasKeyGrid() && getKvWarps(op) > 1;
}

LogicalResult KVSplitOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  ConfigAttr config = kernel ? kernel.getConfigAttr() : ConfigAttr();
  if (config && !config.getPackGqa())
    return emitOpError() << "splits KV in a kernel without packed rows: "
                            "split-KV belongs to the decode family "
                            "(pack_gqa)";
  return success();
}

LogicalResult SmemAllocOp::verify() {
  MemRefType type = getType();
  auto space = dyn_cast_or_null<IntegerAttr>(type.getMemorySpace());
  if (!space || space.getInt() != kSharedMemorySpace)
    return emitOpError() << "buffer must be in shared memory (address space "
                         << kSharedMemorySpace << "), got " << type;
  if (!type.hasStaticShape() || !type.getLayout().isIdentity())
    return emitOpError() << "buffer must have a static shape and the "
                            "identity layout, got "
                         << type;
  if (std::optional<int64_t> offset = getOffset())
    if (*offset < 0)
      return emitOpError() << "offset = " << *offset << " is negative";
  return success();
}

LogicalResult CopyAsyncOp::verify() {
  MemRefType src = getSrc().getType(), dst = getDst().getType();
  if (src.getElementType() != dst.getElementType())
    return emitOpError() << "copies " << src.getElementType() << " into a "
                         << dst.getElementType() << " buffer";
  if (getPaddedHeadDim(src.getDimSize(3)) != dst.getDimSize(2))
    return emitOpError() << "source rows have " << src.getDimSize(3)
                         << " elements, so buffer rows must have "
                         << getPaddedHeadDim(src.getDimSize(3))
                         << " (padded to whole swizzle groups), got "
                         << dst.getDimSize(2);
  if (getPages() && getPacked())
    return emitOpError() << "pages a copy of packed rows: only K and V (the "
                            "key rows) live in pages";
  // The kernel's problem says whether K and V are paged (and by which
  // argument); its copies of K and V must agree, or the lowering would
  // address a page pool as a contiguous tensor or the other way round.
  if (auto kernel = (*this)->getParentOfType<KernelOp>()) {
    int64_t pageTable = kernel.getPageTableArg();
    Value src = getSrc();
    bool keyRows = src == kernel.getK() || src == kernel.getV();
    if (keyRows && pageTable >= 0 &&
        getPages() != kernel.getExtraArgs()[pageTable])
      return emitOpError() << "copies K or V of a kernel whose problem pages "
                              "them by extra argument "
                           << pageTable << " without `pages` of it";
    if (getPages() && (!keyRows || pageTable < 0))
      return emitOpError() << "pages a copy, but "
                           << (keyRows ? "the kernel's problem has no "
                                         "page_table"
                                       : "its source is not K or V");
  }
  if (getPacked()) {
    auto kernel = (*this)->getParentOfType<KernelOp>();
    ConfigAttr config = kernel ? kernel.getConfigAttr() : ConfigAttr();
    if (!config || !config.getPackGqa())
      return emitOpError()
             << "copies packed rows in a kernel whose config has no pack_gqa";
  }
  return success();
}

/// The name and role of `tensor`, the tensor argument of `op`'s kernel
/// that `op` (a tile copy, load or store) accesses; `what` names the
/// operand in the error when it is no tensor argument.
static FailureOr<std::pair<StringRef, StringRef>>
getAccessedTensor(Operation *op, StringRef what, Value tensor) {
  auto kernel = op->getParentOfType<KernelOp>();
  std::pair<StringRef, StringRef> nameAndRole =
      kernel ? kernel.getArgNameAndRole(tensor)
             : std::pair<StringRef, StringRef>();
  if (nameAndRole.first.empty())
    return op->emitOpError() << what
                             << " must be a tensor argument of the kernel (a "
                                "declared tensor or one named in arg_names)";
  return nameAndRole;
}

/// One index per dimension of `type`, the tensor a tile access indexes.
static LogicalResult verifyIndexCount(Operation *op, MemRefType type,
                                      ValueRange indices) {
  if (static_cast<int64_t>(indices.size()) == type.getRank())
    return success();
  return op->emitOpError() << "takes " << type.getRank() << " indices into "
                           << type << ", got " << indices.size();
}

/// The source of a tile read (attn.copy_tile, attn.load_tile, whose
/// `verb` it is): a tensor argument of the kernel, 2-d or (batch, rows,
/// heads, dim) for a tile, (batch, heads, rows) for a `vector`, indexed in
/// every dimension, that the kernel reads (an input or a workspace).
static LogicalResult verifyTileSource(Operation *op, StringRef verb,
                                      Value src, ValueRange indices,
                                      bool vector = false) {
  auto accessed = getAccessedTensor(op, "the source", src);
  if (failed(accessed))
    return failure();
  auto [name, role] = *accessed;
  auto type = cast<MemRefType>(src.getType());
  int64_t rank = type.getRank();
  if (vector ? rank != 3 : rank != 2 && rank != 4)
    return op->emitOpError() << verb
                             << (vector ? " a vector of a (batch, heads, "
                                          "rows) tensor, got "
                                        : " a tile of a 2-d or (batch, rows, "
                                          "heads, dim) tensor, got ")
                             << type;
  if (failed(verifyIndexCount(op, type, indices)))
    return failure();
  if (role != "in" && role != "workspace")
    return op->emitOpError()
           << "reads tensor '" << name << "', whose role is '" << role
           << "'; a kernel reads its inputs and workspaces (what it writes, "
              "other blocks may still be writing)";
  return success();
}

/// Whether `value` (an index) is known to be a multiple of `k`: a constant,
/// or a product with such a factor, or a sum or difference of such terms.
static bool isKnownMultipleOf(Value value, int64_t k) {
  if (std::optional<int64_t> c = getConstantIntValue(value))
    return *c % k == 0;
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (isa<arith::MulIOp>(def))
    return isKnownMultipleOf(def->getOperand(0), k) ||
           isKnownMultipleOf(def->getOperand(1), k);
  if (isa<arith::AddIOp, arith::SubIOp>(def))
    return isKnownMultipleOf(def->getOperand(0), k) &&
           isKnownMultipleOf(def->getOperand(1), k);
  return false;
}

/// A tile access's `c_tiles` against its tensor's declared order: present
/// exactly when the tensor is stored in C-fragment tiles, and then the
/// access is of an accumulator whose row and column indices are known to
/// start tiles (16 x 8), so that each thread's elements of a tile are one
/// vector.
static LogicalResult verifyTileOrder(Operation *op, Value tensor,
                                     ValueRange indices, bool cTiles,
                                     bool accumulator) {
  auto kernel = op->getParentOfType<KernelOp>();
  TensorAttr decl = kernel ? kernel.getTensorDecl(tensor) : TensorAttr();
  bool declared = decl && decl.hasCTiles();
  if (declared != cTiles)
    return op->emitOpError()
           << (cTiles ? "has c_tiles, but its tensor is not declared in "
                        "order 'c_tiles'"
                      : "accesses a tensor declared in order 'c_tiles' "
                        "without c_tiles; add it (the builder does)");
  if (!cTiles)
    return success();
  if (!accumulator)
    return op->emitOpError() << "accesses a C-tiled tensor with a row or "
                                "column vector; only accumulator tiles";
  auto type = cast<MemRefType>(tensor.getType());
  int64_t rowDim = getTileRowDim(type), colDim = type.getRank() - 1;
  // An accumulator's tiles are the C of the 16-bit mma shape.
  MmaShape tile = *getOperandShape(16);
  if (!isKnownMultipleOf(indices[rowDim], tile.m))
    return op->emitOpError()
           << "accesses a C-tiled tensor at a row index not known to be a "
              "multiple of "
           << tile.m << " (a tile's first row); use a constant, or a "
           << "product with one";
  // The lowering tests a tile's columns against those left from the first
  // (one register), which a negative first column would overstate.
  std::optional<int64_t> column = getConstantIntValue(indices[colDim]);
  if (!column || *column < 0 || *column % tile.n != 0)
    return op->emitOpError()
           << "accesses a C-tiled tensor at a column index that is not a "
              "non-negative constant multiple of "
           << tile.n << " (a tile's first column)";
  return success();
}

LogicalResult CopyTileOp::verify() {
  MemRefType src = getSrc().getType(), dst = getDst().getType();
  if (failed(verifyTileSource(*this, "copies", getSrc(), getIndices())))
    return failure();
  // Its strides alias rows and heads in the row-major view a copy reads.
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (TensorAttr decl = kernel ? kernel.getTensorDecl(getSrc()) : TensorAttr())
    if (decl.hasCTiles())
      return emitOpError() << "copies from tensor '"
                           << decl.getName().getValue()
                           << "', which is stored in C-fragment tiles; read "
                              "it with attn.load_tile {c_tiles}";
  if (src.getElementType() != dst.getElementType())
    return emitOpError() << "copies " << src.getElementType() << " into a "
                         << dst.getElementType() << " buffer";
  // cp.async moves aligned 16-byte chunks: the column offset must start
  // one, which only a constant proves.
  int64_t chunk = 8 * abi::kCopyChunkBytes / dst.getElementTypeBitWidth();
  std::optional<int64_t> col = getConstantIntValue(getCol());
  if (!col || *col % chunk != 0)
    return emitOpError() << "column offset must be a constant multiple of "
                         << chunk << " (16 bytes of "
                         << dst.getElementType() << "), got "
                         << (col ? std::to_string(*col)
                                 : std::string("a run-time value"));
  if (dst.getDimSize(2) % chunk != 0)
    return emitOpError() << "buffer rows of " << dst.getDimSize(2)
                         << " elements are not whole 16-byte chunks ("
                         << chunk << " elements)";
  return success();
}

LogicalResult LoadTileOp::verify() {
  auto value = cast<FragType>(getResult().getType());
  MemRefType src = getSrc().getType();
  Type element = value.getElementType();
  bool vector = isVectorLayout(value.getLayout());
  if (vector ? !element.isF32()
             : !value.isAccumulator() ||
                   !(element.isF32() || element.isInteger(32)))
    return emitOpError() << "loads an f32 or i32 accumulator, or an f32 "
                            "row or column vector, got "
                         << value;
  if (failed(
          verifyTileSource(*this, "loads", getSrc(), getIndices(), vector)))
    return failure();
  // A 16-bit float tensor widens into an f32 accumulator (the backward's
  // dO and O).
  Type stored = src.getElementType();
  bool widens = element.isF32() && (stored.isF16() || stored.isBF16());
  if (stored != element && !widens)
    return emitOpError() << "loads " << element << " from a tensor of "
                         << stored << " (an f32 tile reads f32, f16 or bf16; "
                         << "an i32 tile reads i32)";
  if (getKvWarps(*this) != 1 && !kvWarpsSplitColumns(*this))
    return emitOpError() << "loads a tile in a kernel with KV warps that "
                            "split K (only a key-grid kernel's KV warps "
                            "split columns, each loading its share)";
  return verifyTileOrder(*this, getSrc(), getIndices(), getCTiles(), !vector);
}

int64_t attn::getTileRowDim(MemRefType tensor) {
  // (row, col), (batch, row, head, col) or (batch, head, row).
  int64_t rank = tensor.getRank();
  return rank == 2 ? 0 : rank == 4 ? 1 : 2;
}

int64_t StoreTileOp::getRowDim() { return getTileRowDim(getDst().getType()); }

int64_t StoreTileOp::getColDim() { return getDst().getType().getRank() - 1; }

LogicalResult StoreTileOp::verify() {
  auto value = cast<FragType>(getValue().getType());
  MemRefType dst = getDst().getType();
  Type element = value.getElementType();
  bool rows = value.getLayout() == FragLayout::Rows;
  if (rows ? !element.isF32()
           : !value.isAccumulator() || !(element.isF32() || element.isF16() ||
                                         element.isInteger(32)))
    return emitOpError() << "stores an accumulator of f32, f16 or i32, or an "
                            "f32 row state, got "
                         << value;
  auto kernel = (*this)->getParentOfType<KernelOp>();
  auto accessed = getAccessedTensor(*this, "the destination", getDst());
  if (failed(accessed))
    return failure();
  auto [name, role] = *accessed;
  int64_t rank = dst.getRank();
  if (rows ? rank != 3 : rank != 2 && rank != 4)
    return emitOpError() << "stores " << (rows ? "a row state" : "a tile")
                         << " into a "
                         << (rows ? "(batch, heads, rows) tensor"
                                  : "2-d or (batch, rows, heads, dim) tensor")
                         << ", got " << dst;
  if (failed(verifyIndexCount(*this, dst, getIndices())))
    return failure();
  Type stored = dst.getElementType();
  bool rounds = element.isF32() && (stored.isF16() || stored.isBF16());
  if (stored != element && (!rounds || getAccumulate()))
    return emitOpError() << (getAccumulate() ? "adds " : "stores ") << element
                         << " into a tensor of " << stored
                         << (getAccumulate() ? " (atomics add equal types)"
                                             : "");
  if (getAccumulate() && element.isF16())
    return emitOpError() << "adds f16 with atomics; accumulate in f32";
  StringRef expected = getAccumulate() ? "accumulate" : "out";
  if (role != expected && role != "workspace")
    return emitOpError() << (getAccumulate() ? "adds to" : "writes")
                         << " tensor '" << name << "', whose role is '" << role
                         << "'; declare it '" << expected << "' in "
                         << (kernel.getExtraArgIndex(getDst()) >= 0
                                 ? "the kernel's arg_roles"
                                 : "its #attn.tensor");
  // A paged kernel's key-side tensors are page pools, not rows.
  if (kernel.getPageTableArg() >= 0 && kernel.getExtraArgIndex(getDst()) < 0 &&
      kernel.getTensorDecls()[cast<BlockArgument>(getDst()).getArgNumber()]
              .getRows() == abi::kKeySide.rows)
    return emitOpError() << "stores into '" << name
                         << "', a page pool in this paged-KV kernel";
  if (getKvWarps(*this) != 1 && (!kvWarpsSplitColumns(*this) || rows))
    return emitOpError() << "stores a tile in a kernel with KV warps, whose "
                         << (rows ? "row states every KV warp of a row holds"
                                  : "accumulators are partial")
                         << " (a key-grid kernel's KV warps each store their "
                            "share of an accumulator's columns)";
  return verifyTileOrder(*this, getDst(), getIndices(), getCTiles(), !rows);
}

/// Checks that `type` is the fragment `shape` x `elementType`.
static LogicalResult expectFrag(Operation *op, StringRef what, Type type,
                                ArrayRef<int64_t> shape, Type elementType) {
  auto expected = FragType::get(op->getContext(), shape, elementType);
  if (type == expected)
    return success();
  return op->emitOpError() << what << " must be " << Type(expected) << ", got "
                           << type;
}

LogicalResult LoadFragOp::verify() {
  MemRefType src = getSrc().getType();
  if (src.getDimSize(0) != 1)
    return emitOpError() << "source must have one slot, got "
                         << src.getDimSize(0);
  return expectFrag(*this, "result", getResult().getType(),
                    {src.getDimSize(1), src.getDimSize(2)},
                    src.getElementType());
}

LogicalResult StoreFragOp::verify() {
  auto value = cast<FragType>(getValue().getType());
  MemRefType dst = getDst().getType();
  if (!value.isAccumulator() || !value.getElementType().isF32())
    return emitOpError() << "stores an f32 accumulator, got " << Type(value);
  if (dst.getDimSize(0) != 1)
    return emitOpError() << "destination must have one slot, got "
                         << dst.getDimSize(0);
  // With KV warps each warp stores its share of the buffer's columns.
  int64_t kvWarps = getKvWarps(*this);
  if (dst.getDimSize(1) != value.getDimSize(0) ||
      dst.getDimSize(2) != value.getDimSize(1) * kvWarps)
    return emitOpError() << "stores a " << value.getDimSize(0) << " x "
                         << value.getDimSize(1) << " tile"
                         << (kvWarps > 1 ? " per KV warp (" +
                                               std::to_string(kvWarps) + ")"
                                         : std::string())
                         << " into a buffer of " << dst.getDimSize(1) << " x "
                         << dst.getDimSize(2);
  Type stored = dst.getElementType();
  if (!stored.isF16() && !stored.isBF16())
    return emitOpError() << "rounds into f16 or bf16 buffers, got " << stored;
  return success();
}

void MmaOp::build(OpBuilder &builder, OperationState &state, Type d, Value a,
                  Value b, Value bTile, Value acc, bool transposeB,
                  int64_t kBegin, int64_t kEnd) {
  build(builder, state, d, a, /*a_tile=*/Value(), b, bTile, acc,
        /*transpose_a=*/false, transposeB, /*split_n=*/false, kBegin, kEnd,
        /*n_begin=*/0, /*n_end=*/0);
}

Type MmaOp::getAElementType() {
  if (auto frag = dyn_cast<FragType>(getA().getType()))
    return frag.getElementType();
  return cast<MemRefType>(getA().getType()).getElementType();
}

std::array<int64_t, 3> MmaOp::getProductShape(Type a, MemRefType b,
                                              bool transposeA,
                                              bool transposeB,
                                              int64_t kvWarps, bool splitN) {
  // A's tile as the block holds it, before any transpose: the fragment's
  // shape, or one slot of the buffer.
  int64_t rows, cols;
  if (auto frag = dyn_cast<FragType>(a)) {
    rows = frag.getDimSize(0);
    cols = frag.getDimSize(1);
  } else {
    auto buffer = cast<MemRefType>(a);
    rows = buffer.getDimSize(1);
    cols = buffer.getDimSize(2);
  }
  int64_t n = transposeB ? b.getDimSize(1) / kvWarps
                         : b.getDimSize(2) / (splitN ? kvWarps : 1);
  return transposeA ? std::array<int64_t, 3>{cols, rows, n}
                    : std::array<int64_t, 3>{rows, cols, n};
}

int64_t MmaOp::getM() {
  return getProductShape(getA().getType(), getB().getType(), getTransposeA(),
                         getTransposeB(), getKvWarps(*this),
                         getSplitN())[0];
}

int64_t MmaOp::getK() {
  return getProductShape(getA().getType(), getB().getType(), getTransposeA(),
                         getTransposeB(), getKvWarps(*this),
                         getSplitN())[1];
}

int64_t MmaOp::getN() {
  return getProductShape(getA().getType(), getB().getType(), getTransposeA(),
                         getTransposeB(), getKvWarps(*this),
                         getSplitN())[2];
}

int64_t MmaOp::getBK() {
  MemRefType b = getB().getType();
  if (getTransposeB())
    return b.getDimSize(2);
  return getSplitN() ? b.getDimSize(1) : b.getDimSize(1) / getKvWarps(*this);
}

LogicalResult MmaOp::verify() {
  MemRefType b = getB().getType();
  Type aElt = getAElementType(), bElt = b.getElementType();
  auto d = cast<FragType>(getD().getType());
  if (auto frag = dyn_cast<FragType>(getA().getType())) {
    if (frag.getLayout() != FragLayout::A)
      return emitOpError() << "A in registers must be an 'a'-layout "
                              "fragment (attn.convert makes one from an "
                              "accumulator), got "
                           << frag;
    if (getATile() || getTransposeA())
      return emitOpError() << "A in registers takes no slot and no "
                              "transpose_a";
  } else if (!getATile() &&
             cast<MemRefType>(getA().getType()).getDimSize(0) != 1) {
    return emitOpError() << "A's buffer has "
                         << cast<MemRefType>(getA().getType()).getDimSize(0)
                         << " slots, so A needs a slot index: %a[%tile]";
  }
  if (aElt != bElt)
    return emitOpError() << "mismatched operand types: A is " << aElt
                         << ", B is " << bElt;
  int64_t bits = aElt.getIntOrFloatBitWidth();
  if (bits == 8 && (getTransposeA() || !getTransposeB()))
    return emitOpError() << "8-bit operands are read with K contiguous: A "
                            "as [M][K] (no transpose_a) and B as [N][K] "
                            "(transpose_b); store V transposed for an 8-bit "
                            "P V";
  // The instruction decides the shape every dimension must be whole in.
  auto kernel = (*this)->getParentOfType<KernelOp>();
  std::optional<MmaInstruction> instr;
  if (kernel)
    instr = selectMma(kernel.getArch().getInfo(), aElt, bElt,
                      d.getElementType());
  else
    for (const MmaInstruction &i : getMmaInstructions())
      if (!instr && i.aBits == bits)
        instr = i;
  if (!instr)
    return emitOpError() << "no mma.sync multiplies " << aElt << " by "
                         << bElt << " into " << d.getElementType()
                         << (kernel ? " on " + kernel.getArch().getInfo().name
                                    : std::string())
                         << "; the table has f16/bf16 into f32, f16 into "
                            "f16, i8 into i32 and f8E4M3FN/f8E5M2 into f32";
  int64_t kvWarps = getKvWarps(*this);
  bool splitColumns = kvWarpsSplitColumns(*this);
  if (getSplitN() && (getTransposeB() || !splitColumns ||
                      !isa<MemRefType>(getA().getType())))
    return emitOpError() << "split_n splits the columns of B stored [K][N] "
                            "(no transpose_b) over a key-grid kernel's KV "
                            "warps, with A read whole from a buffer; this "
                            "mma has "
                         << (getTransposeB() ? "transpose_b"
                             : !splitColumns
                                 ? "no KV warps that split columns (kv_warps "
                                   "> 1 on the key grid)"
                                 : "A in registers");
  // A fragment there is the warp's share of its columns: as A, its K would
  // be a share, and the product a partial sum.
  if (splitColumns && isa<FragType>(getA().getType()))
    return emitOpError() << "takes A in registers in a key-grid kernel with "
                         << kvWarps
                         << " KV warps, where a fragment holds the warp's "
                            "share of its columns (a partial product); stage "
                            "A in shared memory (attn.store_frag) and read it "
                            "from there";
  if (kvWarpsSplitColumns(*this) && !getTransposeB() && !getSplitN())
    return emitOpError() << "reads B stored [K][N] in a key-grid kernel with "
                         << kvWarps
                         << " KV warps, which split columns: add split_n "
                            "(a split of K would leave partial sums)";
  int64_t m = getM(), k = getK(), n = getN();
  int64_t bK = getBK();
  if (k != bK)
    return emitOpError() << "A has K = " << k << " but B's tile has " << bK
                         << (getTransposeB() ? " columns"
                                             : " rows" + std::string(
                                                   kvWarps > 1 && !getSplitN()
                                                       ? " per KV warp"
                                                       : ""));
  if (m % instr->shape.m != 0 || n % (2 * instr->shape.n) != 0 ||
      k % instr->shape.k != 0)
    return emitOpError() << "M x N x K = " << m << " x " << n << " x " << k
                         << " must be whole multiples of " << instr->shape.m
                         << " x " << 2 * instr->shape.n << " x "
                         << instr->shape.k
                         << " (the mma shape; ldmatrix loads B two n-tiles "
                            "at a time)";
  auto [begin, end] = getKRange();
  if (begin >= end || end > k || begin % instr->shape.k != 0 ||
      end % instr->shape.k != 0)
    return emitOpError() << "k range [" << begin << ", " << end
                         << ") must be a non-empty slice of K = " << k
                         << " in whole " << instr->shape.k
                         << "-column mma steps";
  auto [nBegin, nEnd] = getNRange();
  if (nBegin >= nEnd || nEnd > n || nBegin % (2 * instr->shape.n) != 0 ||
      nEnd % (2 * instr->shape.n) != 0)
    return emitOpError() << "n range [" << nBegin << ", " << nEnd
                         << ") must be a non-empty slice of N = " << n
                         << " in whole pairs of " << instr->shape.n
                         << "-column mma n-tiles";
  auto expected = FragType::get(getContext(), {m, nEnd - nBegin},
                                d.getElementType(), FragLayout::Acc);
  if (d != expected)
    return emitOpError() << "result must be " << Type(expected) << ", got "
                         << Type(d);
  if (getAcc() && getAcc().getType() != d)
    return emitOpError() << "acc must have the result's type " << Type(d)
                         << ", got " << getAcc().getType();
  return success();
}

/// Refuses an op that needs whole rows of scores or partial sums over keys
/// in a kernel whose KV warps split columns (a key-grid kernel's).
static LogicalResult refuseColumnShares(Operation *op, StringRef needs) {
  if (!kvWarpsSplitColumns(op))
    return success();
  return op->emitOpError()
         << "needs " << needs << ", but this key-grid kernel's "
         << getKvWarps(op)
         << " KV warps each hold a share of the columns";
}

LogicalResult OnlineSoftmaxOp::verify() {
  if (failed(refuseColumnShares(*this, "whole rows of scores")))
    return failure();
  auto s = cast<FragType>(getS().getType());
  if (s.getRank() != 2 || !s.getElementType().isF32())
    return emitOpError() << "scores must be a rank-2 f32 fragment, got " << s;
  int64_t tileM = s.getDimSize(0);
  Type f32 = s.getElementType();
  if (failed(expectFrag(*this, "row_max", getRowMax().getType(), {tileM},
                        f32)))
    return failure();
  auto acc = cast<FragType>(getAcc().getType());
  if (acc.getRank() != 2 || acc.getDimSize(0) != tileM ||
      !acc.getElementType().isF32())
    return emitOpError() << "acc must be an f32 fragment with " << tileM
                         << " rows, got " << acc;
  auto p = cast<FragType>(getP().getType());
  if (p.getShape() != s.getShape() ||
      !(p.getElementType().isF16() || p.getElementType().isBF16()))
    return emitOpError() << "P must be an f16 or bf16 fragment shaped like S, "
                            "got "
                         << p;
  return success();
}

void KVLoopOp::build(OpBuilder &builder, OperationState &state, Value lower,
                     Value upper, ValueRange inits, bool masked) {
  state.addOperands({lower, upper});
  state.addOperands(inits);
  state.addTypes(inits.getTypes());
  if (masked)
    state.addAttribute(getMaskedAttrName(state.name), builder.getUnitAttr());
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  block->addArgument(builder.getIndexType(), state.location);
  for (Value init : inits)
    block->addArgument(init.getType(), init.getLoc());
}

LogicalResult KVLoopOp::verify() {
  Block &body = getBody().front();
  TypeRange inits = getInits().getTypes();
  if (body.getNumArguments() != inits.size() + 1 ||
      !body.getArgument(0).getType().isIndex() ||
      TypeRange(body.getArgumentTypes()).drop_front() != inits)
    return emitOpError() << "body must take (index, " << inits << ")";
  if (getResultTypes() != inits)
    return emitOpError() << "results must match iter_args";
  YieldOp yield = getYield(body);
  if (!yield || yield.getValues().getTypes() != inits)
    return emitOpError() << "body must yield " << inits;
  return success();
}

LogicalResult EpilogueOp::verify() {
  if (failed(refuseColumnShares(
          *this, "an O of whole rows (or KV warps' partial sums over keys)")))
    return failure();
  auto acc = cast<FragType>(getAcc().getType());
  MemRefType stage = getStage().getType();
  MemRefType o = getO().getType();
  if (acc.getRank() != 2 || !acc.getElementType().isF32())
    return emitOpError() << "acc must be a rank-2 f32 fragment";
  int64_t tileM = acc.getDimSize(0), headDimV = acc.getDimSize(1);
  Type f32 = acc.getElementType();
  if (failed(expectFrag(*this, "row_max", getRowMax().getType(), {tileM},
                        f32)) ||
      failed(expectFrag(*this, "row_sum", getRowSum().getType(), {tileM},
                        f32)))
    return failure();
  if (stage.getDimSize(0) != 1 || stage.getDimSize(1) != tileM ||
      stage.getDimSize(2) != headDimV)
    return emitOpError() << "staging buffer must be 1x" << tileM << "x"
                         << headDimV << ", got " << stage;
  if (stage.getElementType() != o.getElementType())
    return emitOpError() << "staging buffer is " << stage.getElementType()
                         << " but O is " << o.getElementType();
  if (getPaddedHeadDim(o.getDimSize(3)) != headDimV)
    return emitOpError() << "O has head_dim " << o.getDimSize(3)
                         << " (padded: " << getPaddedHeadDim(o.getDimSize(3))
                         << ") but acc has " << headDimV << " columns";
  int64_t kvWarps = getKvWarps(*this);
  if (Value merge = getMerge()) {
    auto type = cast<MemRefType>(merge.getType());
    SmallVector<int64_t, 3> expected = {kvWarps, tileM,
                                        headDimV + kMergeRowPadding};
    if (!type.getElementType().isF32() || type.getShape() != ArrayRef(expected))
      return emitOpError() << "merge buffer must be f32 " << expected[0] << "x"
                           << expected[1] << "x" << expected[2]
                           << " (kv_warps x tile_m x (head_dim_v + "
                           << kMergeRowPadding << ")), got " << type;
  } else if (kvWarps > 1) {
    return emitOpError() << "needs a merge buffer: the kernel's config has "
                         << "kv_warps = " << kvWarps;
  }
  return verifySink(*this, getSink());
}

//===----------------------------------------------------------------------===//
// The tile language: map, reduce_rows, convert, store
//===----------------------------------------------------------------------===//

/// The rows and columns of a rank-2 fragment per warp must fill whole mma
/// tiles (16 rows per warp, 8 columns).
static LogicalResult verifyAccumulatorShape(Operation *op, StringRef what,
                                            FragType type) {
  if (type.getRank() != 2 || !type.getElementType().isF32())
    return op->emitOpError() << what
                             << " must be a rank-2 f32 fragment, got "
                             << Type(type);
  if (type.getDimSize(1) % 8 != 0)
    return op->emitOpError() << what << " has " << type.getDimSize(1)
                             << " columns; the mma layout needs a multiple "
                                "of 8";
  return success();
}

SmallVector<int64_t> attn::getElementwiseShape(ValueRange operands) {
  std::optional<int64_t> rows, cols;
  for (Value operand : operands)
    if (auto frag = dyn_cast<FragType>(operand.getType())) {
      // A 'cols' vector broadcasts along the rows; it gives no row count.
      if (frag.getLayout() == FragLayout::Cols)
        continue;
      rows = frag.getDimSize(0);
      if (frag.getRank() == 2)
        cols = frag.getDimSize(1);
    }
  SmallVector<int64_t> shape = {rows.value_or(0)};
  if (cols)
    shape.push_back(*cols);
  return shape;
}

/// The operands of attn.map and attn.for_each: f32 fragments and scalars
/// (f32, index, integers) that agree on one shape (M x N, or M when every
/// fragment is a `rows` vector), `cols` vectors of N values along the
/// rank-2 ones. Returns that shape, or fails with the error at `op`.
static FailureOr<SmallVector<int64_t>>
verifyElementwiseOperands(Operation *op, ValueRange operands,
                          StringRef what) {
  // The shape the operands agree on.
  std::optional<int64_t> rows;
  std::optional<std::pair<int64_t, int64_t>> shape;
  // The 'cols' operands: (operand, columns).
  SmallVector<std::pair<size_t, int64_t>> cols;
  for (auto [i, operand] : llvm::enumerate(operands)) {
    Type type = operand.getType();
    auto frag = dyn_cast<FragType>(type);
    if (!frag) {
      if (!type.isF32() && !type.isIndex() && !type.isSignlessInteger())
        return op->emitOpError() << "operand " << i << " has type " << type
                                 << "; " << what
                                 << " takes f32 fragments and scalars (f32, "
                                    "index, integers)";
      continue;
    }
    if (!frag.getElementType().isF32())
      return op->emitOpError()
             << "operand " << i << " is " << type
             << "; convert to f32 first (fragments of f16/bf16 are mma "
                "operands)";
    if (frag.getLayout() == FragLayout::Cols) {
      // Checked against the rank-2 operands' columns below.
      cols.push_back({i, frag.getDimSize(0)});
      continue;
    }
    int64_t r = frag.getDimSize(0);
    if (rows && *rows != r)
      return op->emitOpError() << "operand " << i << " has " << r
                               << " rows but an earlier operand has " << *rows;
    rows = r;
    if (frag.getRank() == 2) {
      std::pair<int64_t, int64_t> s{r, frag.getDimSize(1)};
      if (shape && *shape != s)
        return op->emitOpError() << "operand " << i << " is " << type
                                 << " but an earlier operand is " << s.first
                                 << "x" << shape->second;
      shape = s;
    }
  }
  if (!rows)
    return op->emitOpError()
           << "needs at least one fragment operand with rows "
              "(a 'cols' vector broadcasts along a rank-2 operand's rows)";
  for (auto [i, n] : cols)
    if (!shape || shape->second != n)
      return op->emitOpError()
             << "operand " << i << " is a 'cols' vector of " << n
             << " values, which broadcasts along the rows of a rank-2 "
                "operand with as many columns; "
             << (shape ? "the rank-2 operands have " +
                             std::to_string(shape->second) + " columns"
                       : std::string("there is none"));
  return shape ? SmallVector<int64_t>{shape->first, shape->second}
               : SmallVector<int64_t>{*rows};
}

/// The body of attn.map / attn.for_each: one argument per operand (its
/// element type), then the row and, for a rank-2 shape, the column.
static LogicalResult verifyElementwiseBody(Operation *op, ValueRange operands,
                                           Block &body, unsigned coords) {
  if (body.getNumArguments() != operands.size() + coords)
    return op->emitOpError()
           << "body must take " << operands.size() + coords
           << " arguments: one per operand, then the row"
           << (coords == 2 ? " and the column" : "") << " (index); it takes "
           << body.getNumArguments();
  for (auto [i, operand] : llvm::enumerate(operands)) {
    Type type = operand.getType();
    Type element =
        isa<FragType>(type) ? cast<FragType>(type).getElementType() : type;
    if (body.getArgument(i).getType() != element)
      return op->emitOpError() << "body argument " << i << " must be "
                               << element << ", got "
                               << body.getArgument(i).getType();
  }
  for (unsigned c = 0; c < coords; ++c)
    if (!body.getArgument(operands.size() + c).getType().isIndex())
      return op->emitOpError()
             << "body argument " << operands.size() + c << " (the "
             << (c == 0 ? "row" : "column") << ") must be index";
  return success();
}

LogicalResult MapOp::verify() {
  FragType result = getResult().getType();
  if (!result.getElementType().isF32())
    return emitOpError() << "result must be an f32 fragment, got "
                         << Type(result);
  FailureOr<SmallVector<int64_t>> expected =
      verifyElementwiseOperands(*this, getOperands(), "a map");
  if (failed(expected) ||
      failed(expectFrag(*this, "result", result, *expected,
                        Float32Type::get(getContext()))))
    return failure();
  if (result.getRank() == 2 &&
      failed(verifyAccumulatorShape(*this, "result", result)))
    return failure();
  Block &body = getBody().front();
  if (failed(verifyElementwiseBody(*this, getOperands(), body,
                                   result.getRank())))
    return failure();
  YieldOp yield = getYield(body);
  if (!yield || yield.getValues().size() != 1 ||
      !yield.getValues()[0].getType().isF32())
    return emitOpError() << "body must yield one f32";
  return verifyHookBody(*this, getBody(), "map");
}

LogicalResult ForEachOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      verifyElementwiseOperands(*this, getOperands(), "a for_each");
  if (failed(shape))
    return failure();
  // A rows vector's value of a row is held by every thread of the row's
  // quad: each would add it again.
  if (shape->size() != 2)
    return emitOpError() << "needs a rank-2 fragment operand: a rows "
                            "vector's values are held four times over, so "
                            "their adds would count four times";
  if (failed(verifyAccumulatorShape(
          *this, "the elements' shape",
          FragType::get(getContext(), *shape,
                        Float32Type::get(getContext())))))
    return failure();
  Block &body = getBody().front();
  if (failed(verifyElementwiseBody(*this, getOperands(), body,
                                   shape->size())))
    return failure();
  YieldOp yield = getYield(body);
  if (!yield || !yield.getValues().empty())
    return emitOpError() << "body must end in an attn.yield of nothing";
  return verifyHookBody(*this, getBody(), "for_each",
                        /*accumulates=*/true);
}

LogicalResult ReduceRowsOp::verify() {
  if (getKind() != "max" && getKind() != "sum")
    return emitOpError() << "kind must be \"max\" or \"sum\", got \""
                         << getKind() << "\"";
  FragType source = getSource().getType();
  if (failed(verifyAccumulatorShape(*this, "source", source)))
    return failure();
  if (getKvWarps(*this) > 1)
    return emitOpError() << "needs whole rows in one warp; the kernel's "
                            "config splits each row over "
                         << getKvWarps(*this) << " KV warps";
  return expectFrag(*this, "result", getResult().getType(),
                    {source.getDimSize(0)}, source.getElementType());
}

LogicalResult ConvertOp::verify() {
  FragType source = getSource().getType();
  if (failed(verifyAccumulatorShape(*this, "source", source)))
    return failure();
  if (source.getDimSize(1) % 16 != 0)
    return emitOpError() << "source has " << source.getDimSize(1)
                         << " columns; an mma A operand needs a multiple of 16";
  FragType result = getResult().getType();
  Type element = result.getElementType();
  if (!element.isF16() && !element.isBF16())
    return emitOpError() << "result must be f16 or bf16, got " << element;
  return expectFrag(*this, "result", result, source.getShape(), element);
}

LogicalResult StoreOp::verify() {
  FragType acc = getAcc().getType();
  if (failed(verifyAccumulatorShape(*this, "acc", acc)))
    return failure();
  int64_t tileM = acc.getDimSize(0), cols = acc.getDimSize(1);
  MemRefType stage = getStage().getType();
  MemRefType o = getO().getType();
  if (stage.getDimSize(0) != 1 || stage.getDimSize(1) != tileM ||
      stage.getDimSize(2) != cols)
    return emitOpError() << "staging buffer must be 1x" << tileM << "x"
                         << cols << ", got " << stage;
  if (stage.getElementType() != o.getElementType())
    return emitOpError() << "staging buffer holds "
                         << stage.getElementType() << " but O is "
                         << o.getElementType();
  if (getPaddedHeadDim(o.getDimSize(3)) != cols)
    return emitOpError() << "acc has " << cols << " columns but O's head dim "
                         << o.getDimSize(3) << " pads to "
                         << getPaddedHeadDim(o.getDimSize(3));
  if (getKvWarps(*this) > 1)
    return emitOpError() << "needs whole rows in one warp; the kernel's "
                            "config splits each row over "
                         << getKvWarps(*this) << " KV warps";
  if (Value lse = getLseValues())
    return expectFrag(*this, "LSE values", lse.getType(), {tileM},
                      Float32Type::get(getContext()));
  return success();
}
