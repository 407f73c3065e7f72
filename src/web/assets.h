// The web shell's static files (web/ in the source tree), embedded in the
// binary at build time: one binary, no files beside it.
//
// find_asset() knows exactly the files of web/ and the page paths the shell
// answers ("/" and the app's pages → index.html, "/signin" → signin.html);
// any other path, "../" and its encoded forms included, finds nothing: no
// path can reach outside the set. Immutable, safe from any thread.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace leasehold::web {

struct Asset {
  std::string_view path;          // "/app.css", "/js/api.js", "/index.html"
  std::string_view content_type;  // "text/css; charset=utf-8"
  std::string_view etag;          // "\"<first 16 hex digits of SHA-256>\"", quoted
  std::string_view body;
};

// The asset served at `path` (already percent-decoded), or null.
const Asset* find_asset(std::string_view path);

// Every embedded file (not the page aliases), for tests.
std::span<const Asset> all_assets();

// The paths the shell's pages are answered at ("/", "/fleet", "/signin",
// ...): src/web/CMakeLists.txt's LEASEHOLD_WEB_PAGES, the one list of them.
std::vector<std::string_view> page_paths();

}  // namespace leasehold::web
