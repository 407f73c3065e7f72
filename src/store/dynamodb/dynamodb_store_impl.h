// DynamoDbStore, the class behind open_dynamodb_store(), shared by the files
// that implement it: dynamodb_store.cc (construction, requests: signing,
// sending, retrying; opening from options or a URI), dynamodb_tables.cc
// (table lifecycle), dynamodb_items.cc (item operations and queries) and
// dynamodb_streams.cc (change feeds, and DynamoDbFeed, which reads one).
//
// Private to the backend: include it only from those files. A DynamoDbStore
// and its DynamoDbFeeds are safe for concurrent use by many threads (see
// dynamodb_store.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aws/retries.h"
#include "aws/sigv4.h"
#include "base/mutex.h"
#include "base/retry.h"
#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "leasehold/store.h"
#include "net/http_client.h"
#include "store/dynamodb/dynamodb_store.h"
#include "store/dynamodb/wire.h"
#include "store/dynamodb/worker_pool.h"

namespace leasehold::store::dynamodb {

namespace json = boost::json;

// The deadline of a call that has none: only request_timeout bounds each attempt.
inline constexpr MonoTime kNoDeadline = MonoTime::max();

// The two JSON APIs a store speaks, each with its own X-Amz-Target prefix:
// DynamoDB's, and DynamoDB Streams' (change feeds), which AWS serves from a
// host of its own.
enum class Api { kDynamoDb, kStreams };

class DynamoDbStore;

// A table's change feed, read through DynamoDB Streams (DescribeStream,
// GetShardIterator, GetRecords). Its requests are the store's: signed and
// retried as reads, errors mapped by the error table. Owned by the store,
// which it must not outlive; thread-safe, as it keeps no state of its own
// besides what it was made with.
class DynamoDbFeed final : public ChangeFeed {
 public:
  // `stream_arn`: the table's LatestStreamArn; `spec`: its key attributes.
  DynamoDbFeed(DynamoDbStore& store, std::string stream_arn, const TableSpec& spec)
      : store_(store),
        stream_arn_(std::move(stream_arn)),
        pk_attr_(spec.pk_attr),
        sk_attr_(spec.sk_attr) {}

  Result<std::vector<FeedShard>> shards() override;
  Result<std::string> position(std::string_view shard, FeedStart start,
                               std::string_view sequence) override;
  Result<FeedPage> read(std::string_view position, int limit) override;

 private:
  Result<json::object> call(std::string_view op, const json::object& body);

  DynamoDbStore& store_;
  const std::string stream_arn_;
  const std::string pk_attr_;
  const std::string sk_attr_;  // empty: the table has no sort key
};

class DynamoDbStore final : public ItemStore {
 public:
  // REQUIRES: `options` passed validation (open_dynamodb_store()).
  // `streams_http` serves DynamoDB Streams; null: `http` serves it too.
  DynamoDbStore(DynamoDbOptions options, std::unique_ptr<net::HttpClient> http,
                std::unique_ptr<net::HttpClient> streams_http);

  Status ensure_table(const TableSpec& spec) override;
  Status require_table(const TableSpec& spec) override;
  Result<Item> get(std::string_view table, const Key& key, bool consistent) override;
  Result<std::vector<Item>> batch_get(std::string_view table, std::span<const Key> keys) override;
  Status put(std::string_view table, const Item& item, const Condition& condition) override;
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override;
  Status remove(std::string_view table, const Key& key, const Condition& condition) override;
  Result<Page> query(std::string_view table, std::string_view pk, const KeyRange& range,
                     const QueryOptions& options) override;
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override;
  using ItemStore::update_each;
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration timeout) override;
  std::string_view backend_name() const override { return "dynamodb"; }
  std::vector<CapacityUse> consumed_capacity() const override EXCLUDES(capacity_mu_);
  ChangeFeed* change_feed(std::string_view table) override EXCLUDES(mu_);

 private:
  friend class DynamoDbFeed;  // sends its requests through call()

  using SpecPtr = std::shared_ptr<const TableSpec>;
  using KeyTuple = std::pair<std::string, std::string>;
  // What the schema cache holds of a table: its spec as DynamoDB has it
  // (change_feed: it keeps a stream a feed can read) and that stream's ARN.
  struct KnownTable {
    TableSpec spec;
    std::string stream_arn;  // empty unless spec.change_feed
  };
  using KnownPtr = std::shared_ptr<const KnownTable>;

  std::string physical(std::string_view logical) const {
    return options_.table_prefix + std::string(logical);
  }

