// Upstream messages and sink lines: the pure part of streaming.
//
// An upstream message is a JSON text whose sequence number is an integer at
// a dotted path (the connection's seq_field, "seq" or "data.seq"). The worker
// writes each message it keeps to its sink as one JSON line:
//
//   {"conn":"a","seq":7,"worker":"w1","epoch":3,"written_at_ms":...,"msg":{...}}
//
// where msg is the upstream message itself. Pure functions, safe from any
// thread.
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
// message goes in as it came, unless it spans lines: then re-serialised on
// one.
void append_sink_line(const SinkRecord& record, std::string& out);

}  // namespace leasehold::fleet
