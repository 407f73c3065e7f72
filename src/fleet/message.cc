// Finding sequence numbers with Boost.JSON's SAX parser, and writing sink
// lines. Both run once per upstream message: neither builds a JSON tree nor
// allocates in the common case (a SinkBatch keeps its memory).
#include "fleet/message.h"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cassert>
#include <charconv>

namespace leasehold::fleet {

std::vector<std::string> split_seq_field(std::string_view dotted) {
  std::vector<std::string> path;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    path.emplace_back(dotted.substr(start, dot - start));
    if (dot == std::string_view::npos) return path;
    start = dot + 1;
  }
}

namespace {

// What the value at the sequence number's path turned out to be.
enum class Found { kNothing, kInt64, kUint64, kOther };

// A Boost.JSON SAX handler that validates the whole text, as a parse into a
// DOM would, but keeps only the value at `path`: no tree is built, nothing
// allocated unless a key spans escapes. The containers on the path are
// objects at depths 1..matched+1; a key of the innermost of them that names
// the next step makes the next value (a `hit`) the one that step leads to.
// A key repeated in one object leaves its last value, as the DOM does.
class SeqFinder {
 public:
  using error_code = boost::system::error_code;
  static constexpr size_t max_object_size = size_t(-1);
  static constexpr size_t max_array_size = size_t(-1);
  static constexpr size_t max_key_size = size_t(-1);
  static constexpr size_t max_string_size = size_t(-1);

  explicit SeqFinder(const std::vector<std::string>& path) : path_(path) {}

  Found found() const { return found_; }
  int64_t int64() const { return int64_; }
  uint64_t uint64() const { return uint64_; }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) {
    const bool hit = take_hit();
    ++depth_;
    if (hit) {
      if (matched_ + 1 < path_.size()) {
        ++matched_;  // this object is on the path; what was found below is not
        found_ = Found::kNothing;
      } else {
        found_ = Found::kOther;
      }
    }
    return true;
  }
  bool on_object_end(size_t, error_code&) {
    if (matched_ > 0 && depth_ == matched_ + 1) --matched_;
    --depth_;
    return true;
  }
  bool on_array_begin(error_code&) {
    scalar(Found::kOther);
    ++depth_;
    return true;
  }
  bool on_array_end(size_t, error_code&) {
    --depth_;
    return true;
  }
  bool on_key_part(boost::json::string_view s, size_t, error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(boost::json::string_view s, size_t, error_code&) {
    std::string_view key(s.data(), s.size());
    if (!key_.empty()) key = key_.append(s.data(), s.size());
    hit_ = depth_ == matched_ + 1 && key == path_[matched_];
    key_.clear();
    return true;
  }
  bool on_string_part(boost::json::string_view, size_t, error_code&) { return true; }
  bool on_string(boost::json::string_view, size_t, error_code&) {
    scalar(Found::kOther);
    return true;
  }
  bool on_number_part(boost::json::string_view, error_code&) { return true; }
  bool on_int64(int64_t n, boost::json::string_view, error_code&) {
    if (scalar(Found::kInt64)) int64_ = n;
    return true;
  }
  bool on_uint64(uint64_t n, boost::json::string_view, error_code&) {
    if (scalar(Found::kUint64)) uint64_ = n;
    return true;
  }
  bool on_double(double, boost::json::string_view, error_code&) {
    scalar(Found::kOther);
    return true;
  }
  bool on_bool(bool, error_code&) {
    scalar(Found::kOther);
    return true;
  }
  bool on_null(error_code&) {
    scalar(Found::kOther);
    return true;
  }
  bool on_comment_part(boost::json::string_view, error_code&) { return true; }
  bool on_comment(boost::json::string_view, error_code&) { return true; }

 private:
  bool take_hit() {
    const bool hit = hit_;
    hit_ = false;
    return hit;
  }
  // A value that is not an object. True if it is the value at the path.
  // (The handlers return true to go on: false would stop the parse.)
  bool scalar(Found kind) {
    if (!take_hit()) return false;
    // Short of the last step, anything but an object means no number there.
    found_ = matched_ + 1 < path_.size() ? Found::kNothing : kind;
    return found_ == kind;
  }

  const std::vector<std::string>& path_;
  size_t depth_ = 0;    // containers open
  size_t matched_ = 0;  // steps of the path the open containers follow
  bool hit_ = false;
  std::string key_;  // a key that came in parts
  Found found_ = Found::kNothing;
  int64_t int64_ = 0;
  uint64_t uint64_ = 0;
};

bool plain_json_string_char(char c) { return c >= 0x20 && c != '"' && c != '\\' && c != 0x7f; }

// Appends `s` as a JSON string. Connection and worker ids need no escapes
// (their own rules allow none), so they are copied as they are.
void append_json_string(std::string& out, std::string_view s) {
  if (std::all_of(s.begin(), s.end(), plain_json_string_char)) {
    out += '"';
    out += s;
    out += '"';
  } else {
    out += boost::json::serialize(boost::json::string_view(s.data(), s.size()));
  }
}

void append_int(std::string& out, int64_t n) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
}

}  // namespace

