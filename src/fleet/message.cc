// Finding sequence numbers with Boost.JSON, and writing sink lines.
#include "fleet/message.h"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

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

Result<int64_t> find_seq(std::string_view message, const std::vector<std::string>& path) {
  // Small messages parse without touching the heap.
  unsigned char buffer[4096];
  boost::json::monotonic_resource memory(buffer, sizeof buffer);
  boost::system::error_code ec;
  const boost::json::value root = boost::json::parse(message, ec, &memory);
  if (ec) return invalid_argument("message is not JSON");
  const boost::json::value* at = &root;
  for (const std::string& name : path) {
    const boost::json::object* object = at->if_object();
    at = object == nullptr ? nullptr : object->if_contains(name);
    if (at == nullptr) return invalid_argument("message has no sequence number");
  }
  if (const int64_t* n = at->if_int64()) return *n;
  if (const uint64_t* n = at->if_uint64()) {
    if (*n <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(*n);
  }
  return invalid_argument("message's sequence number is not an int64");
}

void append_sink_line(const SinkRecord& record, std::string& out) {
  out += "{\"conn\":";
  out += boost::json::serialize(boost::json::string_view(record.conn.data(), record.conn.size()));
  out += ",\"seq\":";
  out += std::to_string(record.seq);
  out += ",\"worker\":";
  out +=
      boost::json::serialize(boost::json::string_view(record.worker.data(), record.worker.size()));
  out += ",\"epoch\":";
  out += std::to_string(record.epoch);
  out += ",\"written_at_ms\":";
  out += std::to_string(record.written_at_ms);
  out += ",\"msg\":";
  if (record.msg.find_first_of("\r\n") == std::string_view::npos) {
    out += record.msg;
  } else {
    out += boost::json::serialize(boost::json::parse(record.msg));
  }
  out += '}';
}

}  // namespace leasehold::fleet
