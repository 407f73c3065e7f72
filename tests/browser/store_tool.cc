// browser_store_tool: writes items of the stream fleet's tables straight
// into a store, so that a browser test can show the Fleet page a fleet —
// connections owned by workers, workers with their figures — without
// running one. What a worker writes is what the page must read, so the test
// writes it here attribute by attribute (docs/schema.md) as JSON items
// (store/item_json.h: strings, integers, booleans). It also fills the movie
// list with more movies than a page holds.
//
//   browser_store_tool STORE_URI put    TABLE ITEM_JSON
//   browser_store_tool STORE_URI update TABLE PK ATTRIBUTES_JSON
//   browser_store_tool STORE_URI bulk-connections PREFIX COUNT
//   browser_store_tool STORE_URI bulk-movies PREFIX COUNT USER DISPLAY_NAME
//
// TABLE is `connections` or `fleet_workers`; it is created if missing. `put`
// writes the item whole; `update` sets the attributes given on the item
// whose key is PK, which must exist. `bulk-connections` adds COUNT STARTED
// connections, PREFIX followed by 0, 1, ... padded to the width of
// COUNT - 1 (`bulk-000` to `bulk-249` for 250), all with the URL
// ws://127.0.0.1:9/PREFIX?from={next_seq}, with the write `leasehold conn
// add` makes, but in one process and in bulk (fleet::Connections::add_many,
// which writes the counts item once): a paging test's few hundred
// connections in a second rather than a minute, a scale test's 100,000 in
// seconds. `bulk-movies` adds COUNT movies owned by the user USER (shown as
// DISPLAY_NAME), each probed and `ready` (320×240, 100 frames at 25 fps),
// whose ID and name are PREFIX followed by a number padded as above; they
// were uploaded a millisecond apart, in the order of their numbers, just
// before the tool ran (so a movie uploaded later lists after them). Their
// files are not in any media folder: the list and a movie's details read
// only the item (movies/schema.h, as Movies::create and probe write it).
// Exit 0 done, 1 the store failed, 2 bad usage, 3 no item with that key. A
// test tool, never part of the binary.
#include <charconv>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "leasehold/clock.h"
#include "leasehold/store.h"
#include "movies/schema.h"
#include "store/item_json.h"

namespace leasehold {
namespace {

constexpr int kUsage = 2;
constexpr int kNoSuchItem = 3;
// bulk-connections and bulk-movies add at most this many: enough for any
// page test.
constexpr int kBulkCountMax = 100000;

int usage(std::string_view why) {
  std::cerr << "browser_store_tool: " << why
            << "\nusage: browser_store_tool STORE_URI put TABLE ITEM_JSON\n"
               "       browser_store_tool STORE_URI update TABLE PK ATTRIBUTES_JSON\n"
               "       browser_store_tool STORE_URI bulk-connections PREFIX COUNT\n"
               "       browser_store_tool STORE_URI bulk-movies PREFIX COUNT USER DISPLAY_NAME\n";
  return kUsage;
}

int failed(const Status& status) {
  std::cerr << "browser_store_tool: " << status.to_string() << "\n";
  return status.code() == Code::kConditionFailed ? kNoSuchItem : 1;
}

// A bulk command's COUNT, or 0 (said on stderr) when it is not one.
int bulk_count(std::string_view text) {
  int count = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, count);
  if (ec != std::errc() || stop != end || count < 1 || count > kBulkCountMax) {
    usage("COUNT must be an integer from 1 to " + std::to_string(kBulkCountMax));
    return 0;
  }
  return count;
}

// The `i`th of `count` bulk names: PREFIX and i, padded to the width of count - 1.
std::string bulk_name(std::string_view prefix, int i, int count) {
  std::string number = std::to_string(i);
  number.insert(0, std::to_string(count - 1).size() - number.size(), '0');
  return std::string(prefix) + number;
}

// bulk-connections PREFIX COUNT (the file comment).
int add_connections(std::string_view uri, std::string_view prefix, std::string_view count_text) {
  const int count = bulk_count(count_text);
  if (count == 0) return kUsage;
  Result<std::unique_ptr<ItemStore>> opened = open_store(std::string(uri));
  if (!opened.ok()) return failed(opened.status());
  RealClock clock;
  fleet::Connections connections(**opened, clock);
  if (const Status ensured = connections.ensure_table(); !ensured.ok()) return failed(ensured);
  std::vector<fleet::NewConnection> all;
  all.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    fleet::NewConnection c;
    c.id = bulk_name(prefix, i, count);
    c.url = "ws://127.0.0.1:9/" + std::string(prefix) + "?from={next_seq}";
    all.push_back(std::move(c));
  }
  const Result<fleet::AddedConnections> added = connections.add_many(all);
  if (!added.ok()) return failed(added.status());
  for (const Status& result : added->results) {
    if (!result.ok()) return failed(result);
  }
  return 0;
}

