#include "web/assets.h"

#include <algorithm>

#include "web/embedded.h"

namespace leasehold::web {
namespace {

// Exact match only: no normalisation of any kind, so "/js/../index.html",
// "//index.html" or "/index.html/" find nothing, and nothing outside the
// embedded set can be named.
const Asset* find_file(std::string_view path) {
  const std::span<const Asset> files = embedded::assets();
  const auto it =
      std::find_if(files.begin(), files.end(), [&](const Asset& a) { return a.path == path; });
  return it == files.end() ? nullptr : &*it;
}

}  // namespace

const Asset* find_asset(std::string_view path) {
  for (const embedded::PageAlias& page : embedded::pages()) {
    if (page.path == path) return find_file(page.file);
  }
  return find_file(path);
}

std::span<const Asset> all_assets() { return embedded::assets(); }

std::vector<std::string_view> page_paths() {
  std::vector<std::string_view> paths;
  for (const embedded::PageAlias& page : embedded::pages()) paths.push_back(page.path);
  return paths;
}

}  // namespace leasehold::web
