#include "runtime/build_info.h"

#include <fmt/format.h>

// LEASEHOLD_COMMIT, rewritten by cmake/commit_header.cmake when HEAD moves;
// only this file includes it, so only this file is recompiled then.
#include "runtime/commit.h"

namespace leasehold::runtime {
namespace {

// From the compiler's own macros. Clang defines __GNUC__ too, so it goes first.
std::string compiler() {
#if defined(__clang__)
  return fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown compiler";
#endif
}

}  // namespace

BuildInfo build_info() {
  const std::string build_type = LEASEHOLD_BUILD_TYPE;
  return BuildInfo{LEASEHOLD_VERSION, compiler(), LEASEHOLD_COMMIT,
                   build_type.empty() ? "none" : build_type};
}

std::string version_line() {
  const BuildInfo b = build_info();
  return fmt::format("leasehold {} ({}, commit {}, {})", b.version, b.compiler, b.commit,
                     b.build_type);
}

}  // namespace leasehold::runtime