  // The reply's JSON lives in `storage` (the default heap unless given): a
  // caller that decodes the reply at once passes a stack arena. A request is
  // `idempotent` when sending it twice does no harm (reads); no attempt is
  // sent, and no pause taken, that would end past `deadline`. `op` is an
  // operation of `api`.
  // dynamodb_store.cc: signing, sending and retrying one request.
  Result<json::object> call(std::string_view op, const json::object& body, bool idempotent,
                            json::storage_ptr storage = {}, MonoTime deadline = kNoDeadline,
                            Api api = Api::kDynamoDb);
  // The same for a body already written as JSON text.
  Result<json::object> call_text(std::string_view op, const std::string& body, bool idempotent,
                                 json::storage_ptr storage = {}, MonoTime deadline = kNoDeadline,
                                 Api api = Api::kDynamoDb);
  // One attempt of a call: signed now (as skew_ corrects it), sent within
  // `left` (the time left before the call's deadline, > 0) and judged by the
  // error table.
  aws::Attempt<json::object> attempt(Api api, std::string_view op, const std::string& body,
                                     bool idempotent, const json::storage_ptr& storage,
                                     Duration left);
  Result<net::HttpRequest> make_request(Api api, std::string_view op, std::string body,
                                        WallTime now);
  net::HttpClient& client(Api api) const {
    return api == Api::kStreams && streams_http_ ? *streams_http_ : *http_;
  }
  // Adds what a reply of an item operation says it consumed
  // (ConsumedCapacity, asked for with every such request) to the totals.
  void note_capacity(std::string_view op, const json::object& reply) EXCLUDES(capacity_mu_);
  // The time left until `deadline`; Duration::max() for kNoDeadline.
  Duration time_left(MonoTime deadline) const;
  MonoTime deadline_after(Duration timeout) const;

  // dynamodb_tables.cc: DescribeTable, the schema cache, creating tables,
  // indexes and streams and waiting for them.
  Result<json::object> describe(std::string_view logical, MonoTime deadline = kNoDeadline);
  Result<KnownPtr> known(std::string_view logical, MonoTime deadline = kNoDeadline) EXCLUDES(mu_);
  Result<SpecPtr> spec_of(std::string_view logical, MonoTime deadline = kNoDeadline) EXCLUDES(mu_);
  // Caches `spec` with the stream the described `table` has.
  KnownPtr cache(TableSpec spec, const json::object& table) EXCLUDES(mu_);
  Status create_table(const TableSpec& spec);
  Status add_index(TableSpec& have, const IndexSpec& index);
  // The table's description once it and `indexes` are ACTIVE.
  Result<json::object> wait_active(std::string_view logical,
                                   const std::vector<std::string>& indexes);
  Status reconcile(const TableSpec& wanted, const json::object& table);
  Status enable_stream(const TableSpec& have);
  Result<bool> serves_streams() EXCLUDES(mu_);

  // dynamodb_items.cc: the item operations.
  Status batch_get_chunk(const TableSpec& spec, std::span<const Key> keys,
                         std::map<KeyTuple, Item>& found);
  Result<Item> get_until(std::string_view table, const Key& key, bool consistent,
                         MonoTime deadline);
  Result<Item> update_until(std::string_view table, const Key& key, const Update& update,
                            const Condition& condition, MonoTime deadline);
  // PutItem or DeleteItem `body` sent with `condition`.
  Status conditional_write(std::string_view op, json::object body, const TableSpec& spec,
                           const Condition& condition);
  Result<Item> explain_failed_update(std::string_view table, const TableSpec& spec, const Key& key,
                                     const Update& update, const Condition& condition,
                                     MonoTime deadline);
  Result<Page> run_query(json::object body, const CursorShape& shape, const QueryOptions& options,
                         const TableSpec& spec, const IndexSpec* index);

  DynamoDbOptions options_;
  std::unique_ptr<net::HttpClient> http_;
  aws::SigningKeyCache signing_keys_;
  RealClock real_clock_;
  SystemRandom system_random_;
  // The offset from options_.clock's wall time to DynamoDB's, once a request
  // was refused for its time.
  aws::ClockSkew skew_;
  // Made from options_.retry, on options_.clock and options_.random.
  std::unique_ptr<Retrier> retrier_;

  // DynamoDB Streams' client where it is not http_'s endpoint (AWS's); null
  // otherwise.
  std::unique_ptr<net::HttpClient> streams_http_;

  Mutex mu_;
  std::map<std::string, KnownPtr, std::less<>> tables_ GUARDED_BY(mu_);
  // change_feed()'s, by logical table: made once, kept for the store's life.
  std::map<std::string, std::unique_ptr<DynamoDbFeed>, std::less<>> feeds_ GUARDED_BY(mu_);
  // Whether the endpoint serves DynamoDB Streams, once asked (serves_streams()).
  std::optional<bool> serves_streams_ GUARDED_BY(mu_);

  // consumed_capacity(): by (logical table, index; "" for the table).
  mutable Mutex capacity_mu_;
  std::map<KeyTuple, CapacityUse> capacity_ GUARDED_BY(capacity_mu_);

  // update_each()'s helpers. Last, so that its threads stop first.
  WorkerPool writers_;
};

}  // namespace leasehold::store::dynamodb