Result<int64_t> find_seq(std::string_view message, const std::vector<std::string>& path) {
  boost::json::basic_parser<SeqFinder> parser(boost::json::parse_options(), path);
  boost::system::error_code ec;
  const size_t used = parser.write_some(false, message.data(), message.size(), ec);
  if (ec || used < message.size()) return invalid_argument("message is not JSON");
  const SeqFinder& found = parser.handler();
  switch (found.found()) {
    case Found::kNothing:
      return invalid_argument("message has no sequence number");
    case Found::kInt64:
      return found.int64();
    case Found::kUint64:
      if (found.uint64() <= static_cast<uint64_t>(INT64_MAX)) {
        return static_cast<int64_t>(found.uint64());
      }
      break;
    case Found::kOther:
      break;
  }
  return invalid_argument("message's sequence number is not an int64");
}

void append_sink_line(const SinkRecord& record, std::string& out, size_t* stamp_at) {
  out += "{\"conn\":";
  append_json_string(out, record.conn);
  out += ",\"seq\":";
  append_int(out, record.seq);
  out += ",\"worker\":";
  append_json_string(out, record.worker);
  out += ",\"epoch\":";
  append_int(out, record.epoch);
  out += ",\"written_at_ms\":";
  if (stamp_at != nullptr) *stamp_at = out.size();
  append_int(out, record.written_at_ms);
  out += ",\"msg\":";
  // In valid JSON a raw CR or LF can only be whitespace between tokens
  // (inside a string it must be escaped), so a message that spans lines
  // goes in with each one as a space: the same JSON, on one line, its
  // numbers as they came (parsing and serialising it again could change a
  // double's last digit).
  const size_t at = out.size();
  out += record.msg;
  for (size_t i = at; i < out.size(); ++i) {
    if (out[i] == '\n' || out[i] == '\r') out[i] = ' ';
  }
  out += '}';
}

void SinkBatch::clear() {
  text_.clear();
  ends_.clear();
  seqs_.clear();
  stamps_.clear();
  stamp_widths_.clear();
}

void SinkBatch::add(const SinkRecord& record) {
  assert(empty() || record.seq > last_seq());
  size_t stamp_at = 0;
  append_sink_line(record, text_, &stamp_at);
  stamps_.push_back(stamp_at);
  stamp_widths_.push_back(text_.find(',', stamp_at) - stamp_at);  // the digits, up to ,"msg"
  text_ += '\n';
  ends_.push_back(text_.size());
  seqs_.push_back(record.seq);
}

void SinkBatch::stamp(int64_t written_at_ms) {
  char digits[24];
  const std::string_view now(digits,
                             std::to_chars(digits, digits + sizeof digits, written_at_ms).ptr);
  if (std::all_of(stamp_widths_.begin(), stamp_widths_.end(),
                  [&](size_t width) { return width == now.size(); })) {
    // The usual case: wall times in ms have 13 digits from 2001 to 2286.
    for (const size_t at : stamps_) text_.replace(at, now.size(), now);
    return;
  }
  // Rebuilt line by line, and every position after a stamp moves.
  std::string text;
  text.reserve(text_.size() + stamps_.size() * now.size());
  size_t line_start = 0;
  for (size_t i = 0; i < stamps_.size(); ++i) {
    text.append(text_, line_start, stamps_[i] - line_start);
    const size_t rest = stamps_[i] + stamp_widths_[i];
    stamps_[i] = text.size();
    stamp_widths_[i] = now.size();
    text += now;
    text.append(text_, rest, ends_[i] - rest);
    line_start = ends_[i];
    ends_[i] = text.size();
  }
  text_ = std::move(text);
}

size_t SinkBatch::lines_within(size_t bytes) const {
  return static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), bytes) - ends_.begin());
}

}  // namespace leasehold::fleet
