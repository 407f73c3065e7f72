#include "store/memory/memory_store.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>

#include "base/mutex.h"
#include "store/eval.h"
#include "store/item_json.h"

namespace leasehold::store {
namespace {

using KeyTuple = std::pair<std::string, std::string>;

struct Table {
  TableSpec spec;
  std::map<KeyTuple, Item> items;
};

// A cursor is the last returned item's position, encoded as a small item so
// that it survives concurrent writes (an offset would not).
std::string make_cursor(const Value* range, const Key& key) {
  Item c{{"pk", key.pk}, {"sk", key.sk}};
  if (range) c.emplace("r", *range);
  return encode_item(c);
}

// Moves the store's stamp on when it goes out of scope. A call that may
// write declares one right after its lock, so that the stamp moves before
// the lock is let go: whoever reads the write's effect (under the lock)
// reads the new stamp after it.
class StampOnExit {
 public:
  explicit StampOnExit(std::atomic<uint64_t>& writes) : writes_(writes) {}
  StampOnExit(const StampOnExit&) = delete;
  StampOnExit& operator=(const StampOnExit&) = delete;
  ~StampOnExit() { writes_.fetch_add(1, std::memory_order_release); }

 private:
  std::atomic<uint64_t>& writes_;
};

class MemoryStore final : public ItemStore {
 public:
  Status ensure_table(const TableSpec& spec) override {
    LEASEHOLD_RETURN_IF_ERROR(validate_table_spec(spec));
    MutexLock lock(mu_);
    const StampOnExit stamp(writes_);
    const auto found = tables_.find(spec.name);
    if (found == tables_.end()) {
      tables_.emplace(spec.name, Table{spec, {}});
      return {};
    }
    TableSpec& have = found->second.spec;
    if (have.pk_attr != spec.pk_attr || have.sk_attr != spec.sk_attr) {
      return invalid_argument("table " + spec.name + " exists with another key schema");
    }
    // Check every index first, so that a refused call changes nothing.
    std::vector<IndexSpec> added;
    for (const auto& index : spec.indexes) {
      const auto same = std::find_if(have.indexes.begin(), have.indexes.end(),
                                     [&](auto& i) { return i.name == index.name; });
      if (same == have.indexes.end())
        added.push_back(index);
      else
        LEASEHOLD_RETURN_IF_ERROR(check_same_index(*same, index));
    }
    have.indexes.insert(have.indexes.end(), added.begin(), added.end());
    return {};
  }

  Result<Item> get(std::string_view table, const Key& key, bool) override {
    MutexLock lock(mu_);
    LEASEHOLD_ASSIGN_OR_RETURN(Table * t, find_table(table));
    LEASEHOLD_RETURN_IF_ERROR(validate_key(t->spec, key));
    const auto it = t->items.find({key.pk, key.sk});
    if (it == t->items.end()) return not_found("no item " + key.pk);
    return it->second;
  }

  Result<std::vector<Item>> batch_get(std::string_view table, std::span<const Key> keys) override {
    MutexLock lock(mu_);
    LEASEHOLD_ASSIGN_OR_RETURN(Table * t, find_table(table));
    for (const auto& key : keys) LEASEHOLD_RETURN_IF_ERROR(validate_key(t->spec, key));
    std::vector<Item> out;
    for (const auto& key : keys) {
      const auto it = t->items.find({key.pk, key.sk});
      if (it != t->items.end()) out.push_back(it->second);
    }
    return out;
  }

  Status put(std::string_view table, const Item& item, const Condition& condition) override {
    MutexLock lock(mu_);
    const StampOnExit stamp(writes_);
    LEASEHOLD_ASSIGN_OR_RETURN(Table * t, find_table(table));
    LEASEHOLD_RETURN_IF_ERROR(validate_item(t->spec, item));
    LEASEHOLD_RETURN_IF_ERROR(validate_index_attrs(t->spec, item));
    LEASEHOLD_RETURN_IF_ERROR(validate_condition(condition));
    const Key key = key_of(t->spec, item);
    auto it = t->items.find({key.pk, key.sk});
    if (!evaluate(condition, it == t->items.end() ? nullptr : &it->second)) {
      return condition_failed("condition " + condition.to_string() + " is false");
    }
    t->items.insert_or_assign({key.pk, key.sk}, item);
    return {};
  }

  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    MutexLock lock(mu_);
    const StampOnExit stamp(writes_);
    LEASEHOLD_ASSIGN_OR_RETURN(Table * t, find_table(table));
    return update_locked(*t, key, update, condition);
  }

