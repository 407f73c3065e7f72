#include "web/assets.h"

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace leasehold::web {
namespace {

namespace fs = std::filesystem;

const fs::path kWebDir = LEASEHOLD_WEB_DIR;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string quoted_etag(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string etag = "\"";
  for (int i = 0; i < 8; ++i) {
    etag += kHex[digest[i] >> 4];
    etag += kHex[digest[i] & 0xf];
  }
  return etag + "\"";
}

// The files of web/ as the server must see them: "/js/api.js" -> path on
// disk. Names starting with "." (editors' swap files) are not served. And
// the files from npm served beside them ("/vendor/uplot.js=PATH,...").
std::map<std::string, fs::path> files_in_web_dir() {
  std::map<std::string, fs::path> files;
  std::istringstream extra(LEASEHOLD_WEB_EXTRA);
  for (std::string entry; std::getline(extra, entry, ',');) {
    const size_t equals = entry.find('=');
    files.emplace(entry.substr(0, equals), entry.substr(equals + 1));
  }
  for (const auto& entry : fs::recursive_directory_iterator(kWebDir)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), kWebDir).generic_string();
    if (relative.starts_with(".") || relative.find("/.") != std::string::npos) continue;
    files.emplace("/" + relative, entry.path());
  }
  return files;
}

std::string expected_type(const fs::path& path) {
  static const std::map<std::string, std::string> kTypes = {
      {".html", "text/html; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".json", "application/json"},
      {".woff2", "font/woff2"},
  };
  const auto it = kTypes.find(path.extension().string());
  return it == kTypes.end() ? "(no type for " + path.string() + ")" : it->second;
}

TEST(Assets, EveryFileOfWebIsEmbeddedWithItsTypeAndEtag) {
  const auto files = files_in_web_dir();
  ASSERT_TRUE(files.contains("/index.html"));
  ASSERT_TRUE(files.contains("/signin.html"));
  for (const auto& [path, source] : files) {
    SCOPED_TRACE(path);
    const Asset* asset = find_asset(path);
    ASSERT_NE(asset, nullptr);
    EXPECT_EQ(asset->path, path);
    const std::string bytes = read_file(source);
    EXPECT_EQ(asset->body, bytes) << "rebuild after editing web/";
    EXPECT_EQ(asset->content_type, expected_type(source));
    EXPECT_EQ(asset->etag, quoted_etag(bytes));
  }
  EXPECT_EQ(all_assets().size(), files.size()) << "an embedded file that web/ does not hold";
}

TEST(Assets, EtagsAreQuotedSixteenHexDigits) {
  const std::regex shape("\"[0-9a-f]{16}\"");
  for (const Asset& asset : all_assets()) {
    EXPECT_TRUE(std::regex_match(std::string(asset.etag), shape))
        << asset.path << " " << asset.etag;
  }
}

TEST(Assets, PagesAreServedWithTheirFile) {
  const Asset* shell = find_asset("/index.html");
  const Asset* signin = find_asset("/signin.html");
  ASSERT_NE(shell, nullptr);
  ASSERT_NE(signin, nullptr);
  EXPECT_EQ(find_asset("/"), shell);
  EXPECT_EQ(find_asset("/fleet"), shell);
  EXPECT_EQ(find_asset("/movies"), shell);
  EXPECT_EQ(find_asset("/signin"), signin);
  const std::vector<std::string_view> pages = page_paths();
  EXPECT_EQ(std::set<std::string_view>(pages.begin(), pages.end()),
            (std::set<std::string_view>{"/", "/fleet", "/movies", "/signin"}));
  for (const std::string_view page : pages) EXPECT_NE(find_asset(page), nullptr) << page;
}

TEST(Assets, NothingOutsideTheSetIsFound) {
  const std::vector<std::string_view> paths = {
      "",
      "/../",
      "/%2e%2e/",
      "/%2e%2e/index.html",
      "/../index.html",
      "/js/../index.html",
      "/./index.html",
      "/index.html/",
      "//index.html",
      "index.html",
      "/INDEX.HTML",
      "/index.html?x=1",
      std::string_view("/index.html\0", 12),
      "/fleet/",
      "/signin/",
      "/signin.html/",
      "/js",
      "/js/",
      "/unknown",
      "/favicon.ico",
      "\\index.html",
  };
  for (const std::string_view path : paths) {
    EXPECT_EQ(find_asset(path), nullptr) << "'" << path << "'";
  }
}

// Every page's links to scripts, styles and icons ("/app.css") name a file
// that is embedded.
TEST(Assets, PagesLinkOnlyToEmbeddedFiles) {
  const std::regex link(R"((?:src|href)="(/[^"]*)\")");
  for (const Asset& asset : all_assets()) {
    if (!asset.path.ends_with(".html")) continue;
    const std::string html(asset.body);
    int links = 0;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), link);
         it != std::sregex_iterator(); ++it, ++links) {
      EXPECT_NE(find_asset((*it)[1].str()), nullptr) << asset.path << " links to " << (*it)[1];
    }
    EXPECT_GT(links, 0) << asset.path;
  }
}

}  // namespace
}  // namespace leasehold::web
