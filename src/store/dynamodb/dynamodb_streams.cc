// Change feeds on DynamoDB: DynamoDbStore::change_feed(), and DynamoDbFeed,
// which reads a table's stream through the DynamoDB Streams API
// (DescribeStream, GetShardIterator, GetRecords). Its requests go through
// the store's call(), so they are signed, retried and their errors mapped
// as the store's reads are: throttling (LimitExceededException) and 5xx are
// sent again; ExpiredIteratorException is kFailedPrecondition,
// TrimmedDataAccessException and ResourceNotFoundException kNotFound.

#include "store/dynamodb/dynamodb_store_impl.h"

namespace leasehold::store::dynamodb {
namespace {

constexpr int kShardsPerPage = 100;  // DescribeStream's Limit, at most 100
// A bound on one listing, so that a server that pages on and on cannot keep
// shards() forever: 100,000 shards, far more than a stream holds.
constexpr int kShardPagesMax = 1000;
constexpr int kRecordsPerReadMax = 1000;  // GetRecords' Limit, at most 1000
// How long one feed call may take, its retries included. Streams answers in
// tens of milliseconds; a call that gets no answer (a partition, a lost
// reply) fails by then and the reader tries again on its next step, rather
// than holding its thread for the store's request timeout three times over:
// a stopping worker waits for that thread before it hands over.
constexpr Duration kFeedCallMax = std::chrono::seconds(3);

std::string_view iterator_type(FeedStart start) {
  switch (start) {
    case FeedStart::kOldest:
      return "TRIM_HORIZON";
    case FeedStart::kAfter:
      return "AFTER_SEQUENCE_NUMBER";
    case FeedStart::kLatest:
      return "LATEST";
  }
  return "";
}

}  // namespace

// The feed is made once per table and kept: callers hold on to the pointer.
// A table learnt to have no stream is not remembered as such here (the
// schema cache is), so a feed turned on later by ensure_table() is found.
ChangeFeed* DynamoDbStore::change_feed(std::string_view table) {
  {
    MutexLock lock(mu_);
    const auto it = feeds_.find(table);
    if (it != feeds_.end()) return it->second.get();
  }
  const Result<KnownPtr> found = known(table);
  if (!found.ok() || (*found)->stream_arn.empty()) return nullptr;
  MutexLock lock(mu_);
  std::unique_ptr<DynamoDbFeed>& feed = feeds_[std::string(table)];
  if (feed == nullptr) {
    feed = std::make_unique<DynamoDbFeed>(*this, (*found)->stream_arn, (*found)->spec);
  }
  return feed.get();
}

Result<json::object> DynamoDbFeed::call(std::string_view op, const json::object& body) {
  return store_.call(op, body, /*idempotent=*/true, {}, store_.deadline_after(kFeedCallMax),
                     Api::kStreams);
}

Result<std::vector<FeedShard>> DynamoDbFeed::shards() {
  std::vector<FeedShard> found;
  std::string after;  // the last shard of the previous page
  for (int page = 0; page < kShardPagesMax; ++page) {
    json::object body{{"StreamArn", stream_arn_}, {"Limit", kShardsPerPage}};
    if (!after.empty()) body["ExclusiveStartShardId"] = after;
    LEASEHOLD_ASSIGN_OR_RETURN(const json::object reply, call("DescribeStream", body));
    const json::object* stream = object_field(reply, "StreamDescription");
    if (stream == nullptr) return internal_error("DescribeStream: reply without StreamDescription");
    if (const json::array* shards = array_field(*stream, "Shards")) {
      for (const json::value& shard : *shards) {
        if (shard.is_object()) found.push_back(decode_shard(shard.get_object()));
      }
    }
    after = string_field(*stream, "LastEvaluatedShardId");
    if (after.empty()) return parents_first(std::move(found));
  }
  return internal_error("DescribeStream: more than " +
                        std::to_string(kShardPagesMax * kShardsPerPage) + " shards");
}

Result<std::string> DynamoDbFeed::position(std::string_view shard, FeedStart start,
                                           std::string_view sequence) {
  if (shard.empty()) return invalid_argument("a change feed position needs a shard");
  // A sequence given with kOldest or kLatest is ignored: it is for kAfter
  // only.
  if (start == FeedStart::kAfter && sequence.empty()) {
    return invalid_argument("a change feed position after a record (kAfter) needs its sequence");
  }
  json::object body{
      {"StreamArn", stream_arn_}, {"ShardId", shard}, {"ShardIteratorType", iterator_type(start)}};
  if (start == FeedStart::kAfter) body["SequenceNumber"] = sequence;
  LEASEHOLD_ASSIGN_OR_RETURN(const json::object reply, call("GetShardIterator", body));
  std::string iterator = string_field(reply, "ShardIterator");
  if (iterator.empty()) return internal_error("GetShardIterator: reply without ShardIterator");
  return iterator;
}

Result<FeedPage> DynamoDbFeed::read(std::string_view position, int limit) {
  if (position.empty()) {
    return invalid_argument("an empty change feed position: its shard was read to its end");
  }
  if (limit < 1 || limit > kRecordsPerReadMax) {
    return invalid_argument("a change feed read takes 1.." + std::to_string(kRecordsPerReadMax) +
                            " records, not " + std::to_string(limit));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const json::object reply,
                             call("GetRecords", {{"ShardIterator", position}, {"Limit", limit}}));
  FeedPage page;
  if (const json::array* records = array_field(reply, "Records")) {
    page.records.reserve(records->size());
    for (const json::value& record : *records) {
      LEASEHOLD_ASSIGN_OR_RETURN(FeedRecord decoded, decode_record(record, pk_attr_, sk_attr_));
      page.records.push_back(std::move(decoded));
    }
  }
  // Absent or null once the shard has closed and every record in it is read.
  page.next = string_field(reply, "NextShardIterator");
  return page;
}

}  // namespace leasehold::store::dynamodb
