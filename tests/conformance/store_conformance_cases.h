// What the store conformance cases (store_conformance_*test.cc) share: status
// checks that name the code, MUST() for a value a case cannot go on without,
// and readers of the items a call returned. Private to those files.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::conformance {

inline Status status_of(const Status& s) { return s; }
template <typename T>
inline Status status_of(const Result<T>& r) {
  return r.status();
}

// Compares codes, printing names and the message of an unexpected status;
// `expr` is evaluated once and the macros accept `<< context`.
inline ::testing::AssertionResult has_code(Code expected, const Status& actual) {
  if (actual.code() == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected " << code_name(expected) << ", got " << actual.to_string();
}
#define EXPECT_CODE(expected, expr) EXPECT_TRUE(has_code((expected), status_of(expr)))
#define ASSERT_OK(expr) ASSERT_TRUE(has_code(Code::kOk, status_of(expr))) << #expr
#define EXPECT_OK(expr) EXPECT_TRUE(has_code(Code::kOk, status_of(expr))) << #expr

template <typename T>
inline T value_or_fail(Result<T> r, const char* what) {
  if (!r.ok()) {
    ADD_FAILURE() << what << ": " << r.status().to_string();
    return T{};
  }
  return std::move(r).value();
}
#define MUST(expr) value_or_fail((expr), #expr)

inline Key key(std::string pk, std::string sk = "") { return {std::move(pk), std::move(sk)}; }

inline std::vector<std::string> strings(const std::vector<Item>& items, std::string_view attr) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    const std::string* s = get_string(item, attr);
    out.push_back(s ? *s : "<missing " + std::string(attr) + ">");
  }
  return out;
}

// Every item of a paged query, following cursors; checks each page's size.
template <typename Fetch>
inline std::vector<Item> drain(Fetch fetch, int limit, int* pages = nullptr) {
  std::vector<Item> all;
  QueryOptions options;
  options.limit = limit;
  for (int n = 1; n <= 10'000; ++n) {
    Result<Page> page = fetch(options);
    if (!page.ok()) {
      ADD_FAILURE() << "page " << n << ": " << page.status().to_string();
      break;
    }
    EXPECT_LE(static_cast<int>(page->items.size()), limit);
    for (auto& item : page->items) all.push_back(std::move(item));
    if (pages) *pages = n;
    if (page->next_cursor.empty()) break;
    options.cursor = page->next_cursor;
  }
  return all;
}

}  // namespace leasehold::conformance