// bulk-movies PREFIX COUNT USER DISPLAY_NAME (the file comment).
int add_movies(std::string_view uri, std::string_view prefix, std::string_view count_text,
               const std::string& user, const std::string& display_name) {
  namespace attr = movies::attr;
  const int count = bulk_count(count_text);
  if (count == 0) return kUsage;
  Result<std::unique_ptr<ItemStore>> opened = open_store(std::string(uri));
  if (!opened.ok()) return failed(opened.status());
  ItemStore& store = **opened;
  if (const Status ensured = store.ensure_table(movies::movies_table_spec()); !ensured.ok()) {
    return failed(ensured);
  }
  RealClock clock;
  const int64_t first_ms = to_unix_ms(clock.wall_now()) - count;
  constexpr int64_t kFrames = 100;
  for (int i = 0; i < count; ++i) {
    const std::string id = bulk_name(prefix, i, count);
    const Item item{{attr::kPk, movies::movie_pk(id)},
                    {attr::kKind, std::string(movies::kMovieKind)},
                    {attr::kId, id},
                    {attr::kName, id},
                    {attr::kFile, id + ".avi"},
                    {attr::kOwnerUser, user},
                    {attr::kOwnerDisplayName, display_name},
                    {attr::kCreatedAtMs, first_ms + i},
                    {attr::kStatus, std::string(movies::kStatusReady)},
                    {attr::kFramesDone, int64_t{0}},
                    {attr::kFramesTotal, int64_t{0}},
                    {attr::kFps, movies::format_double(25)},
                    {attr::kWidth, int64_t{320}},
                    {attr::kHeight, int64_t{240}},
                    {attr::kFrameCount, kFrames},
                    {attr::kMarkers, std::string("[]")},
                    {attr::kTrimStart, int64_t{0}},
                    {attr::kTrimEnd, kFrames - 1},
                    {attr::kEveryFrames, int64_t{1}}};
    const Status written = store.put(movies::kMoviesTable, item, cond::not_exists(attr::kPk));
    if (!written.ok()) return failed(written);
  }
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 5) return usage("too few arguments");
  const std::string_view command = argv[2];
  if (command == "bulk-connections") {
    if (argc != 5) return usage("expected bulk-connections with a prefix and a count");
    return add_connections(argv[1], argv[3], argv[4]);
  }
  if (command == "bulk-movies") {
    if (argc != 7) return usage("expected bulk-movies with a prefix, a count, a user and a name");
    return add_movies(argv[1], argv[3], argv[4], argv[5], argv[6]);
  }
  const std::string_view table = argv[3];
  TableSpec spec;
  if (table == fleet::kConnectionsTable) {
    spec = fleet::connections_table_spec();
  } else if (table == fleet::kWorkersTable) {
    spec = fleet::workers_table_spec();
  } else {
    return usage("TABLE must be connections or fleet_workers");
  }
  const bool put = command == "put" && argc == 5;
  const bool update = command == "update" && argc == 6;
  if (!put && !update)
    return usage("expected put with an item, or update with a key and attributes");
  Result<Item> item = store::decode_item(argv[put ? 4 : 5]);
  if (!item.ok()) return usage("the JSON is not an item: " + item.status().message());

  Result<std::unique_ptr<ItemStore>> opened = open_store(argv[1]);
  if (!opened.ok()) return failed(opened.status());
  ItemStore& store = **opened;
  if (const Status ensured = store.ensure_table(spec); !ensured.ok()) return failed(ensured);
  if (put) {
    const Status written = store.put(spec.name, *item, {});
    return written.ok() ? 0 : failed(written);
  }
  Update attributes;
  for (const auto& [name, value] : *item) attributes.set(name, value);
  const Result<Item> written =
      store.update(spec.name, Key{argv[4], ""}, attributes, cond::exists(spec.pk_attr));
  return written.ok() ? 0 : failed(written.status());
}

}  // namespace
}  // namespace leasehold

int main(int argc, char** argv) { return leasehold::run(argc, argv); }
