#include "movies/frame_times.h"

#include <fmt/format.h>

#include <string_view>

#include "base/packed.h"
#include "base/text.h"
#include "movies/frame_times_internal.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {

constexpr char kTimesAttr[] = "times_z";
// The most text a part unpacks to: every timestamp at 20 digits and a space,
// every frame a key frame.
constexpr size_t kPartTextMax = kFramesPerTimesPart * 44 + 256;

std::string part_sk(int64_t first) { return fmt::format("{:010}", first); }

std::string_view next_line(std::string_view& text) {
  const size_t end = text.find('\n');
  const std::string_view line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return line;
}

}  // namespace

// "v1 NUM DEN FIRST COUNT\nPTS D D D...\nKEY D D...\n": the part's frames
// FIRST .. FIRST + COUNT - 1, their timestamps, and its key frames (the first
// in full, then differences).
std::string part_text(const tracer::FrameTimes& t, int64_t first, int64_t count,
                      size_t& key_at) {
  std::string text = fmt::format("v1 {} {} {} {}\n", t.time_base_num, t.time_base_den, first, count);
  for (int64_t n = first; n < first + count; ++n) {
    const int64_t value = n == first ? t.pts[n] : t.pts[n] - t.pts[n - 1];
    fmt::format_to(std::back_inserter(text), "{}{}", n == first ? "" : " ", value);
  }
  text += '\n';
  int64_t last_key = -1;
  for (; key_at < t.keys.size() && t.keys[key_at] < first + count; ++key_at) {
    const int64_t key = t.keys[key_at];
    fmt::format_to(std::back_inserter(text), "{}{}", last_key < 0 ? "" : " ",
                   last_key < 0 ? key : key - last_key);
    last_key = key;
  }
  text += '\n';
  return text;
}

// Appends the part `text` to `out`, whose frames so far end where it must
// start. False if it is not such a part.
bool parse_part(std::string_view text, tracer::FrameTimes& out) {
  std::string_view head = next_line(text);
  if (!head.starts_with("v1 ")) return false;
  head.remove_prefix(3);
  int64_t num = 0, den = 0, first = 0, count = 0;
  if (!next_int(head, num) || !next_int(head, den) || !next_int(head, first) ||
      !next_int(head, count) || num <= 0 || den <= 0 || num > INT32_MAX || den > INT32_MAX ||
      count < 1 || count > kFramesPerTimesPart ||
      first != static_cast<int64_t>(out.pts.size())) {
    return false;
  }
  if (!out.pts.empty() && (num != out.time_base_num || den != out.time_base_den)) return false;
  out.time_base_num = static_cast<int>(num);
  out.time_base_den = static_cast<int>(den);
  std::string_view pts = next_line(text);
  // A damaged part's differences may add up past int64: not such a part.
  for (int64_t n = 0; n < count; ++n) {
    int64_t value = 0;
    if (!next_int(pts, value)) return false;
    if (n > 0 && __builtin_add_overflow(out.pts.back(), value, &value)) return false;
    out.pts.push_back(value);
  }
  std::string_view keys = next_line(text);
  int64_t key = -1;
  for (int64_t value = 0; next_int(keys, value);) {
    if (key >= 0 && __builtin_add_overflow(key, value, &value)) return false;
    key = value;
    if (key < first || key >= first + count || (!out.keys.empty() && key <= out.keys.back())) {
      return false;
    }
    out.keys.push_back(key);
  }
  return true;
}

Status write_frame_times(ItemStore& store, const std::string& id, const tracer::FrameTimes& times) {
  if (times.pts.empty() || !times.seekable()) {
    return invalid_argument("frame times without frames, or with timestamps that go back");
  }
  const int64_t frames = static_cast<int64_t>(times.pts.size());
  size_t key_at = 0;
  for (int64_t first = 0; first < frames; first += kFramesPerTimesPart) {
    const int64_t count = std::min(kFramesPerTimesPart, frames - first);
    std::string packed = pack_text(part_text(times, first, count, key_at));
    if (packed.empty()) return resource_exhausted("frame times could not be packed");
    Item item{{attr::kPk, movie_pk(id)}, {attr::kSk, part_sk(first)}, {kTimesAttr, std::move(packed)}};
    LEASEHOLD_RETURN_IF_ERROR(store.put(kTimesTable, item, {}).with_context("frame times"));
  }
  return Status();
}

Result<tracer::FrameTimes> read_frame_times(ItemStore& store, const std::string& id,
                                            int64_t frame_count) {
  tracer::FrameTimes out;
  QueryOptions q;
  q.limit = kQueryLimitMax;
  q.consistent = true;
  do {
    LEASEHOLD_ASSIGN_OR_RETURN(Page page,
                               store.query(kTimesTable, movie_pk(id), KeyRange::all(), q));
    for (const Item& item : page.items) {
      const std::string* packed = get_string(item, kTimesAttr);
      const std::optional<std::string> text =
          packed != nullptr ? unpack_text(*packed, kPartTextMax) : std::nullopt;
      if (!text || !parse_part(*text, out)) {
        return internal_error(fmt::format("the frame times of movie {} are damaged (part {})", id,
                                     get_string_or(item, attr::kSk)));
      }
    }
    q.cursor = std::move(page.next_cursor);
  } while (!q.cursor.empty());
  if (out.pts.empty()) return not_found(fmt::format("no frame times for movie {}", id));
  if (static_cast<int64_t>(out.pts.size()) != frame_count || !out.seekable()) {
    return internal_error(fmt::format("the frame times of movie {} are for {} frames, not {}", id,
                                 out.pts.size(), frame_count));
  }
  return out;
}

}  // namespace leasehold::movies
