#include "movies/schema.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace leasehold::movies {

TableSpec movies_table_spec() {
  // The status index holds the keys alone: a movie's writes change its
  // status a few times in its life, so only those write the index (its
  // frames_done and lease renewals do not).
  IndexSpec by_status{kStatusIndex, attr::kStatus, attr::kCreatedAtMs, AttrType::kInt};
  by_status.projects_all = false;
  return TableSpec{kMoviesTable,
                   attr::kPk,
                   "",
                   {IndexSpec{kMoviesIndex, attr::kKind, attr::kCreatedAtMs, AttrType::kInt},
                    std::move(by_status)}};
}

TableSpec frames_table_spec() { return TableSpec{kFramesTable, attr::kPk, attr::kSk, {}}; }

TableSpec audit_table_spec() { return TableSpec{kAuditTable, attr::kPk, attr::kSk, {}}; }

TableSpec times_table_spec() { return TableSpec{kTimesTable, attr::kPk, attr::kSk, {}}; }

std::vector<TableSpec> movie_table_specs() {
  return {movies_table_spec(), frames_table_spec(), times_table_spec(), audit_table_spec()};
}

std::string movie_pk(std::string_view id) { return "MOVIE#" + std::string(id); }

Key movie_key(std::string_view id) { return Key{movie_pk(id), ""}; }

std::string frame_sk_prefix(int64_t frame) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%010lld#", static_cast<long long>(frame));
  return buf;
}

std::string frame_sk(int64_t frame, std::string_view marker_id) {
  return frame_sk_prefix(frame) + std::string(marker_id);
}

std::string job_audit_sk(int64_t at_ms, int phase, std::string_view job_id) {
  // FNV-1a: the same job ID gives the same key in every process.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : job_id) h = (h ^ c) * 0x100000001b3ULL;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%015lld#%d#%016llx", static_cast<long long>(at_ms), phase,
                static_cast<unsigned long long>(h));
  return buf;
}

std::string format_double(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("0");
}

bool parse_double(std::string_view text, double& out) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  // from_chars() also reads "inf" and "nan", which no decimal number is: a
  // movie's fps or a row's place must be finite (JSON cannot carry others).
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

}  // namespace leasehold::movies
