//===- Runtime.cpp - Loading and launching FlashTile kernels --------------===//
//
// Three parts: a small strict JSON reader, the metadata schema on top of it,
// and the kernel (argument checks, parameter packing, and the CUDA driver,
// reached through dlopen so that no CUDA header or library is needed to
// build or to load kernels). The run side must not depend on LLVM (the GPU
// machines have none), which is why it reads JSON itself rather than with
// llvm::json like the compiler.
//
//===----------------------------------------------------------------------===//

#include "flashtile/Runtime/Runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

using namespace flashtile::runtime;

namespace {

//===----------------------------------------------------------------------===//
// Message helpers
//===----------------------------------------------------------------------===//

template <typename... Ts> std::string concat(const Ts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

template <size_t N> std::string formatList(const int64_t (&values)[N]) {
  std::string s = "[";
  for (size_t i = 0; i < N; ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

std::string formatPointer(const void *p) {
  std::ostringstream os;
  os << "0x" << std::hex << reinterpret_cast<uintptr_t>(p);
  return os.str();
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// A parsed JSON value. Objects keep their keys in file order.
struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0.0;
  /// The number was written without fraction or exponent and fits int64_t.
  bool isInteger = false;
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  const JsonValue *find(std::string_view key) const {
    for (const auto &entry : object)
      if (entry.first == key)
        return &entry.second;
    return nullptr;
  }
};

/// A compact rendering of `value` for error messages.
std::string describe(const JsonValue &value) {
  switch (value.kind) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return value.boolean ? "true" : "false";
  case JsonValue::Kind::Number: {
    if (value.isInteger)
      return std::to_string(value.integer);
    std::ostringstream os;
    os.precision(17);
    os << value.number;
    std::string s = os.str();
    if (s.find_first_of(".eEn") == std::string::npos)
      s += ".0";
    return s;
  }
  case JsonValue::Kind::String:
    return "\"" + value.string + "\"";
  case JsonValue::Kind::Array: {
    std::string s = "[";
    for (size_t i = 0; i < value.array.size(); ++i) {
      if (i == 4) {
        s += ", ...";
        break;
      }
      s += (i ? ", " : "") + describe(value.array[i]);
    }
    return s + "]";
  }
  case JsonValue::Kind::Object:
    return "{...}";
  }
  return "?";
}

/// A strict RFC 8259 reader: no comments, no trailing commas, no duplicate
/// keys, nothing after the value.
class JsonParser {
public:
  explicit JsonParser(std::string_view input) : text(input) {}

  bool parse(JsonValue &result, std::string &error) {
    skipWhitespace();
    if (!parseValue(result, 0)) {
      error = message;
      return false;
    }
    skipWhitespace();
    if (pos != text.size()) {
      fail("unexpected text after the JSON value");
      error = message;
      return false;
    }
    return true;
  }

private:
  static constexpr int kMaxDepth = 64;

  bool fail(const std::string &what) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    message = concat("invalid JSON at line ", line, ", column ", column, ": ",
                     what);
    return false;
  }

  void skipWhitespace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool consumeLiteral(std::string_view literal) {
    if (text.substr(pos, literal.size()) != literal)
      return fail("unexpected character");
    pos += literal.size();
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nested too deeply");
    if (pos >= text.size())
      return fail("unexpected end of input");
    char c = text[pos];
    switch (c) {
    case '{':
      return parseObject(out, depth);
    case '[':
      return parseArray(out, depth);
    case '"':
      out.kind = JsonValue::Kind::String;
      return parseString(out.string);
    case 't':
      out.kind = JsonValue::Kind::Bool;
      out.boolean = true;
      return consumeLiteral("true");
    case 'f':
      out.kind = JsonValue::Kind::Bool;
      out.boolean = false;
      return consumeLiteral("false");
    case 'n':
      out.kind = JsonValue::Kind::Null;
      return consumeLiteral("null");
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      return fail(concat("unexpected character '", c, "'"));
    }
  }

  bool parseObject(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Object;
    ++pos; // '{'
    skipWhitespace();
    if (pos < text.size() && text[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipWhitespace();
      if (pos >= text.size() || text[pos] != '"')
        return fail("expected a string key");
      size_t keyPos = pos;
      std::string key;
      if (!parseString(key))
        return false;
      if (out.find(key)) {
        pos = keyPos;
        return fail(concat("duplicate key \"", key, "\""));
      }
      skipWhitespace();
      if (pos >= text.size() || text[pos] != ':')
        return fail("expected ':'");
      ++pos;
      skipWhitespace();
      JsonValue value;
      if (!parseValue(value, depth + 1))
        return false;
      out.object.emplace_back(std::move(key), std::move(value));
      skipWhitespace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool parseArray(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Array;
    ++pos; // '['
    skipWhitespace();
    if (pos < text.size() && text[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipWhitespace();
      JsonValue value;
      if (!parseValue(value, depth + 1))
        return false;
      out.array.push_back(std::move(value));
      skipWhitespace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool parseHex4(uint32_t &value) {
    if (pos + 4 > text.size())
      return fail("truncated \\u escape");
    value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= c - '0';
      else if (c >= 'a' && c <= 'f')
        value |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        value |= c - 'A' + 10;
      else
        return fail("bad hex digit in \\u escape");
    }
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    out.clear();
    while (true) {
      if (pos >= text.size())
        return fail("unterminated string");
      char c = text[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in string");
      if (c != '\\') {
        out += c;
        ++pos;
        continue;
      }
      ++pos;
      if (pos >= text.size())
        return fail("unterminated escape");
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low = 0;
          if (text.substr(pos, 2) != "\\u")
            return fail("unpaired surrogate in \\u escape");
          pos += 2;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low > 0xDFFF)
            return fail("unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail("unpaired surrogate in \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos;
        return fail(concat("bad escape '\\", e, "'"));
      }
    }
  }

  bool parseNumber(JsonValue &out) {
    size_t start = pos;
    auto isDigit = [&](size_t i) {
      return i < text.size() && text[i] >= '0' && text[i] <= '9';
    };
    if (text[pos] == '-')
      ++pos;
    if (!isDigit(pos))
      return fail("expected a digit");
    if (text[pos] == '0') {
      ++pos;
      if (isDigit(pos))
        return fail("leading zero in number");
    } else {
      while (isDigit(pos))
        ++pos;
    }
    bool integral = true;
    if (pos < text.size() && text[pos] == '.') {
      integral = false;
      ++pos;
      if (!isDigit(pos))
        return fail("expected a digit after '.'");
      while (isDigit(pos))
        ++pos;
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      integral = false;
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!isDigit(pos))
        return fail("expected a digit in the exponent");
      while (isDigit(pos))
        ++pos;
    }
    const char *first = text.data() + start, *last = text.data() + pos;
    out.kind = JsonValue::Kind::Number;
    auto [ptr, ec] = std::from_chars(first, last, out.number);
    if (ec == std::errc::result_out_of_range)
      out.number = (*first == '-' ? -1.0 : 1.0) *
                   std::numeric_limits<double>::infinity();
    else if (ec != std::errc() || ptr != last)
      return fail("bad number");
    if (integral) {
      auto [iptr, iec] = std::from_chars(first, last, out.integer);
      out.isInteger = iec == std::errc() && iptr == last;
    }
    return true;
  }

  std::string_view text;
  size_t pos = 0;
  std::string message;
};

//===----------------------------------------------------------------------===//
// Metadata schema
//===----------------------------------------------------------------------===//

const char *const kPtrParams[] = {"q", "k", "v", "o", "lse"};
const char *const kIntParams[] = {
    "batch",           "seqlen_q",        "seqlen_k",       "heads_q",
    "heads_kv",        "head_dim",        "head_dim_v",     "q_stride_batch",
    "q_stride_seq",    "q_stride_head",   "k_stride_batch", "k_stride_seq",
    "k_stride_head",   "v_stride_batch",  "v_stride_seq",   "v_stride_head",
    "o_stride_batch",  "o_stride_seq",    "o_stride_head",  "lse_stride_batch",
    "lse_stride_head", "lse_stride_seq"};
const char *const kFloatParams[] = {"softmax_scale"};

enum class ParamKind { Unknown, Ptr, Int, Float };

ParamKind getParamKind(std::string_view name) {
  for (const char *n : kPtrParams)
    if (name == n)
      return ParamKind::Ptr;
  for (const char *n : kIntParams)
    if (name == n)
      return ParamKind::Int;
  for (const char *n : kFloatParams)
    if (name == n)
      return ParamKind::Float;
  return ParamKind::Unknown;
}

std::string knownParamNames() {
  std::string s;
  auto add = [&](const char *n) { s += (s.empty() ? "" : ", ") + std::string(n); };
  for (const char *n : kPtrParams)
    add(n);
  for (const char *n : kIntParams)
    add(n);
  for (const char *n : kFloatParams)
    add(n);
  return s;
}

/// Typed access to one JSON object; errors name the file and the field.
class Fields {
public:
  Fields(const std::string &filePath, const JsonValue &jsonObject,
         std::string fieldPrefix, std::string &errorOut)
      : path(filePath), object(jsonObject), prefix(std::move(fieldPrefix)),
        error(errorOut) {}

  bool fail(std::string_view key, const std::string &what) {
    error = concat(path, ": field '", prefix, key, "': ", what);
    return false;
  }

  /// The value of `key`, or nullptr (an error when `required`).
  const JsonValue *get(std::string_view key, bool required,
                       std::string_view expected) {
    const JsonValue *value = object.find(key);
    if (!value && required)
      fail(key, concat("missing (expected ", expected, ")"));
    return value;
  }

  bool wrongType(std::string_view key, std::string_view expected,
                 const JsonValue &got) {
    return fail(key, concat("expected ", expected, ", got ", describe(got)));
  }

  bool getString(std::string_view key, std::string &out, bool required) {
    const char *what = required ? "a non-empty string" : "a string";
    const JsonValue *v = get(key, required, what);
    if (!v)
      return !required;
    if (v->kind != JsonValue::Kind::String || (required && v->string.empty()))
      return wrongType(key, what, *v);
    out = v->string;
    return true;
  }

  bool getInt(std::string_view key, int64_t &out, int64_t min,
              std::string_view what) {
    const JsonValue *v = get(key, true, what);
    if (!v)
      return false;
    if (v->kind != JsonValue::Kind::Number || !v->isInteger ||
        v->integer < min)
      return wrongType(key, what, *v);
    out = v->integer;
    return true;
  }

  bool getOptionalInt(std::string_view key, std::optional<int64_t> &out,
                      int64_t min, std::string_view what) {
    const JsonValue *v = object.find(key);
    if (!v || v->kind == JsonValue::Kind::Null)
      return true;
    if (v->kind != JsonValue::Kind::Number || !v->isInteger ||
        v->integer < min)
      return wrongType(key, what, *v);
    out = v->integer;
    return true;
  }

  bool getBool(std::string_view key, bool &out) {
    const JsonValue *v = get(key, true, "true or false");
    if (!v)
      return false;
    if (v->kind != JsonValue::Kind::Bool)
      return wrongType(key, "true or false", *v);
    out = v->boolean;
    return true;
  }

  bool getOptionalBool(std::string_view key, std::optional<bool> &out) {
    const JsonValue *v = object.find(key);
    if (!v || v->kind == JsonValue::Kind::Null)
      return true;
    if (v->kind != JsonValue::Kind::Bool)
      return wrongType(key, "true or false", *v);
    out = v->boolean;
    return true;
  }

  /// An array of exactly `n` integers, each >= `min`.
  bool getIntArray(std::string_view key, size_t n, int64_t min, int64_t *out,
                   std::string_view what) {
    const JsonValue *v = get(key, true, what);
    if (!v)
      return false;
    if (v->kind != JsonValue::Kind::Array || v->array.size() != n)
      return wrongType(key, what, *v);
    for (size_t i = 0; i < n; ++i) {
      const JsonValue &e = v->array[i];
      if (e.kind != JsonValue::Kind::Number || !e.isInteger || e.integer < min)
        return wrongType(key, what, *v);
      out[i] = e.integer;
    }
    return true;
  }

  const std::string &path;
  const JsonValue &object;
  std::string prefix;
  std::string &error;
};

bool parseParamType(std::string_view s, ParamType &type) {
  if (s == "ptr")
    type = ParamType::Ptr;
  else if (s == "i32")
    type = ParamType::I32;
  else if (s == "i64")
    type = ParamType::I64;
  else if (s == "f32")
    type = ParamType::F32;
  else
    return false;
  return true;
}

const char *stringifyParamType(ParamType type) {
  switch (type) {
  case ParamType::Ptr:
    return "ptr";
  case ParamType::I32:
    return "i32";
  case ParamType::I64:
    return "i64";
  case ParamType::F32:
    return "f32";
  }
  return "?";
}

bool parseParams(Fields &top, const JsonValue &list,
                 std::vector<KernelParam> &params) {
  for (size_t i = 0; i < list.array.size(); ++i) {
    const JsonValue &entry = list.array[i];
    std::string where = concat("params[", i, "]");
    if (entry.kind != JsonValue::Kind::Object)
      return top.fail(where, concat("expected an object, got ", describe(entry)));
    Fields f(top.path, entry, where + ".", top.error);
    KernelParam param;
    if (!f.getString("name", param.name, /*required=*/true))
      return false;
    const JsonValue *type = f.get("type", true, "one of ptr, i32, i64, f32");
    if (!type)
      return false;
    if (type->kind != JsonValue::Kind::String ||
        !parseParamType(type->string, param.type))
      return f.wrongType("type", "one of \"ptr\", \"i32\", \"i64\", \"f32\"",
                         *type);
    ParamKind kind = getParamKind(param.name);
    if (kind == ParamKind::Unknown)
      return f.fail("name", concat("\"", param.name,
                                   "\" is not a value this runtime can pass "
                                   "(known: ",
                                   knownParamNames(), ")"));
    bool typeOk = (kind == ParamKind::Ptr && param.type == ParamType::Ptr) ||
                  (kind == ParamKind::Int && (param.type == ParamType::I32 ||
                                              param.type == ParamType::I64)) ||
                  (kind == ParamKind::Float && param.type == ParamType::F32);
    if (!typeOk)
      return f.fail("type",
                    concat("\"", param.name, "\" cannot be passed as \"",
                           stringifyParamType(param.type), "\""));
    for (const KernelParam &seen : params)
      if (seen.name == param.name)
        return f.fail("name", concat("\"", param.name, "\" appears twice"));
    params.push_back(std::move(param));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The CUDA driver, through dlopen
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUhandle = void *; // CUcontext, CUmodule, CUfunction, CUstream

constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorNoBinaryForGpu = 209;
constexpr int kFuncAttributeMaxDynamicSharedSizeBytes = 8;
constexpr int64_t kStaticSmemLimit = 48 * 1024;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuCtxGetCurrent)(CUhandle *);
  CUresult (*cuCtxGetDevice)(CUdevice *);
  CUresult (*cuCtxPushCurrent)(CUhandle);
  CUresult (*cuCtxPopCurrent)(CUhandle *);
  CUresult (*cuDevicePrimaryCtxRetain)(CUhandle *, CUdevice);
  CUresult (*cuModuleLoadData)(CUhandle *, const void *);
  CUresult (*cuModuleUnload)(CUhandle);
  CUresult (*cuModuleGetFunction)(CUhandle *, CUhandle, const char *);
  CUresult (*cuFuncSetAttribute)(CUhandle, int, int);
  CUresult (*cuLaunchKernel)(CUhandle, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUhandle, void **,
                             void **);

  std::string errorText(CUresult code) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName(code, &name) != kCudaSuccess || !name)
      return concat("CUresult ", code);
    cuGetErrorString(code, &text);
    return concat(name, " (", code, "): ", text ? text : "");
  }

  /// False with `error` = "<what> failed: <name> (<code>): <text>".
  bool check(CUresult code, const std::string &what,
             std::string &error) const {
    if (code == kCudaSuccess)
      return true;
    error = concat(what, " failed: ", errorText(code));
    return false;
  }
};

struct DriverState {
  std::once_flag once;
  std::atomic<bool> loaded{false};
  std::string error;
  Driver driver{};
};

DriverState &getDriverState() {
  static DriverState *state = new DriverState(); // never destroyed
  return *state;
}

template <typename Fn> bool bindSymbol(void *lib, const char *name, Fn &fn,
                                       std::string &error) {
  void *sym = dlsym(lib, name);
  if (!sym) {
    error = concat("the CUDA driver library has no ", name,
                   "; it is too old or not libcuda");
    return false;
  }
  fn = reinterpret_cast<Fn>(sym);
  return true;
}

/// The driver, opened on first use; nullptr with `error` set when there is
/// none.
const Driver *getDriver(std::string &error) {
  DriverState &state = getDriverState();
  std::call_once(state.once, [&state] {
    const char *override = std::getenv("FLASHTILE_CUDA_DRIVER");
    std::string name =
        override && *override ? std::string(override) : "libcuda.so.1";
    void *lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      state.error = concat("no CUDA driver: cannot load ", name, " (",
                           why ? why : "unknown reason",
                           "); FlashTile kernels need an NVIDIA GPU and its "
                           "driver");
      return;
    }
    Driver &d = state.driver;
    std::string &e = state.error;
    bool ok = bindSymbol(lib, "cuInit", d.cuInit, e) &&
              bindSymbol(lib, "cuGetErrorName", d.cuGetErrorName, e) &&
              bindSymbol(lib, "cuGetErrorString", d.cuGetErrorString, e) &&
              bindSymbol(lib, "cuDeviceGet", d.cuDeviceGet, e) &&
              bindSymbol(lib, "cuCtxGetCurrent", d.cuCtxGetCurrent, e) &&
              bindSymbol(lib, "cuCtxGetDevice", d.cuCtxGetDevice, e) &&
              bindSymbol(lib, "cuCtxPushCurrent_v2", d.cuCtxPushCurrent, e) &&
              bindSymbol(lib, "cuCtxPopCurrent_v2", d.cuCtxPopCurrent, e) &&
              bindSymbol(lib, "cuDevicePrimaryCtxRetain",
                         d.cuDevicePrimaryCtxRetain, e) &&
              bindSymbol(lib, "cuModuleLoadData", d.cuModuleLoadData, e) &&
              bindSymbol(lib, "cuModuleUnload", d.cuModuleUnload, e) &&
              bindSymbol(lib, "cuModuleGetFunction", d.cuModuleGetFunction,
                         e) &&
              bindSymbol(lib, "cuFuncSetAttribute", d.cuFuncSetAttribute, e) &&
              bindSymbol(lib, "cuLaunchKernel", d.cuLaunchKernel, e);
    if (ok)
      ok = d.check(d.cuInit(0), "cuInit", e);
    state.loaded = ok;
  });
  if (!state.loaded) {
    error = state.error;
    return nullptr;
  }
  return &state.driver;
}

/// The driver if it is already open; never opens it.
const Driver *peekDriver() {
  DriverState &state = getDriverState();
  return state.loaded ? &state.driver : nullptr;
}

/// The primary context of `device`, retained once per process.
CUhandle getPrimaryContext(const Driver &drv, CUdevice device,
                           std::string &error) {
  static std::mutex mutex;
  static std::vector<std::pair<CUdevice, CUhandle>> *retained =
      new std::vector<std::pair<CUdevice, CUhandle>>();
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &entry : *retained)
    if (entry.first == device)
      return entry.second;
  CUhandle ctx = nullptr;
  if (!drv.check(drv.cuDevicePrimaryCtxRetain(&ctx, device),
                 concat("cuDevicePrimaryCtxRetain(device ", device, ")"),
                 error))
    return nullptr;
  retained->emplace_back(device, ctx);
  return ctx;
}

/// Makes a context of `device` current for its lifetime: the current one
/// when it belongs to `device`, otherwise the primary context, pushed.
class ScopedDeviceContext {
public:
  ScopedDeviceContext(const Driver &driver, int ordinal, std::string &error)
      : drv(driver) {
    CUdevice device;
    if (!drv.check(drv.cuDeviceGet(&device, ordinal),
                   concat("cuDeviceGet(", ordinal, ")"), error))
      return;
    CUhandle current = nullptr;
    if (!drv.check(drv.cuCtxGetCurrent(&current), "cuCtxGetCurrent", error))
      return;
    if (current) {
      CUdevice currentDevice;
      if (drv.cuCtxGetDevice(&currentDevice) == kCudaSuccess &&
          currentDevice == device) {
        context = current;
        return;
      }
    }
    CUhandle primary = getPrimaryContext(drv, device, error);
    if (!primary)
      return;
    if (!drv.check(drv.cuCtxPushCurrent(primary), "cuCtxPushCurrent", error))
      return;
    pushed = true;
    context = primary;
  }
  ~ScopedDeviceContext() {
    if (pushed) {
      CUhandle popped;
      drv.cuCtxPopCurrent(&popped);
    }
  }
  ScopedDeviceContext(const ScopedDeviceContext &) = delete;
  ScopedDeviceContext &operator=(const ScopedDeviceContext &) = delete;

  /// nullptr when the constructor failed (and set the error).
  CUhandle get() const { return context; }

private:
  const Driver &drv;
  CUhandle context = nullptr;
  bool pushed = false;
};

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

constexpr int64_t kAlignBytes = 16;
constexpr int64_t kStrideMultiple = 8;
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kGridYZMax = 65535;

bool checkTensor(const TensorArg &t, const char *name, DType dtype,
                 int64_t lastDim, const char *lastName,
                 const KernelMetadata &meta, std::string &error) {
  if (t.dtype != dtype) {
    error = concat(name, " has dtype ", stringifyDType(t.dtype),
                   ", but kernel ", meta.kernelName, " takes ",
                   stringifyDType(dtype));
    return false;
  }
  for (int d = 0; d < 4; ++d) {
    if (t.sizes[d] < 0) {
      error = concat(name, " has a negative size: ", formatList(t.sizes));
      return false;
    }
  }
  if (t.sizes[3] != lastDim) {
    error = concat(name, " has last dim ", t.sizes[3], ", but kernel ",
                   meta.kernelName, " has ", lastName, " = ", lastDim);
    return false;
  }
  return true;
}

/// Contiguous dim `contiguousDim`, strides multiples of 8 elements for 16-bit
/// data, 16-byte aligned base (4-byte for f32).
template <size_t N>
bool checkLayout(const char *name, const void *data, const int64_t (&sizes)[N],
                 const int64_t (&strides)[N], DType dtype, size_t contiguousDim,
                 std::string &error) {
  if (!data) {
    error = concat(name, " data pointer is null");
    return false;
  }
  if (sizes[contiguousDim] > 1 && strides[contiguousDim] != 1) {
    error = concat(name,
                   " must be contiguous in its last dim (stride 1), but has "
                   "strides ",
                   formatList(strides), " for shape ", formatList(sizes));
    return false;
  }
  bool is16Bit = getDTypeSize(dtype) == 2;
  for (size_t d = 0; d < N; ++d) {
    if (strides[d] < 0) {
      error = concat(name, " stride ", strides[d], " of dim ", d,
                     " is negative");
      return false;
    }
    if (d == contiguousDim || sizes[d] <= 1)
      continue; // A size-1 dim is never stepped: its stride is unused.
    if (is16Bit && strides[d] % kStrideMultiple != 0) {
      error = concat(name, " stride ", strides[d], " of dim ", d,
                     " is not a multiple of ", kStrideMultiple,
                     " elements (16 bytes, the cp.async chunk); strides ",
                     formatList(strides), ", shape ", formatList(sizes));
      return false;
    }
  }
  int64_t align = is16Bit ? kAlignBytes : getDTypeSize(dtype);
  if (reinterpret_cast<uintptr_t>(data) % align != 0) {
    error = concat(name, " data pointer ", formatPointer(data), " is not ",
                   align, "-byte aligned",
                   is16Bit ? " (cp.async copies 16-byte chunks)" : "");
    return false;
  }
  return true;
}

/// No two elements of an output at one address.
template <size_t N>
bool checkNoOverlap(const char *name, const int64_t (&sizes)[N],
                    const int64_t (&strides)[N], std::string &error) {
  std::vector<std::pair<int64_t, int64_t>> dims; // (stride, size)
  for (size_t d = 0; d < N; ++d)
    if (sizes[d] > 1)
      dims.emplace_back(strides[d], sizes[d]);
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;
  for (const auto &[stride, size] : dims) {
    if (stride < span) {
      error = concat(name, " has overlapping elements (strides ",
                     formatList(strides), " for shape ", formatList(sizes),
                     "); an output needs distinct addresses");
      return false;
    }
    // Saturate: a span past int64 only means "no later dim can overlap".
    span = stride > std::numeric_limits<int64_t>::max() / size
               ? std::numeric_limits<int64_t>::max()
               : stride * size;
  }
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

const char *flashtile::runtime::stringifyDType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  }
  return "?";
}

std::optional<DType> flashtile::runtime::parseDType(std::string_view name) {
  if (name == "f16")
    return DType::F16;
  if (name == "bf16")
    return DType::BF16;
  if (name == "f32")
    return DType::F32;
  return std::nullopt;
}

int64_t flashtile::runtime::getDTypeSize(DType dtype) {
  return dtype == DType::F32 ? 4 : 2;
}

std::optional<KernelMetadata>
KernelMetadata::parse(std::string_view json, const std::string &path,
                      std::string &error) {
  JsonValue root;
  std::string syntaxError;
  if (!JsonParser(json).parse(root, syntaxError)) {
    error = concat(path, ": ", syntaxError);
    return std::nullopt;
  }
  if (root.kind != JsonValue::Kind::Object) {
    error = concat(path, ": expected a JSON object at the top level, got ",
                   describe(root));
    return std::nullopt;
  }
  const JsonValue *format = root.find("format");
  if (!format || format->kind != JsonValue::Kind::String ||
      format->string != kMetadataFormat) {
    error = concat(path, ": unknown format ",
                   format ? describe(*format) : std::string("(missing)"),
                   " (this runtime reads \"", kMetadataFormat, "\")");
    return std::nullopt;
  }

  KernelMetadata m;
  m.path = path;
  Fields f(path, root, "", error);
  std::string dtype;
  if (!f.getString("kernel", m.kernelName, true) ||
      !f.getString("cubin", m.cubin, true) ||
      !f.getString("dtype", dtype, true))
    return std::nullopt;
  std::optional<DType> parsed = parseDType(dtype);
  if (!parsed || *parsed == DType::F32) {
    f.wrongType("dtype", "one of \"f16\", \"bf16\"", *root.find("dtype"));
    return std::nullopt;
  }
  m.dtype = *parsed;
  int64_t window[2];
  if (!f.getInt("head_dim", m.headDim, 1, "a positive integer") ||
      !f.getInt("head_dim_v", m.headDimV, 1, "a positive integer") ||
      !f.getBool("causal", m.causal) ||
      !f.getIntArray("window", 2, -1, window,
                     "a list [left, right] of integers >= -1 (-1: unbounded)"))
    return std::nullopt;
  m.windowLeft = window[0];
  m.windowRight = window[1];

  const JsonValue *scale =
      f.get("softmax_scale", true, "a positive finite number");
  if (!scale)
    return std::nullopt;
  if (scale->kind != JsonValue::Kind::Number || !std::isfinite(scale->number) ||
      scale->number <= 0) {
    f.wrongType("softmax_scale", "a positive finite number", *scale);
    return std::nullopt;
  }
  m.softmaxScale = scale->number;

  const JsonValue *config = f.get("config", true, "an object");
  if (!config)
    return std::nullopt;
  if (config->kind != JsonValue::Kind::Object) {
    f.wrongType("config", "an object", *config);
    return std::nullopt;
  }
  Fields cf(path, *config, "config.", error);
  if (!cf.getInt("tile_m", m.config.tileM, 1, "a positive integer") ||
      !cf.getOptionalInt("tile_n", m.config.tileN, 1, "a positive integer") ||
      !cf.getOptionalInt("stages", m.config.stages, 1, "a positive integer") ||
      !cf.getOptionalInt("warps", m.config.warps, 1, "a positive integer") ||
      !cf.getOptionalBool("q_in_regs", m.config.qInRegs))
    return std::nullopt;

  if (!f.getIntArray("block", 3, 1, m.block, "a list of 3 positive integers"))
    return std::nullopt;
  if (m.block[0] > 1024 || m.block[1] > 1024 || m.block[2] > 64 ||
      m.block[0] * m.block[1] * m.block[2] > 1024) {
    f.fail("block", concat(formatList(m.block),
                           " exceeds the CUDA block limits (at most 1024 "
                           "threads, z at most 64)"));
    return std::nullopt;
  }
  if (!f.getInt("dynamic_smem_bytes", m.dynamicSmemBytes, 0,
                "a non-negative integer"))
    return std::nullopt;
  if (m.dynamicSmemBytes > kI32Max) {
    f.fail("dynamic_smem_bytes", "does not fit in 32 bits");
    return std::nullopt;
  }

  const JsonValue *params =
      f.get("params", true, "a non-empty list of {\"name\", \"type\"}");
  if (!params)
    return std::nullopt;
  if (params->kind != JsonValue::Kind::Array || params->array.empty()) {
    f.wrongType("params", "a non-empty list of {\"name\", \"type\"} objects",
                *params);
    return std::nullopt;
  }
  if (!parseParams(f, *params, m.params))
    return std::nullopt;

  if (!f.getString("arch", m.arch, false) ||
      !f.getString("isa", m.isa, false) ||
      !f.getString("code_path", m.codePath, false) ||
      !f.getOptionalInt("registers", m.registers, 0,
                        "a non-negative integer or null") ||
      !f.getOptionalInt("spill_stores", m.spillStores, 0,
                        "a non-negative integer or null") ||
      !f.getOptionalInt("spill_loads", m.spillLoads, 0,
                        "a non-negative integer or null"))
    return std::nullopt;

  std::filesystem::path cubin(m.cubin);
  if (cubin.is_relative()) {
    std::filesystem::path base = std::filesystem::path(path).parent_path();
    cubin = base / cubin;
  }
  m.cubinPath = cubin.string();
  return m;
}

std::optional<KernelMetadata>
KernelMetadata::readFile(const std::string &path, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    error = std::filesystem::exists(path, ec)
                ? concat(path, ": cannot read metadata")
                : concat(path, ": metadata file not found");
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    error = concat(path, ": cannot read metadata");
    return std::nullopt;
  }
  return parse(text.str(), path, error);
}

