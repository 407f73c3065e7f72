// Router: patterns compiled into segments once, at add(); match() finds a
// route without parameters by its path, and otherwise compares the path's
// segments with each route's, which is cheap for the few dozen routes a
// server has.
#include "server/router.h"

#include <algorithm>
#include <cassert>
#include <set>
#include <utility>

namespace leasehold::server {
namespace {

// "/a/b" → {"a", "b"}; "/" → {""}; "/a/" → {"a", ""}. REQUIRES: path
// starts with '/'.
std::vector<std::string_view> split_segments(std::string_view path) {
  std::vector<std::string_view> segments;
  path.remove_prefix(1);
  for (;;) {
    const size_t slash = path.find('/');
    segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) return segments;
    path.remove_prefix(slash + 1);
  }
}

bool is_param_name(std::string_view name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

void Router::add(std::string method, std::string pattern, Handler handler, RouteOptions options) {
  assert(!method.empty() && handler && !pattern.empty() && pattern.front() == '/');
  Entry entry{.route = {.method = std::move(method),
                        .pattern = std::move(pattern),
                        .handler = std::move(handler),
                        .options = options},
              .segments = {}};
  std::set<std::string, std::less<>> names;
  for (std::string_view text : split_segments(entry.route.pattern)) {
    Segment segment{.kind = SegmentKind::kLiteral, .text = std::string(text)};
    if (text.starts_with('{')) {
      assert(text.ends_with('}'));
      text = text.substr(1, text.size() - 2);
      segment.kind = SegmentKind::kParam;
      if (text.ends_with("...")) {
        text.remove_suffix(3);
        segment.kind = SegmentKind::kRest;
      }
      assert(is_param_name(text) && "a parameter is named [a-z0-9_]+");
      [[maybe_unused]] const bool fresh = names.emplace(text).second;
      assert(fresh && "a parameter name appears twice in one pattern");
      segment.text = std::string(text);
    }
    assert((entry.segments.empty() || entry.segments.back().kind != SegmentKind::kRest) &&
           "{name...} must be the last segment");
    entry.segments.push_back(std::move(segment));
  }
  for ([[maybe_unused]] const Entry& other : entries_) {
    assert(!(other.route.method == entry.route.method &&
             std::ranges::equal(other.segments, entry.segments,
                                [](const Segment& a, const Segment& b) {
                                  return a.kind == b.kind &&
                                         (a.kind != SegmentKind::kLiteral || a.text == b.text);
                                })) &&
           "a route with this method and pattern was added before");
  }
  const bool literal = std::ranges::all_of(
      entry.segments, [](const Segment& s) { return s.kind == SegmentKind::kLiteral; });
  const Entry& added = entries_.emplace_back(std::move(entry));
  if (literal) literal_[added.route.pattern][added.route.method] = &added;
}

bool Router::matches(const Entry& entry, const std::vector<std::string_view>& segments,
                     std::map<std::string, std::string, std::less<>>* params) {
  const auto& pattern = entry.segments;
  const bool rest = pattern.back().kind == SegmentKind::kRest;
  if (rest ? segments.size() < pattern.size() : segments.size() != pattern.size()) return false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    switch (pattern[i].kind) {
      case SegmentKind::kLiteral:
        if (segments[i] != pattern[i].text) return false;
        break;
      case SegmentKind::kParam:
        if (segments[i].empty()) return false;
        if (params != nullptr) (*params)[pattern[i].text] = std::string(segments[i]);
        break;
      case SegmentKind::kRest: {
        // The rest of the path, from this segment on, as one string.
        if (std::any_of(segments.begin() + i, segments.end(), [](auto s) { return s.empty(); }))
          return false;
        const char* begin = segments[i].data();
        const char* end = segments.back().data() + segments.back().size();
        if (params != nullptr) (*params)[pattern[i].text] = std::string(begin, end);
        break;
      }
    }
  }
  return true;
}

Router::Match Router::match(std::string_view method, std::string_view path) const {
  Match result;
  if (path.empty() || path.front() != '/') return result;
  if (const auto by_path = literal_.find(path); by_path != literal_.end()) {
    if (const auto it = by_path->second.find(method); it != by_path->second.end()) {
      result.route = &it->second->route;
      return result;
    }
  }
  const std::vector<std::string_view> segments = split_segments(path);
  // The most specific matching route of the method (HEAD falls back to GET),
  // and the methods of every route that matches the path.
  const Entry* best = nullptr;
  const Entry* best_get = nullptr;
  auto more_specific = [](const Entry* a, const Entry* b) {
    if (b == nullptr) return true;
    return std::ranges::lexicographical_compare(
        a->segments, b->segments,
        [](const Segment& x, const Segment& y) { return x.kind < y.kind; });
  };
  for (const Entry& entry : entries_) {
    if (!matches(entry, segments, nullptr)) continue;
    if (entry.route.method == method && more_specific(&entry, best)) best = &entry;
    if (entry.route.method == "GET" && more_specific(&entry, best_get)) best_get = &entry;
  }
  if (best == nullptr && method == "HEAD") best = best_get;
  if (best != nullptr) {
    result.route = &best->route;
    matches(*best, segments, &result.params);
    return result;
  }
  // No route of this method: the methods of those that match, for Allow (a
  // second pass, so that a request that is routed never builds the set).
  std::set<std::string, std::less<>> allowed;
  for (const Entry& entry : entries_) {
    if (matches(entry, segments, nullptr)) allowed.insert(entry.route.method);
  }
  if (allowed.contains("GET")) allowed.insert("HEAD");
  for (const std::string& m : allowed) {
    if (!result.allow.empty()) result.allow += ", ";
    result.allow += m;
  }
  return result;
}

}  // namespace leasehold::server
