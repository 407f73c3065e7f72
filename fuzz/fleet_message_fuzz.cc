// The fleet's upstream WebSocket messages (fleet/message.h): the sequence
// number found at a connection's seq_field, and the sink line each kept
// message becomes.
//
// Input: the seq_field ("seq", "data.seq"), a newline, then the message.
// Properties: find_seq() takes exactly what boost::json::parse() reads as
// an integer that fits int64 at that path (a key given twice counts by its
// last value), and finds the same number; the sink line of a message taken
// is one line of JSON whose fields are the record's, its msg the message,
// and stays so once SinkBatch::stamp() has rewritten its time.
#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "fleet/connections.h"
#include "fleet/message.h"

namespace {

namespace json = boost::json;
namespace fleet = leasehold::fleet;
using leasehold::fuzz::escaped;

// What boost::json::parse() finds at `path`: nullopt unless an int64.
std::optional<int64_t> reference_seq(std::string_view message,
                                     const std::vector<std::string>& path) {
  json::error_code ec;
  const json::value parsed = json::parse(message, ec);
  if (ec) return std::nullopt;
  const json::value* at = &parsed;
  for (const std::string& step : path) {
    const json::object* o = at->if_object();
    at = o != nullptr ? o->if_contains(step) : nullptr;
    if (at == nullptr) return std::nullopt;
  }
  if (at->is_int64()) return at->get_int64();
  if (at->is_uint64() && at->get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(at->get_uint64());
  }
  return std::nullopt;
}

void check_line(std::string_view line, const fleet::SinkRecord& record, int64_t written_at_ms) {
  FUZZ_CHECK(line.find('\n') == std::string_view::npos && line.find('\r') == std::string_view::npos,
             "a sink line that spans lines: " + escaped(line));
  json::error_code ec;
  const json::value parsed = json::parse(line, ec);
  FUZZ_CHECK(!ec && parsed.is_object(), "a sink line that is not JSON: " + escaped(line));
  const json::object& o = parsed.get_object();
  FUZZ_CHECK(o.at("conn") == json::value(record.conn) && o.at("seq") == json::value(record.seq) &&
                 o.at("worker") == json::value(record.worker) &&
                 o.at("epoch") == json::value(record.epoch) &&
                 o.at("written_at_ms") == json::value(written_at_ms),
             "the fields of " + escaped(line));
  FUZZ_CHECK(o.at("msg") == json::parse(record.msg), "the msg of " + escaped(line));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  const std::string_view field = input.substr(0, newline);
  const std::string_view message = input.substr(newline + 1);
  if (!fleet::validate_seq_field(field).ok()) return 0;
  const std::vector<std::string> path = fleet::split_seq_field(field);
  const leasehold::Result<int64_t> seq = fleet::find_seq(message, path);
  const std::optional<int64_t> expected = reference_seq(message, path);
  FUZZ_CHECK(seq.ok() == expected.has_value(),
             std::string(seq.ok() ? "find_seq took " : "find_seq refused ") + escaped(message) +
                 " at " + escaped(field));
  if (!seq.ok()) return 0;
  FUZZ_CHECK_EQ(*seq, *expected, "the sequence number of " + escaped(message));
  const fleet::SinkRecord record{.conn = "c\"1\n",
                                 .seq = *seq,
                                 .worker = "w\\1",
                                 .epoch = 3,
                                 .written_at_ms = 1'700'000'000'000,
                                 .msg = message};
  fleet::SinkBatch batch;
  batch.add(record);
  std::string_view text = batch.text();
  FUZZ_CHECK(text.ends_with('\n'), "a batch's line without its newline");
  check_line(text.substr(0, text.size() - 1), record, record.written_at_ms);
  batch.stamp(7);  // fewer digits: the line is rebuilt
  text = batch.text();
  check_line(text.substr(0, text.size() - 1), record, 7);
  return 0;
}
