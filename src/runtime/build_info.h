// What this build of leasehold is: version, compiler, commit, build type.
// For `leasehold --version` and for bug reports. Plain values; thread-safe.
#pragma once

#include <string>

namespace leasehold::runtime {

struct BuildInfo {
  std::string version;     // the CMake project version, e.g. "0.1.0"
  std::string compiler;    // e.g. "gcc 12.2.0", "clang 16.0.6"
  std::string commit;      // 8 hex digits of the git commit built, or "unknown"
  std::string build_type;  // e.g. "RelWithDebInfo"; "none" if CMake was given none
};

BuildInfo build_info();

// "leasehold 0.1.0 (gcc 12.2.0, commit 1a2b3c4d, RelWithDebInfo)".
std::string version_line();

}  // namespace leasehold::runtime
