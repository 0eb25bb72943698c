//===- Messages.h - Building the run side's error messages ------*- C++ -*-===//
//
// Private to the LLVM-free side: lib/ABI and lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_LIB_ABI_MESSAGES_H
#define FLASHTILE_LIB_ABI_MESSAGES_H

#include <sstream>
#include <string>

namespace flashtile::runtime_detail {

/// The parts streamed into one string: concat(path, ": expected ", n).
template <typename... Ts> std::string concat(const Ts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

} // namespace flashtile::runtime_detail

#endif // FLASHTILE_LIB_ABI_MESSAGES_H
