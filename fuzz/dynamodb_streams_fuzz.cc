// DynamoDB Streams' answers (store/dynamodb/wire.h): DescribeStream's
// shards, put parents first, and GetRecords' records.
//
// Input: a DescribeStream or GetRecords answer (JSON).
// Properties: parents_first() keeps every shard, once, and puts each
// parent before its children (where the parents do not form a cycle, which
// only a malformed answer has); a record decoded has a sequence number and
// the table's key, and its images decode as items do.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "store/dynamodb/wire.h"

namespace {

namespace json = boost::json;
namespace ddb = leasehold::store::dynamodb;
using leasehold::FeedShard;
using leasehold::fuzz::escaped;

void check_shards(const json::array& listed) {
  std::vector<FeedShard> shards;
  for (const json::value& v : listed) {
    if (v.is_object()) shards.push_back(ddb::decode_shard(v.get_object()));
  }
  const std::vector<FeedShard> ordered = ddb::parents_first(shards);
  FUZZ_CHECK_EQ(ordered.size(), shards.size(), "the shards ordered");
  std::multiset<std::string> given, kept;
  for (const FeedShard& s : shards) given.insert(s.id);
  for (const FeedShard& s : ordered) kept.insert(s.id);
  FUZZ_CHECK(given == kept, "parents_first lost or repeated a shard");
  // Where each ID first appears, in the output.
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < ordered.size(); ++i) at.emplace(ordered[i].id, i);
  std::map<std::string, std::string> parent_of;
  for (const FeedShard& s : shards) parent_of.emplace(s.id, s.parent_id);
  for (size_t i = 0; i < ordered.size(); ++i) {
    const FeedShard& s = ordered[i];
    if (s.parent_id.empty()) continue;
    FUZZ_CHECK(at.contains(s.parent_id),
               "a parent kept that is not listed: " + escaped(s.parent_id));
    // Is the parent on a cycle? Walk up at most shards.size() steps.
    std::string up = s.parent_id;
    size_t steps = 0;
    for (; steps <= shards.size() && !up.empty() && up != s.id; ++steps) {
      const auto p = parent_of.find(up);
      up = p == parent_of.end() ? "" : p->second;
    }
    const bool cycle = !up.empty();
    if (!cycle) {
      FUZZ_CHECK(at[s.parent_id] < i,
                 "shard " + escaped(s.id) + " before its parent " + escaped(s.parent_id));
    }
  }
}

void check_records(const json::array& records) {
  for (const json::value& v : records) {
    for (const std::string sk : {"", "sk"}) {
      const auto record = ddb::decode_record(v, "pk", sk);
      if (!record.ok()) continue;
      FUZZ_CHECK(!record->sequence.empty(), "a record without its sequence number");
      const json::object& change = v.get_object().at("dynamodb").get_object();
      const auto keys = ddb::decode_item(change.at("Keys").get_object());
      FUZZ_CHECK(keys.ok(), "the keys of a record taken do not decode");
      FUZZ_CHECK_EQ(record->key.pk, std::get<std::string>(keys->at("pk")), "the record's pk");
      if (!sk.empty()) {
        FUZZ_CHECK_EQ(record->key.sk, std::get<std::string>(keys->at("sk")), "the record's sk");
      }
      for (const auto& [field, image] :
           {std::pair{"NewImage", &record->new_image}, std::pair{"OldImage", &record->old_image}}) {
        const json::object* given = ddb::object_field(change, field);
        const bool readable = given != nullptr && ddb::decode_item(*given).ok();
        FUZZ_CHECK(image->has_value() == readable, std::string(field) + " kept or dropped wrongly");
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  json::error_code ec;
  const json::value parsed =
      json::parse(std::string_view(reinterpret_cast<const char*>(data), size), ec);
  if (ec || !parsed.is_object()) return 0;
  const json::object& answer = parsed.get_object();
  if (const json::object* stream = ddb::object_field(answer, "StreamDescription")) {
    if (const json::array* shards = ddb::array_field(*stream, "Shards")) check_shards(*shards);
  }
  if (const json::array* records = ddb::array_field(answer, "Records")) check_records(*records);
  return 0;
}
