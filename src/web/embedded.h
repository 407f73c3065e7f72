// The data behind assets.h, generated at build time from web/ by
// cmake/embed_web.cmake: every file of web/ (sorted by path), and the page
// paths the shell answers with one of them. Only assets.cc includes this.
// Immutable, safe from any thread.
#pragma once

#include <span>
#include <string_view>

#include "web/assets.h"

namespace leasehold::web::embedded {

// A page path ("/signin") served with an embedded file ("/signin.html").
struct PageAlias {
  std::string_view path;
  std::string_view file;
};

std::span<const Asset> assets();
std::span<const PageAlias> pages();

}  // namespace leasehold::web::embedded
