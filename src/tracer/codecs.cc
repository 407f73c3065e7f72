// Loading the codecs module (tracer/codecs.h).
#include "tracer/codecs.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <system_error>
#include <vector>

namespace leasehold::tracer::codecs {
namespace {

// Where to look, in order: beside the running binary as `cmake --install`
// lays them out, then where the build tree made the module.
std::vector<std::filesystem::path> module_paths() {
  std::vector<std::filesystem::path> paths;
  std::error_code error;
  std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) paths.push_back(binary.parent_path() / LEASEHOLD_CODECS_FROM_BINDIR);
  paths.emplace_back(LEASEHOLD_CODECS_IN_BUILD_TREE);
  return paths;
}

Result<const Codecs*> load_module() {
  std::vector<std::string> tried;
  for (const std::filesystem::path& path : module_paths()) {
    std::error_code error;
    if (!std::filesystem::exists(path, error)) {
      tried.push_back(fmt::format("no {}", path.string()));
      continue;
    }
    // Never closed: the codecs stay loaded for the life of the process.
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      tried.push_back(dlerror());
      continue;
    }
    auto entry = reinterpret_cast<EntryPoint>(dlsym(module, kEntryPoint));
    if (entry == nullptr) {
      tried.push_back(fmt::format("{} has no {}()", path.string(), kEntryPoint));
      continue;
    }
    const Codecs* codecs = entry();
    if (codecs == nullptr || codecs->version != kCodecsVersion) {
      tried.push_back(fmt::format("{} is of another build of leasehold", path.string()));
      continue;
    }
    return codecs;
  }
  return unavailable(
      fmt::format("the video and image codecs (libleasehold_codecs.so) cannot be "
                  "loaded: {}",
                  fmt::join(tried, "; ")));
}

}  // namespace

Result<const Codecs*> load() {
  static const Result<const Codecs*> codecs = load_module();
  return codecs;
}

}  // namespace leasehold::tracer::codecs