TensorArg TensorArg::contiguous(void *data,
                                std::initializer_list<int64_t> sizes,
                                DType dtype, int device) {
  TensorArg t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  int d = 0;
  for (int64_t s : sizes)
    if (d < 4)
      t.sizes[d++] = s;
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    t.strides[i] = stride;
    stride *= std::max<int64_t>(t.sizes[i], 1);
  }
  return t;
}

LseArg LseArg::contiguous(void *data, int64_t batch, int64_t heads,
                          int64_t seqlen, int device) {
  LseArg l;
  l.data = data;
  l.sizes[0] = batch;
  l.sizes[1] = heads;
  l.sizes[2] = seqlen;
  l.strides[2] = 1;
  l.strides[1] = std::max<int64_t>(seqlen, 1);
  l.strides[0] = l.strides[1] * std::max<int64_t>(heads, 1);
  l.device = device;
  return l;
}

FlashKernel::FlashKernel(KernelMetadata meta, std::vector<char> cubinImage)
    : metadata(std::move(meta)), image(std::move(cubinImage)) {}

FlashKernel::~FlashKernel() {
  const Driver *drv = peekDriver();
  if (!drv)
    return;
  for (const LoadedModule &m : loaded) {
    if (drv->cuCtxPushCurrent(m.context) != kCudaSuccess)
      continue;
    drv->cuModuleUnload(m.module);
    CUhandle popped;
    drv->cuCtxPopCurrent(&popped);
  }
}