  using ItemStore::update_each;
  // Nothing here blocks: the timeout cannot be reached.
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration /*timeout*/) override {
    MutexLock lock(mu_);
    const StampOnExit stamp(writes_);
    std::vector<Result<Item>> out;
    auto t = find_table(table);
    for (const auto& r : requests) {
      out.push_back(t.ok() ? update_locked(**t, r.key, r.update, r.condition)
                           : Result<Item>(t.status()));
    }
    return out;
  }

  Status remove(std::string_view table, const Key& key, const Condition& condition) override {
    MutexLock lock(mu_);
    const StampOnExit stamp(writes_);
    LEASEHOLD_ASSIGN_OR_RETURN(Table * t, find_table(table));
    LEASEHOLD_RETURN_IF_ERROR(validate_key(t->spec, key));
    LEASEHOLD_RETURN_IF_ERROR(validate_condition(condition));
    auto it = t->items.find({key.pk, key.sk});
    if (!evaluate(condition, it == t->items.end() ? nullptr : &it->second)) {
      return condition_failed("condition " + condition.to_string() + " is false");
    }
    if (it != t->items.end()) t->items.erase(it);
    return {};
  }

  Result<Page> query(std::string_view table, std::string_view pk, const KeyRange& range,
                     const QueryOptions& options) override {
    MutexLock lock(mu_);
    LEASEHOLD_ASSIGN_OR_RETURN(Table * t, find_table(table));
    LEASEHOLD_RETURN_IF_ERROR(validate_query_options(options));
    LEASEHOLD_RETURN_IF_ERROR(
        validate_key(t->spec, {std::string(pk), t->spec.sk_attr.empty() ? "" : "x"}));
    if (t->spec.sk_attr.empty() && range.kind != KeyRange::Kind::kAll) {
      return invalid_argument("table " + t->spec.name + " has no sort key to range over");
    }
    LEASEHOLD_RETURN_IF_ERROR(validate_range(range, AttrType::kString));
    // The partition is [begin, end): pk + '\0' is the least string above pk.
    const std::string partition(pk);
    auto begin = t->items.lower_bound({partition, ""});
    auto end = t->items.lower_bound({partition + '\0', ""});
    if (!options.cursor.empty()) {
      LEASEHOLD_ASSIGN_OR_RETURN(Item c, decode_cursor(options.cursor));
      // The page goes on strictly past the cursor's key, in either direction.
      const KeyTuple at(partition, std::get<std::string>(c["sk"]));
      if (options.descending) {
        end = t->items.lower_bound(at);
      } else {
        begin = t->items.upper_bound(at);
      }
    }
    Page page;
    const auto fill = [&](auto it, auto stop) {
      for (; it != stop; ++it) {
        if (!in_range(Value(it->first.second), range)) continue;
        if (static_cast<int>(page.items.size()) == options.limit) {
          page.next_cursor = make_cursor(nullptr, key_of(t->spec, page.items.back()));
          return;
        }
        page.items.push_back(it->second);
      }
    };
    if (options.descending) {
      fill(std::make_reverse_iterator(end), std::make_reverse_iterator(begin));
    } else {
      fill(begin, end);
    }
    return page;
  }

  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override {
    MutexLock lock(mu_);
    LEASEHOLD_ASSIGN_OR_RETURN(Table * t, find_table(table));
    LEASEHOLD_RETURN_IF_ERROR(validate_query_options(options));
    const auto& indexes = t->spec.indexes;
    const auto spec =
        std::find_if(indexes.begin(), indexes.end(), [&](auto& i) { return i.name == index; });
    if (spec == indexes.end())
      return not_found("table " + t->spec.name + " has no index " + std::string(index));
    LEASEHOLD_RETURN_IF_ERROR(validate_range(range, spec->range_type));

    // Index order: (range value, pk, sk), or its reverse, as pointers into
    // the table: a query copies only the items of its page.
    struct Entry {
      const Value* range;
      const KeyTuple* key;
      const Item* item;
    };
    const bool descending = options.descending;
    const auto before = [descending](const Value& r1, const KeyTuple& k1, const Value& r2,
                                     const KeyTuple& k2) {
      if (descending) return r1 != r2 ? r2 < r1 : k2 < k1;
      return r1 != r2 ? r1 < r2 : k1 < k2;
    };
    std::vector<Entry> entries;
    for (const auto& [k, item] : t->items) {
      const auto* h = get_string(item, spec->hash_attr);
      const auto r = item.find(spec->range_attr);
      if (!h || *h != hash_value || r == item.end() || type_of(r->second) != spec->range_type)
        continue;
      if (in_range(r->second, range)) entries.push_back({&r->second, &k, &item});
    }
    std::sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
      return before(*a.range, *a.key, *b.range, *b.key);
    });
    auto begin = entries.begin();
    if (!options.cursor.empty()) {
      LEASEHOLD_ASSIGN_OR_RETURN(Item c, decode_cursor(options.cursor));
      const auto r = c.find("r");
      if (r == c.end() || type_of(r->second) != spec->range_type) {
        return invalid_argument("malformed query cursor");
      }
      const KeyTuple after(std::get<std::string>(c["pk"]), std::get<std::string>(c["sk"]));
      begin = std::partition_point(entries.begin(), entries.end(), [&](const Entry& e) {
        return !before(r->second, after, *e.range, *e.key);
      });
    }
    Page page;
    for (auto it = begin; it != entries.end(); ++it) {
      if (static_cast<int>(page.items.size()) == options.limit) {
        const Item& last = page.items.back();
        page.next_cursor = make_cursor(&last.at(spec->range_attr), key_of(t->spec, last));
        break;
      }
      page.items.push_back(*it->item);
      project(t->spec, *spec, page.items.back());
    }
    return page;
  }

  // Counts the calls that may have written; a read does not move it.
  std::optional<ChangeStamp> change_stamp() const override {
    return ChangeStamp{0, writes_.load(std::memory_order_acquire)};
  }

  std::string_view backend_name() const override { return "memory"; }
  bool reads_are_local() const override { return true; }  // one short lock

 private:
  Result<Table*> find_table(std::string_view name) REQUIRES(mu_) {
    const auto it = tables_.find(name);
    if (it == tables_.end()) return not_found("no table " + std::string(name));
    return &it->second;
  }

  static Result<Item> decode_cursor(const std::string& cursor) {
    auto c = decode_item(cursor);
    if (!c.ok() || !get_string(*c, "pk") || !get_string(*c, "sk")) {
      return invalid_argument("malformed query cursor");
    }
    return c;
  }

  Result<Item> update_locked(Table& t, const Key& key, const Update& update,
                             const Condition& condition) REQUIRES(mu_) {
    LEASEHOLD_RETURN_IF_ERROR(validate_key(t.spec, key));
    LEASEHOLD_RETURN_IF_ERROR(validate_update(t.spec, update));
    LEASEHOLD_RETURN_IF_ERROR(validate_condition(condition));
    auto it = t.items.find({key.pk, key.sk});
    const Item* current = it == t.items.end() ? nullptr : &it->second;
    if (!evaluate(condition, current)) {
      return condition_failed("condition " + condition.to_string() + " is false");
    }
    Item next = current ? *current : Item{};
    set_key(t.spec, key, next);
    LEASEHOLD_RETURN_IF_ERROR(apply_update(update, next));
    if (item_bytes(next) > kItemBytesMax) return invalid_argument("item larger than 400 KiB");
    LEASEHOLD_RETURN_IF_ERROR(validate_index_attrs(t.spec, next));
    if (it != t.items.end()) {
      it->second = next;
    } else {
      t.items.emplace(KeyTuple{key.pk, key.sk}, next);
    }
    return next;
  }

  Mutex mu_;
  std::map<std::string, Table, std::less<>> tables_ GUARDED_BY(mu_);
  std::atomic<uint64_t> writes_{0};
};

}  // namespace

std::unique_ptr<ItemStore> make_memory_store() { return std::make_unique<MemoryStore>(); }

}  // namespace leasehold::store
