// Upstream messages and sink lines: the pure part of streaming.
//
// An upstream message is a JSON text whose sequence number is an integer at
// a dotted path (the connection's seq_field, "seq" or "data.seq"). The worker
// writes each message it keeps to its sink as one JSON line:
//
//   {"conn":"a","seq":7,"worker":"w1","epoch":3,"written_at_ms":...,"msg":{...}}
//
// where msg is the upstream message itself. The lines of one stream's batch
// of messages go to the sink together, as one SinkBatch. Pure functions,
// safe from any thread; a SinkBatch is used by one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/status.h"

namespace leasehold::fleet {

// "data.seq" → {"data", "seq"}. REQUIRES: a valid seq field (connections.h).
std::vector<std::string> split_seq_field(std::string_view dotted);

// The integer at `path` in the JSON text `message`. kInvalidArgument, with a
// message fit for a log line (it never quotes the message), when the text is
// not JSON or has no integer there (a float, a string, out of int64 range).
Result<int64_t> find_seq(std::string_view message, const std::vector<std::string>& path);

struct SinkRecord {
  std::string_view conn;
  int64_t seq = 0;
  std::string_view worker;
  int64_t epoch = 0;
  int64_t written_at_ms = 0;
  std::string_view msg;  // the upstream message, valid JSON
};

// Appends `record` as one line of JSON, without the newline, to `out`. The
// message goes in as it came, but for its line breaks (whitespace between
// tokens in valid JSON), which become spaces. Sets `*stamp_at`, if given, to where written_at_ms's
// digits begin.
void append_sink_line(const SinkRecord& record, std::string& out, size_t* stamp_at = nullptr);

// Sink lines of one connection for one sink write: each ends in a newline,
// and their sequence numbers strictly increase, so that the last line a
// write got into the sink says what the sink holds. Kept from batch to batch
// to reuse its memory.
class SinkBatch {
 public:
  void clear();
  // Appends the line of `record`. REQUIRES: empty() or record.seq > last_seq().
  void add(const SinkRecord& record);

  bool empty() const { return seqs_.empty(); }
  size_t size() const { return seqs_.size(); }
  std::string_view text() const { return text_; }  // the lines, for Sink::write
  // REQUIRES: i < size().
  int64_t seq(size_t i) const { return seqs_[i]; }
  // REQUIRES: !empty().
  int64_t last_seq() const { return seqs_.back(); }
  // How many lines lie wholly within the first `bytes` bytes of text(): the
  // lines a write that got that far put into the sink.
  size_t lines_within(size_t bytes) const;
  // Sets every line's written_at_ms to `written_at_ms`: the time of the
  // write itself, stamped at the last moment before it (Sink, BeforeWrite).
  // In place, unless the number has another count of digits than the one it
  // replaces; text() may then move.
  void stamp(int64_t written_at_ms);

 private:
  std::string text_;
  std::vector<size_t> ends_;  // where each line ends in text_, past its newline
  std::vector<int64_t> seqs_;
  std::vector<size_t> stamps_;        // where each line's written_at_ms begins in text_
  std::vector<size_t> stamp_widths_;  // and how many digits it has
};

}  // namespace leasehold::fleet
