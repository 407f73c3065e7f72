// A trace's frame rows (movies/movies_impl.h has the layout of Movies'
// files): pages of the latest trace's rows behind an opaque cursor, and the
// CSV of all of them, read a page per part.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "base/text.h"
#include "movies/frame_times.h"
#include "movies/movies.h"
#include "movies/movies_impl.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {


// A text cell of the CSV. One that begins as a formula would (=, +, -, @,
// tab, CR) is prefixed with a single quote, which a spreadsheet shows and
// never runs (OWASP's advice on CSV injection); then a cell with a comma, a
// quote or a line break is quoted, its quotes doubled.
void append_csv_text(const std::string& s, std::string& out) {
  const bool formula = !s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string::npos;
  const bool quoted = s.find_first_of(",\"\r\n") != std::string::npos;
  if (quoted) out += '"';
  if (formula) out += '\'';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  if (quoted) out += '"';
}

void append_csv_line(const FrameRow& r, std::string& out) {
  out += std::to_string(r.frame);
  out += ',';
  out += format_double(r.time_s);
  out += ',';
  append_csv_text(r.marker_id, out);
  out += ',';
  append_csv_text(r.label, out);
  for (double v : {r.x, r.y, r.score}) {
    out += ',';
    out += format_double(v);
  }
  out += ',';
  append_csv_text(r.status, out);
  for (const std::optional<double>& v : {r.vx, r.vy}) {
    out += ',';
    if (v) out += format_double(*v);
  }
  out += '\n';
}

FrameRow frame_row_of(const Item& item) {
  FrameRow r;
  r.marker_id = get_string_or(item, "marker_id");
  r.label = get_string_or(item, "label");
  r.frame = get_int_or(item, "frame");
  parse_double(get_string_or(item, "time_s"), r.time_s);
  parse_double(get_string_or(item, "x"), r.x);
  parse_double(get_string_or(item, "y"), r.y);
  parse_double(get_string_or(item, "score"), r.score);
  r.status = get_string_or(item, "status");
  double v = 0;
  if (parse_double(get_string_or(item, "vx"), v)) r.vx = v;
  if (parse_double(get_string_or(item, "vy"), v)) r.vy = v;
  r.job_id = get_string_or(item, attr::kJobId);
  r.job_epoch = get_int_or(item, attr::kJobEpoch);
  return r;
}

}  // namespace

namespace internal {

std::string frames_cursor(int64_t epoch, std::string_view sk) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = std::to_string(epoch) + ".";
  for (char c : sk) {
    const auto byte = static_cast<unsigned char>(c);
    out += kDigits[byte >> 4];
    out += kDigits[byte & 0xf];
  }
  return out;
}

Result<FramesPosition> parse_frames_cursor(std::string_view cursor) {
  const Status bad = invalid_argument("after: not a cursor of this movie's frames");
  const size_t dot = cursor.find('.');
  if (dot == std::string_view::npos || cursor.size() > 512) return bad;
  FramesPosition p;
  const std::string_view epoch = cursor.substr(0, dot);
  const auto [end, ec] = std::from_chars(epoch.data(), epoch.data() + epoch.size(), p.epoch);
  if (ec != std::errc() || end != epoch.data() + epoch.size() || p.epoch < 1) return bad;
  const std::string_view hex = cursor.substr(dot + 1);
  if (hex.size() % 2 != 0) return bad;
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned byte = 0;
    const auto [at, hex_ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, byte, 16);
    if (hex_ec != std::errc() || at != hex.data() + i + 2) return bad;
    p.sk += static_cast<char>(byte);
  }
  // A row's sort key (schema.h): frame_sk() of a frame and a marker id.
  const size_t hash = p.sk.find('#');
  if (hash != 10 || p.sk.size() == 11 || p.sk.size() > 11 + kMarkerIdBytesMax ||
      !std::ranges::all_of(std::string_view(p.sk).substr(0, 10),
                           [](char c) { return c >= '0' && c <= '9'; })) {
    return bad;
  }
  return p;
}

}  // namespace internal

// Rows of older traces are skipped (they are removed in the background), so
// a page may read past more rows than it returns. One row beyond the page
// says whether another page follows.
Result<FramePage> Movies::Impl::frames(const std::string& id, const FramesOptions& options) {
  if (options.limit < 1 || options.limit > kFramesLimitMax) {
    return invalid_argument("limit: expected 1 to " + std::to_string(kFramesLimitMax));
  }
  std::optional<internal::FramesPosition> after;
  if (!options.after.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(after, internal::parse_frames_cursor(options.after));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const Item movie, read_item(id));
  const int64_t epoch = leases_.view_of(movie, movie_key(id), kTracingSlot).epoch;
  if (after && after->epoch != epoch) {
    return failed_precondition(
        "the movie was traced again since the page before; read its frames from the first page");
  }
  FramePage out;
  if (epoch == 0) return out;  // never traced
  std::string last_sk;
  QueryOptions q;
  q.limit = static_cast<int>(std::min<size_t>(kQueryLimitMax, options.limit + 1));
  const KeyRange range = after ? KeyRange::gt(after->sk) : KeyRange::all();
  do {
    LEASEHOLD_ASSIGN_OR_RETURN(Page page, store_.query(kFramesTable, movie_pk(id), range, q));
    for (const Item& item : page.items) {
      if (get_int_or(item, attr::kJobEpoch) != epoch) continue;
      if (out.items.size() == options.limit) {
        out.next_after = internal::frames_cursor(epoch, last_sk);
        return out;
      }
      out.items.push_back(frame_row_of(item));
      last_sk = get_string_or(item, attr::kSk);
    }
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  return out;
}

Result<FramePage> Movies::frames(const std::string& id, const FramesOptions& options) {
  return impl_->frames(id, options);
}

Result<tracer::FrameTimes> Movies::frame_times(const std::string& id) {
  return impl_->frame_times(id);
}

Result<tracer::FrameTimes> Movies::Impl::frame_times(const std::string& id) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, read(id));
  if (m.frame_count < 1 || m.fps <= 0) {
    return failed_precondition("the movie is " + m.status + ": its frames have times once it is probed");
  }
  Result<tracer::FrameTimes> kept = read_frame_times(store_, id, m.frame_count);
  if (kept.status().code() != Code::kNotFound) return kept;
  tracer::FrameTimes steady{.time_base_num = 1, .time_base_den = 1'000'000, .pts = {}, .keys = {0}};
  steady.pts.reserve(static_cast<size_t>(m.frame_count));
  for (int64_t n = 0; n < m.frame_count; ++n) {
    steady.pts.push_back(static_cast<int64_t>(std::llround(static_cast<double>(n) * 1e6 / m.fps)));
  }
  return steady;
}

FramesCsv Movies::frames_csv(const std::string& id) { return FramesCsv(*this, id); }

Result<bool> FramesCsv::next(std::string& part) {
  part.clear();
  if (!started_) {
    part = "frame,time_s,marker_id,label,x,y,score,status,vx_px_per_s,vy_px_per_s\n";
    started_ = true;
  }
  LEASEHOLD_ASSIGN_OR_RETURN(FramePage page, movies_->frames(id_, {kFramesCsvRowsPerPart, after_}));
  for (const FrameRow& r : page.items) append_csv_line(r, part);
  after_ = std::move(page.next_after);
  return !after_.empty();
}

}  // namespace leasehold::movies
