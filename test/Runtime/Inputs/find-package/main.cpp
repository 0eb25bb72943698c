// A launcher outside the tree, built against the installed run side only (no
// LLVM on its include path): loads a plan and lists its arguments.
#include "flashtile/Runtime/Runtime.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  std::string error;
  auto family = flashtile::runtime::KernelFamily::load(argv[1], error);
  if (!family) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  for (const flashtile::plan::Argument &arg : family->getPlan().arguments)
    std::printf("%s ", arg.name.c_str());
  std::printf("\n");
  return 0;
}