std::unique_ptr<FlashKernel> FlashKernel::load(const std::string &metadataPath,
                                               std::string &error) {
  std::optional<KernelMetadata> meta =
      KernelMetadata::readFile(metadataPath, error);
  if (!meta)
    return nullptr;
  std::ifstream in(meta->cubinPath, std::ios::binary);
  if (!in) {
    std::error_code ec;
    error = std::filesystem::exists(meta->cubinPath, ec)
                ? concat(metadataPath, ": cannot read cubin ", meta->cubinPath)
                : concat(metadataPath, ": cubin \"", meta->cubin,
                         "\" not found (looked for ", meta->cubinPath, ")");
    return nullptr;
  }
  std::vector<char> image((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  if (in.bad()) {
    error = concat(metadataPath, ": cannot read cubin ", meta->cubinPath);
    return nullptr;
  }
  if (image.empty()) {
    error = concat(metadataPath, ": cubin ", meta->cubinPath, " is empty");
    return nullptr;
  }
  return std::make_unique<FlashKernel>(std::move(*meta), std::move(image));
}

bool FlashKernel::check(const TensorArg &q, const TensorArg &k,
                        const TensorArg &v, const TensorArg &out,
                        const LseArg &lse, std::string &error,
                        LaunchDims *dimsOut) const {
  const KernelMetadata &m = metadata;
  if (!checkTensor(q, "q", m.dtype, m.headDim, "head_dim", m, error) ||
      !checkTensor(k, "k", m.dtype, m.headDim, "head_dim", m, error) ||
      !checkTensor(v, "v", m.dtype, m.headDimV, "head_dim_v", m, error) ||
      !checkTensor(out, "out", m.dtype, m.headDimV, "head_dim_v", m, error))
    return false;
  if (q.device < 0) {
    error = concat("q has device ", q.device, "; expected a CUDA ordinal >= 0");
    return false;
  }
  const std::pair<const char *, int> devices[] = {
      {"k", k.device}, {"v", v.device}, {"out", out.device}, {"lse", lse.device}};
  for (const auto &[name, device] : devices) {
    if (device != q.device) {
      error = concat(name, " is on device ", device, " but q is on device ",
                     q.device, "; all tensors must be on one device");
      return false;
    }
  }

  LaunchDims dims;
  dims.batch = q.sizes[0];
  dims.seqlenQ = q.sizes[1];
  dims.headsQ = q.sizes[2];
  dims.seqlenK = k.sizes[1];
  dims.headsKV = k.sizes[2];
  if (k.sizes[0] != dims.batch || v.sizes[0] != dims.batch) {
    error = concat("batch sizes differ: q has ", dims.batch, ", k has ",
                   k.sizes[0], ", v has ", v.sizes[0]);
    return false;
  }
  if (v.sizes[1] != dims.seqlenK) {
    error = concat("k and v must have the same seqlen, but k has ",
                   dims.seqlenK, " and v has ", v.sizes[1]);
    return false;
  }
  if (v.sizes[2] != dims.headsKV) {
    error = concat("k and v must have the same number of heads, but k has ",
                   dims.headsKV, " and v has ", v.sizes[2]);
    return false;
  }
  if (dims.headsKV == 0 && dims.headsQ != 0) {
    error = concat("k and v have 0 heads but q has ", dims.headsQ);
    return false;
  }
  if (dims.headsKV != 0 && dims.headsQ % dims.headsKV != 0) {
    error = concat("q heads (", dims.headsQ,
                   ") must be a multiple of k/v heads (", dims.headsKV,
                   ") for grouped-query attention");
    return false;
  }
  const int64_t expectedOut[4] = {dims.batch, dims.seqlenQ, dims.headsQ,
                                  m.headDimV};
  if (!std::equal(std::begin(expectedOut), std::end(expectedOut), out.sizes)) {
    error = concat("out has shape ", formatList(out.sizes), ", expected ",
                   formatList(expectedOut),
                   " (batch, seqlen_q, heads_q, head_dim_v)");
    return false;
  }
  if (lse.dtype != DType::F32) {
    error = concat("lse has dtype ", stringifyDType(lse.dtype),
                   ", expected f32 (float32)");
    return false;
  }
  const int64_t expectedLse[3] = {dims.batch, dims.headsQ, dims.seqlenQ};
  if (!std::equal(std::begin(expectedLse), std::end(expectedLse), lse.sizes)) {
    error = concat("lse has shape ", formatList(lse.sizes), ", expected ",
                   formatList(expectedLse), " (batch, heads_q, seqlen_q)");
    return false;
  }

  dims.empty = dims.batch == 0 || dims.headsQ == 0;
  if (!dims.empty) {
    if (dims.seqlenQ < 1 || dims.seqlenK < 1) {
      error = concat("seqlens must be >= 1, got seqlen_q = ", dims.seqlenQ,
                     ", seqlen_k = ", dims.seqlenK);
      return false;
    }
    const std::pair<const char *, int64_t> sizes[] = {
        {"batch", dims.batch},     {"seqlen_q", dims.seqlenQ},
        {"seqlen_k", dims.seqlenK}, {"heads_q", dims.headsQ},
        {"heads_kv", dims.headsKV}};
    for (const auto &[name, value] : sizes) {
      if (value > kI32Max) {
        error = concat(name, " = ", value, " does not fit a 32-bit integer");
        return false;
      }
    }
    if (dims.headsQ > kGridYZMax) {
      error = concat("heads_q = ", dims.headsQ, " exceeds the grid y limit ",
                     kGridYZMax);
      return false;
    }
    if (dims.batch > kGridYZMax) {
      error = concat("batch = ", dims.batch, " exceeds the grid z limit ",
                     kGridYZMax);
      return false;
    }
    if (!checkLayout("q", q.data, q.sizes, q.strides, q.dtype, 3, error) ||
        !checkLayout("k", k.data, k.sizes, k.strides, k.dtype, 3, error) ||
        !checkLayout("v", v.data, v.sizes, v.strides, v.dtype, 3, error) ||
        !checkLayout("out", out.data, out.sizes, out.strides, out.dtype, 3,
                     error) ||
        !checkNoOverlap("out", out.sizes, out.strides, error) ||
        !checkLayout("lse", lse.data, lse.sizes, lse.strides, lse.dtype, 2,
                     error) ||
        !checkNoOverlap("lse", lse.sizes, lse.strides, error))
      return false;
  }
  dims.grid[0] = (dims.seqlenQ + m.config.tileM - 1) / m.config.tileM;
  dims.grid[1] = dims.headsQ;
  dims.grid[2] = dims.batch;
  if (dimsOut)
    *dimsOut = dims;
  return true;
}

void *FlashKernel::getFunction(void *context, int device, std::string &error) {
  std::lock_guard<std::mutex> lock(mutex);
  for (const LoadedModule &m : loaded)
    if (m.context == context)
      return m.function;
  std::string ignored;
  const Driver *drv = getDriver(ignored);
  const KernelMetadata &meta = metadata;

  // A PTX image must be NUL-terminated; a cubin (ELF) is used as is.
  std::vector<char> terminated;
  const void *data = image.data();
  bool isElf = image.size() >= 4 && std::memcmp(image.data(), "\x7f" "ELF", 4) == 0;
  if (!isElf) {
    terminated = image;
    terminated.push_back('\0');
    data = terminated.data();
  }
  CUhandle module = nullptr;
  CUresult code = drv->cuModuleLoadData(&module, data);
  if (code == kCudaErrorNoBinaryForGpu) {
    error = concat(meta.cubinPath, ": cuModuleLoadData failed: ",
                   drv->errorText(code), "; the cubin is for ",
                   !meta.isa.empty() ? meta.isa
                   : !meta.arch.empty() ? meta.arch
                                        : std::string("an unknown chip"),
                   ", which device ", device, " cannot run");
    return nullptr;
  }
  if (!drv->check(code, concat("cuModuleLoadData(", meta.cubinPath, ")"),
                  error))
    return nullptr;
  CUhandle function = nullptr;
  if (!drv->check(drv->cuModuleGetFunction(&function, module,
                                           meta.kernelName.c_str()),
                  concat("cuModuleGetFunction(\"", meta.kernelName, "\") in ",
                         meta.cubinPath),
                  error)) {
    drv->cuModuleUnload(module);
    return nullptr;
  }
  if (meta.dynamicSmemBytes > kStaticSmemLimit &&
      !drv->check(drv->cuFuncSetAttribute(
                      function, kFuncAttributeMaxDynamicSharedSizeBytes,
                      static_cast<int>(meta.dynamicSmemBytes)),
                  concat("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = ",
                         meta.dynamicSmemBytes, ") for ", meta.kernelName),
                  error)) {
    drv->cuModuleUnload(module);
    return nullptr;
  }
  loaded.push_back({context, module, function});
  return function;
}

bool FlashKernel::launch(const TensorArg &q, const TensorArg &k,
                         const TensorArg &v, const TensorArg &out,
                         const LseArg &lse, float softmaxScale, void *stream,
                         std::string &error) {
  LaunchDims dims;
  if (!check(q, k, v, out, lse, error, &dims))
    return false;
  float scale = std::isnan(softmaxScale)
                    ? static_cast<float>(metadata.softmaxScale)
                    : softmaxScale;
  if (!std::isfinite(scale)) {
    error = concat("softmax_scale = ", softmaxScale, " is not finite");
    return false;
  }
  if (dims.empty)
    return true;

  // Pack the parameters in the metadata's order and types.
  union Slot {
    void *ptr;
    int32_t i32;
    int64_t i64;
    float f32;
  };
  std::vector<Slot> slots(metadata.params.size());
  std::vector<void *> kernelParams(metadata.params.size());
  for (size_t i = 0; i < metadata.params.size(); ++i) {
    const KernelParam &p = metadata.params[i];
    const std::string &n = p.name;
    Slot &slot = slots[i];
    kernelParams[i] = &slot;
    if (p.type == ParamType::Ptr) {
      slot.ptr = n == "q"   ? q.data
                 : n == "k" ? k.data
                 : n == "v" ? v.data
                 : n == "o" ? out.data
                            : lse.data;
      continue;
    }
    if (p.type == ParamType::F32) {
      slot.f32 = scale;
      continue;
    }
    int64_t value = 0;
    auto strideOf = [&](const TensorArg &t, std::string_view which) {
      return which == "batch" ? t.strides[0]
             : which == "seq" ? t.strides[1]
                              : t.strides[2];
    };
    auto suffix = [&](size_t prefixLen) {
      return std::string_view(n).substr(prefixLen + std::strlen("_stride_"));
    };
    if (n == "batch")
      value = dims.batch;
    else if (n == "seqlen_q")
      value = dims.seqlenQ;
    else if (n == "seqlen_k")
      value = dims.seqlenK;
    else if (n == "heads_q")
      value = dims.headsQ;
    else if (n == "heads_kv")
      value = dims.headsKV;
    else if (n == "head_dim")
      value = metadata.headDim;
    else if (n == "head_dim_v")
      value = metadata.headDimV;
    else if (n.rfind("lse_stride_", 0) == 0)
      value = suffix(3) == "batch"  ? lse.strides[0]
              : suffix(3) == "head" ? lse.strides[1]
                                    : lse.strides[2];
    else if (n.rfind("q_stride_", 0) == 0)
      value = strideOf(q, suffix(1));
    else if (n.rfind("k_stride_", 0) == 0)
      value = strideOf(k, suffix(1));
    else if (n.rfind("v_stride_", 0) == 0)
      value = strideOf(v, suffix(1));
    else if (n.rfind("o_stride_", 0) == 0)
      value = strideOf(out, suffix(1));
    if (p.type == ParamType::I32) {
      if (value < std::numeric_limits<int32_t>::min() || value > kI32Max) {
        error = concat("kernel parameter ", n, " = ", value,
                       " does not fit i32");
        return false;
      }
      slot.i32 = static_cast<int32_t>(value);
    } else {
      slot.i64 = value;
    }
  }

  const Driver *drv = getDriver(error);
  if (!drv)
    return false;
  ScopedDeviceContext context(*drv, q.device, error);
  if (!context.get())
    return false;
  void *function = getFunction(context.get(), q.device, error);
  if (!function)
    return false;
  const int64_t *g = dims.grid;
  const int64_t *b = metadata.block;
  return drv->check(
      drv->cuLaunchKernel(function, static_cast<unsigned>(g[0]),
                          static_cast<unsigned>(g[1]),
                          static_cast<unsigned>(g[2]),
                          static_cast<unsigned>(b[0]),
                          static_cast<unsigned>(b[1]),
                          static_cast<unsigned>(b[2]),
                          static_cast<unsigned>(metadata.dynamicSmemBytes),
                          stream, kernelParams.data(), nullptr),
      concat("cuLaunchKernel(", metadata.kernelName, ", grid ",
             formatList(dims.grid), ", block ", formatList(metadata.block),
             ", ", metadata.dynamicSmemBytes, " B dynamic smem)"),
      error);
}

bool flashtile::runtime::isDriverAvailable(std::string &error) {
  return getDriver(error) != nullptr;
}
