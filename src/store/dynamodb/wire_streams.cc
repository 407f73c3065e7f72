// DynamoDB Streams' answers (wire.h): DescribeStream's shards and
// GetRecords' records, as a change feed gives them.
#include <algorithm>
#include <map>

#include "store/dynamodb/wire.h"

namespace leasehold::store::dynamodb {

namespace json = boost::json;

FeedShard decode_shard(const json::object& shard) {
  const json::object* range = object_field(shard, "SequenceNumberRange");
  return {string_field(shard, "ShardId"), string_field(shard, "ParentShardId"),
          range != nullptr && !string_field(*range, "EndingSequenceNumber").empty()};
}

std::vector<FeedShard> parents_first(std::vector<FeedShard> shards) {
  std::map<std::string, size_t, std::less<>> at;
  for (size_t i = 0; i < shards.size(); ++i) at.emplace(shards[i].id, i);
  for (FeedShard& shard : shards) {
    if (!at.contains(shard.parent_id)) shard.parent_id.clear();
  }
  std::vector<bool> placed(shards.size());
  std::vector<FeedShard> out;
  out.reserve(shards.size());
  std::vector<size_t> chain;  // a shard and its ancestors not yet placed, nearest first
  for (size_t i = 0; i < shards.size(); ++i) {
    // The find() stops a cycle, which only a malformed reply could have.
    for (size_t s = i; !placed[s] && std::find(chain.begin(), chain.end(), s) == chain.end();) {
      chain.push_back(s);
      if (shards[s].parent_id.empty()) break;
      s = at.find(shards[s].parent_id)->second;
    }
    for (auto s = chain.rbegin(); s != chain.rend(); ++s) {
      placed[*s] = true;
      out.push_back(shards[*s]);
    }
    chain.clear();
  }
  return out;
}

namespace {

// An attribute map of a record, decoded as items are (what leasehold cannot
// read is kInternal, naming the attribute).
Result<Item> decode_attributes(const json::object& attributes) {
  Result<Item> item = decode_item(attributes);
  if (!item.ok()) return item.status().with_context("GetRecords");
  return item;
}

}  // namespace

// One of GetRecords' Records[]: its change is under "dynamodb", the key in
// Keys, the images (each absent where the item did not exist) in OldImage
// and NewImage.
Result<FeedRecord> decode_record(const json::value& value, const std::string& pk_attr,
                                 const std::string& sk_attr) {
  const json::object* change =
      value.is_object() ? object_field(value.get_object(), "dynamodb") : nullptr;
  const json::object* keys = change != nullptr ? object_field(*change, "Keys") : nullptr;
  FeedRecord record;
  if (keys != nullptr) record.sequence = string_field(*change, "SequenceNumber");
  if (record.sequence.empty()) {
    return internal_error("GetRecords: a record without its keys or sequence number");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const Item key, decode_attributes(*keys));
  const std::string* pk = get_string(key, pk_attr);
  const std::string* sk = sk_attr.empty() ? nullptr : get_string(key, sk_attr);
  if (pk == nullptr || (!sk_attr.empty() && sk == nullptr)) {
    return internal_error("GetRecords: a record whose keys are not the table's (" + pk_attr +
                          (sk_attr.empty() ? "" : ", " + sk_attr) + ")");
  }
  record.key = {*pk, sk != nullptr ? *sk : std::string()};
  // An image holding what leasehold cannot read (another tool's attribute
  // of a type it does not use) is left out, as if the item were not there:
  // failing the page would stop its reader at this record for good.
  for (const auto& [field, image] :
       {std::pair{"OldImage", &record.old_image}, std::pair{"NewImage", &record.new_image}}) {
    const json::object* attributes = object_field(*change, field);
    if (attributes == nullptr) continue;
    Result<Item> decoded = decode_attributes(*attributes);
    if (decoded.ok()) *image = std::move(*decoded);
  }
  return record;
}

}  // namespace leasehold::store::dynamodb
