#include "testing/index_lag_store.h"

#include <algorithm>

#include "store/eval.h"

namespace leasehold::testing {

IndexLagStore::IndexLagStore(ItemStore& inner, Clock& clock, Duration lag)
    : StoreWrapper(inner), clock_(clock), lag_(lag) {}

void IndexLagStore::set_lag(Duration lag, std::string table) {
  std::lock_guard lock(mu_);
  if (table.empty()) {
    lag_ = lag;
    lags_.clear();
  } else {
    lags_.insert_or_assign(std::move(table), lag);
  }
}

Duration IndexLagStore::lag_of(std::string_view table) const {
  const auto it = lags_.find(table);
  return it == lags_.end() ? lag_ : it->second;
}

Status IndexLagStore::ensure_table(const TableSpec& spec) {
  {
    std::lock_guard lock(mu_);
    specs_.insert_or_assign(spec.name, spec);
  }
  return StoreWrapper::ensure_table(spec);
}

Status IndexLagStore::require_table(const TableSpec& spec) {
  {
    std::lock_guard lock(mu_);
    specs_.insert_or_assign(spec.name, spec);
  }
  return StoreWrapper::require_table(spec);
}

const TableSpec* IndexLagStore::spec_of(std::string_view table) {
  const auto it = specs_.find(table);
  return it == specs_.end() ? nullptr : &it->second;
}

void IndexLagStore::remember(std::string_view table, const Key& key) {
  Result<Item> before = StoreWrapper::get(table, key, /*consistent=*/true);
  std::lock_guard lock(mu_);
  const Duration lag = lag_of(table);
  if (lag <= Duration::zero()) return;
  const MonoTime now = clock_.mono_now();
  std::deque<Earlier>& earlier = history_[std::string(table)][{key.pk, key.sk}];
  earlier.push_back({now, before.ok() ? std::optional<Item>(*before) : std::nullopt});
  // Older than the lag: no query will ask for it again.
  while (earlier.size() > 1 && now - earlier[1].written_at > lag) earlier.pop_front();
}

Status IndexLagStore::put(std::string_view table, const Item& item, const Condition& condition) {
  const TableSpec* spec = nullptr;
  {
    std::lock_guard lock(mu_);
    spec = spec_of(table);
  }
  if (spec != nullptr) remember(table, store::key_of(*spec, item));
  return StoreWrapper::put(table, item, condition);
}

Result<Item> IndexLagStore::update(std::string_view table, const Key& key, const Update& update,
                                   const Condition& condition) {
  remember(table, key);
  return StoreWrapper::update(table, key, update, condition);
}

Status IndexLagStore::remove(std::string_view table, const Key& key, const Condition& condition) {
  remember(table, key);
  return StoreWrapper::remove(table, key, condition);
}

// For each key written within the lag: its image before the first such
// write, which is how the index still shows it.
std::map<IndexLagStore::KeyId, std::optional<Item>> IndexLagStore::as_it_was(std::string_view table,
                                                                             MonoTime now) {
  std::map<KeyId, std::optional<Item>> out;
  const auto h = history_.find(table);
  const Duration lag = lag_of(table);
  if (h == history_.end()) return out;
  for (const auto& [key, earlier] : h->second) {
    for (const Earlier& e : earlier) {
      if (now - e.written_at <= lag) {
        out.emplace(key, e.before);
        break;
      }
    }
  }
  return out;
}

Result<Page> IndexLagStore::query_index(std::string_view table, std::string_view index,
                                        std::string_view hash_value, const KeyRange& range,
                                        const QueryOptions& options) {
  std::vector<Item> now_items;
  QueryOptions o = options;
  o.limit = kQueryLimitMax;
  o.cursor.clear();
  do {
    LEASEHOLD_ASSIGN_OR_RETURN(Page page,
                               StoreWrapper::query_index(table, index, hash_value, range, o));
    for (Item& item : page.items) now_items.push_back(std::move(item));
    o.cursor = page.next_cursor;
  } while (!o.cursor.empty());

  std::lock_guard lock(mu_);
  const TableSpec* spec = spec_of(table);
  if (spec == nullptr || lag_of(table) <= Duration::zero()) return Page{std::move(now_items), ""};
  const auto idx = std::find_if(spec->indexes.begin(), spec->indexes.end(),
                                [&](const IndexSpec& i) { return i.name == index; });
  if (idx == spec->indexes.end()) return Page{std::move(now_items), ""};
  const std::map<KeyId, std::optional<Item>> then = as_it_was(table, clock_.mono_now());
  const auto shown_then = [&](const Item& item) {
    const std::string* hash = get_string(item, idx->hash_attr);
    const auto r = item.find(idx->range_attr);
    return hash != nullptr && *hash == hash_value && r != item.end() &&
           store::in_range(r->second, range);
  };
  Page out;
  for (Item& item : now_items) {
    const Key key = store::key_of(*spec, item);
    if (!then.contains({key.pk, key.sk})) out.items.push_back(std::move(item));
  }
  for (const auto& [key, before] : then) {
    if (before && shown_then(*before)) out.items.push_back(*before);
  }
  std::sort(out.items.begin(), out.items.end(), [&](const Item& a, const Item& b) {
    const Value& first = (options.descending ? b : a).at(idx->range_attr);
    const Value& second = (options.descending ? a : b).at(idx->range_attr);
    return first < second;
  });
  return out;
}

}  // namespace leasehold::testing
