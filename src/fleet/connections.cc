#include "fleet/connections.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "fleet/members.h"
#include "fleet/positions.h"
#include "fleet/schema.h"
#include "fleet/summary.h"
#include "leasehold/lease.h"
#include "net/endpoint.h"

namespace leasehold::fleet {
namespace {

// The longest value a placeholder can take: INT64_MAX has 19 digits.
constexpr int64_t kSeqMax = std::numeric_limits<int64_t>::max();
// A placeholder's name is quoted in an error only when it is this short and
// made of [a-z0-9_] (a misspelt placeholder); anything else could be a
// credential that happens to sit between braces.
constexpr size_t kQuotedPlaceholderBytesMax = 20;
// Writes add() tries when a refusal turns out, on reading the item, to have
// been a tombstone freed meanwhile. More would mean the ID is being removed
// and added in a loop by others.
constexpr int kAddAttemptsMax = 3;

bool is_id_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '~' || c == '-';
}

bool is_seq_segment_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool is_printable_ascii(std::string_view s) {
  for (const char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// `s` in quotes when it is short printable text, else its length: a value
// that is neither was most likely pasted by mistake, and is not echoed.
std::string shown(std::string_view s, size_t bytes_max) {
  if (s.size() <= bytes_max && is_printable_ascii(s)) return "'" + std::string(s) + "'";
  return "of " + std::to_string(s.size()) + " bytes";
}

std::string placeholder_shown(std::string_view name) {
  const bool plain =
      name.size() <= kQuotedPlaceholderBytesMax &&
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string_view::npos;
  return plain ? " {" + std::string(name) + "}" : "";
}

// "byte 3", and the character in it when it is printable: "byte 3 ('/')".
std::string byte_shown(std::string_view s, size_t i) {
  std::string out = "byte " + std::to_string(i);
  if (s[i] >= 0x20 && s[i] <= 0x7e) out += std::string(" ('") + s[i] + "')";
  return out;
}

// Replaces each placeholder of a template already checked for braces.
std::string substitute(std::string_view url_template, std::string_view last_seq,
                       std::string_view next_seq) {
  const std::string_view next = kNextSeqPlaceholder;
  const std::string_view last = kLastSeqPlaceholder;
  std::string out;
  out.reserve(url_template.size() + 2 * next_seq.size());
  for (size_t i = 0; i < url_template.size();) {
    if (url_template.substr(i).starts_with(next)) {
      out += next_seq;
      i += next.size();
    } else if (url_template.substr(i).starts_with(last)) {
      out += last_seq;
      i += last.size();
    } else {
      out += url_template[i++];
    }
  }
  return out;
}

// The braces of a URL template: every '{' opens a known placeholder.
Status check_placeholders(std::string_view url_template) {
  for (size_t i = 0; i < url_template.size(); ++i) {
    if (url_template[i] == '}') {
      return invalid_argument("URL template has a '}' outside a placeholder at byte " +
                              std::to_string(i) + " (write a literal brace as %7D)");
    }
    if (url_template[i] != '{') continue;
    const size_t close = url_template.find_first_of("{}", i + 1);
    if (close == std::string_view::npos || url_template[close] == '{') {
      return invalid_argument("URL template has a '{' without its '}' at byte " +
                              std::to_string(i) + " (write a literal brace as %7B)");
    }
    const std::string_view placeholder = url_template.substr(i, close + 1 - i);
    if (placeholder != kNextSeqPlaceholder && placeholder != kLastSeqPlaceholder) {
      return invalid_argument("URL template has an unknown placeholder" +
                              placeholder_shown(placeholder.substr(1, placeholder.size() - 2)) +
                              " at byte " + std::to_string(i) +
                              ": only {next_seq} and {last_seq} are substituted");
    }
    i = close;
  }
  return Status::ok_status();
}

Status wrong_type(std::string_view attr, AttrType expected) {
  return invalid_argument("attribute " + std::string(attr) + " is not of type " +
                          std::string(type_name(expected)));
}

// Reads an optional string attribute into `out` (left as it is if absent).
Status read_string(const Item& item, std::string_view attr, std::string& out) {
  const auto it = item.find(attr);
  if (it == item.end()) return Status::ok_status();
  const auto* value = std::get_if<std::string>(&it->second);
  if (value == nullptr) return wrong_type(attr, AttrType::kString);
  out = *value;
  return Status::ok_status();
}

// Reads an optional int attribute into `out` (left as it is if absent).
Status read_int(const Item& item, std::string_view attr, int64_t& out) {
  const auto it = item.find(attr);
  if (it == item.end()) return Status::ok_status();
  const auto* value = std::get_if<int64_t>(&it->second);
  if (value == nullptr) return wrong_type(attr, AttrType::kInt);
  out = *value;
  return Status::ok_status();
}

// The ID in a connection's Pk.
Result<std::string> id_of(const Item& item) {
  const std::string* pk = get_string(item, kConnectionsKeyAttr);
  if (pk == nullptr) {
    return invalid_argument(std::string("not a connection: no string ") + kConnectionsKeyAttr);
  }
  if (!pk->starts_with(kConnectionKeyPrefix)) {
    return invalid_argument(std::string("not a connection: ") + kConnectionsKeyAttr + " " +
                            shown(*pk, 64) + " does not start with " + kConnectionKeyPrefix);
  }
  std::string id = pk->substr(std::string_view(kConnectionKeyPrefix).size());
  LEASEHOLD_RETURN_IF_ERROR(validate_connection_id(id).with_context("not a connection"));
  return id;
}

Result<DesiredState> desired_state_of(const Item& item) {
  const std::string* state = get_string(item, kDesiredStateAttr);
  for (const DesiredState known :
       {DesiredState::kStarted, DesiredState::kStopped, DesiredState::kRemoved}) {
    if (state != nullptr && *state == desired_state_name(known)) return known;
  }
  return invalid_argument(std::string("not a connection: ") + kDesiredStateAttr +
                          " is not STARTED, STOPPED or REMOVED");
}

Status no_such_connection(std::string_view id) {
  return not_found("no connection named '" + std::string(id) + "'");
}

std::string removed_name() { return std::string(desired_state_name(DesiredState::kRemoved)); }

// The item is a connection, not a tombstone: the condition of every write
// but add()'s.
Condition live_connection() {
  return cond::exists(kConnectionsKeyAttr) && cond::ne(kDesiredStateAttr, removed_name());
}

// add()'s condition: no item, or a tombstone whose lease is free (never
// taken, released, or expired by `now_ms`), as acquiring a lease requires.
Condition addable(int64_t now_ms) {
  const SlotNames lease(kDefaultSlot);
  return cond::not_exists(kConnectionsKeyAttr) ||
         (cond::eq(kDesiredStateAttr, removed_name()) &&
          (cond::not_exists(lease.owner) || cond::lt(lease.expires_at_ms, now_ms)));
}

// add()'s update: the new connection's fields, and the old one's removed,
// all but lease_epoch, which must keep rising across the ID's lives.
Update new_connection_update(const NewConnection& connection, int64_t now_ms) {
  const DesiredState state = connection.stopped ? DesiredState::kStopped : DesiredState::kStarted;
  const SlotNames lease(kDefaultSlot);
  Update update;
  update.set(kDesiredStateAttr, std::string(desired_state_name(state)))
      .set(kWsUrlAttr, connection.url)
      .set(kSeqFieldAttr, connection.seq_field)
      .set(kLastSeqAttr, int64_t{0})
      // 0, not absent: an item without it would not be in the orphan index,
      // and no worker would ever find the connection.
      .set(lease.expires_at_ms, int64_t{0})
      .set(kCreatedAtMsAttr, now_ms);
  // Everything else of the old connection goes: its checkpoint, error and
  // figures, and the lease's owner and token, so that a late write of the
  // old holder, conditioned on them, can never land on the new connection.
  for (const std::string_view attr :
       {std::string_view(kRemovedAtMsAttr), std::string_view(kLastErrorAttr),
        std::string_view(kLastErrorAtMsAttr), std::string_view(kMessagesAttr),
        std::string_view(kReconnectsAttr), std::string_view(kLastMessageAtMsAttr),
        std::string_view(lease.owner), std::string_view(lease.token),
        std::string_view(lease.holder), std::string_view(lease.acquired_at_ms),
        std::string_view(lease.heartbeat_at_ms), std::string_view(lease.session)}) {
    update.remove(std::string(attr));
  }
  return update;
}

// What add() and add_many() check of a connection before writing anything.
Status validate_new_connection(const NewConnection& connection) {
  LEASEHOLD_RETURN_IF_ERROR(validate_connection_id(connection.id));
  LEASEHOLD_RETURN_IF_ERROR(validate_url_template(connection.url));
  return validate_seq_field(connection.seq_field);
}

DesiredState added_state(const NewConnection& connection) {
  return connection.stopped ? DesiredState::kStopped : DesiredState::kStarted;
}

// The one write that adds a connection, for add() and add_many() alike.
UpdateRequest add_request(const NewConnection& connection, int64_t now_ms) {
  return UpdateRequest{connection_key(connection.id), new_connection_update(connection, now_ms),
                       addable(now_ms)};
}

std::string cannot_add(std::string_view id) {
  return "cannot add connection '" + std::string(id) + "'";
}

Status added_meanwhile(std::string_view id) {
  return unavailable("connection '" + std::string(id) +
                     "' was removed and added again by others while it was being added; try again");
}

// Why an add of `id` was refused, from `item`, the ID's item as read
// consistently after the refusal: OK if it is a tombstone whose lease is
// free by `now_ms` (freed meanwhile: the caller writes again).
Status refused_add(std::string_view id, const Item& item, int64_t now_ms) {
  // Anything but a tombstone, even an item another tool wrote, takes the ID.
  const Result<Connection> now = parse_connection(item);
  if (!now.ok() || now->desired_state != DesiredState::kRemoved) {
    return already_exists("a connection named '" + std::string(id) + "' already exists");
  }
  if (!lease_held(*now, now_ms)) return Status::ok_status();
  return already_exists("connection '" + std::string(id) + "' was removed and worker " +
                        now->owner + " still holds it (its lease ends by " +
                        format_utc_ms(now->expires_at_ms) + "); add it again once it has let go");
}

// The items a written connection must parse from; anything else is a bug
// or another tool's write, not bad input.
Result<Connection> parse_written(const Item& item) {
  auto connection = parse_connection(item);
  if (!connection.ok()) return internal_error(connection.status().message());
  return connection;
}

}  // namespace

std::string_view desired_state_name(DesiredState state) {
  switch (state) {
    case DesiredState::kStarted:
      return "STARTED";
    case DesiredState::kStopped:
      return "STOPPED";
    case DesiredState::kRemoved:
      return "REMOVED";
  }
  assert(false && "unknown desired state");
  return "";
}

bool lease_held(const Connection& connection, int64_t now_ms) {
  // At expires_at_ms itself the lease is not yet free: a taker needs
  // expires_at_ms < now, as add() does.
  return !connection.owner.empty() && connection.expires_at_ms >= now_ms;
}

std::string format_utc_ms(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char date_time[32];
  const size_t size = std::strftime(date_time, sizeof(date_time), "%Y-%m-%dT%H:%M:%S", &utc);
  char millis[8];
  std::snprintf(millis, sizeof(millis), ".%03dZ", static_cast<int>(unix_ms % 1000));
  return std::string(date_time, size) + millis;
}

Status validate_connection_id(std::string_view id) {
  if (id.empty()) return invalid_argument("connection ID is empty");
  const auto accepted = [] {
    return "1 to " + std::to_string(kConnectionIdBytesMax) +
           " bytes of A-Z, a-z, 0-9, '.', '_', '~' and '-'";
  };
  if (id.size() > kConnectionIdBytesMax) {
    return invalid_argument("connection ID of " + std::to_string(id.size()) +
                            " bytes is too long: " + accepted());
  }
  // Dot segments: a URL path holding one is shortened by the client or the
  // server before routing, so /connections/.. would name the collection.
  if (id == "." || id == "..") {
    return invalid_argument("connection ID '" + std::string(id) +
                            "' is not accepted: it is a path segment of its own in a URL");
  }
  for (size_t i = 0; i < id.size(); ++i) {
    if (is_id_char(id[i])) continue;
    return invalid_argument("connection ID " + shown(id, kConnectionIdBytesMax) +
                            " is not accepted: " + byte_shown(id, i) + " is not allowed; " +
                            accepted());
  }
  return Status::ok_status();
}

Status validate_url_template(std::string_view url_template) {
  if (url_template.empty()) return invalid_argument("URL template is empty");
  LEASEHOLD_RETURN_IF_ERROR(check_placeholders(url_template));
  // The longest numbers the placeholders can stand for, so that no sequence
  // number can push the URL past the parser's limits.
  const std::string longest = std::to_string(kSeqMax);
  const std::string expanded = substitute(url_template, longest, longest);
  if (url_template.size() <= net::kWsUrlBytesMax && expanded.size() > net::kWsUrlBytesMax) {
    return invalid_argument("URL template is too long: with its placeholders replaced by " +
                            std::to_string(longest.size()) + "-digit numbers it could be " +
                            std::to_string(expanded.size()) + " bytes long; at most " +
                            std::to_string(net::kWsUrlBytesMax) + " are allowed");
  }
  return net::parse_ws_url(expanded).status();
}

Status validate_seq_field(std::string_view seq_field) {
  const auto refuse = [&](const std::string& why) {
    return invalid_argument("sequence field " + shown(seq_field, kSeqFieldBytesMax) +
                            " is not accepted: " + why + "; it must be a dotted path of 1 to " +
                            std::to_string(kSeqFieldSegmentsMax) +
                            " names of A-Z, a-z, 0-9, '_' and '-', at most " +
                            std::to_string(kSeqFieldBytesMax) + " bytes");
  };
  if (seq_field.empty()) return refuse("it is empty");
  if (seq_field.size() > kSeqFieldBytesMax) return refuse("it is too long");
  size_t segments = 1;
  for (size_t i = 0; i < seq_field.size(); ++i) {
    const char c = seq_field[i];
    if (c == '.') {
      if (i == 0 || i + 1 == seq_field.size() || seq_field[i + 1] == '.') {
        return refuse("it has an empty name at byte " + std::to_string(i));
      }
      ++segments;
    } else if (!is_seq_segment_char(c)) {
      return refuse(byte_shown(seq_field, i) + " is not allowed");
    }
  }
  if (segments > kSeqFieldSegmentsMax)
    return refuse("it has " + std::to_string(segments) + " names");
  return Status::ok_status();
}

std::string expand_url(std::string_view url_template, int64_t last_seq) {
  assert(last_seq >= 0 && last_seq < kSeqMax);
  return substitute(url_template, std::to_string(last_seq), std::to_string(last_seq + 1));
}

Key connection_key(std::string_view id) {
  return Key{std::string(kConnectionKeyPrefix) + std::string(id), ""};
}

Result<Connection> parse_connection(const Item& item) {
  Connection c;
  LEASEHOLD_ASSIGN_OR_RETURN(c.id, id_of(item));
  LEASEHOLD_ASSIGN_OR_RETURN(c.desired_state, desired_state_of(item));
  if (get_string(item, kWsUrlAttr) == nullptr) {
    return invalid_argument(std::string("not a connection: no string ") + kWsUrlAttr);
  }
  const SlotNames lease(kDefaultSlot);
  using StringField = std::pair<std::string_view, std::string*>;
  for (const auto& [attr, out] :
       {StringField{kWsUrlAttr, &c.ws_url}, StringField{kSeqFieldAttr, &c.seq_field},
        StringField{kLastErrorAttr, &c.last_error}, StringField{lease.owner, &c.owner},
        StringField{lease.token, &c.token}, StringField{lease.session, &c.session}}) {
    LEASEHOLD_RETURN_IF_ERROR(
        read_string(item, attr, *out).with_context("connection '" + c.id + "'"));
  }
  using IntField = std::pair<std::string_view, int64_t*>;
  for (const auto& [attr, out] :
       {IntField{lease.epoch, &c.epoch}, IntField{lease.expires_at_ms, &c.expires_at_ms},
        IntField{lease.heartbeat_at_ms, &c.heartbeat_at_ms}, IntField{kLastSeqAttr, &c.last_seq},
        IntField{kLastErrorAtMsAttr, &c.last_error_at_ms},
        IntField{kCreatedAtMsAttr, &c.created_at_ms}, IntField{kMessagesAttr, &c.messages},
        IntField{kReconnectsAttr, &c.reconnects},
        IntField{kLastMessageAtMsAttr, &c.last_message_at_ms},
        IntField{kRemovedAtMsAttr, &c.removed_at_ms}}) {
    LEASEHOLD_RETURN_IF_ERROR(read_int(item, attr, *out).with_context("connection '" + c.id + "'"));
  }
  if (c.last_seq < 0 || c.last_seq == kSeqMax) {
    return invalid_argument("connection '" + c.id + "': " + kLastSeqAttr + " " +
                            std::to_string(c.last_seq) + " is out of range");
  }
  return c;
}

Connections::Connections(ItemStore& store, Clock& clock) : store_(store), clock_(clock) {}

Status Connections::ensure_table() { return store_.ensure_table(connections_table_spec()); }

Result<Connection> Connections::add(const NewConnection& connection) {
  LEASEHOLD_RETURN_IF_ERROR(validate_new_connection(connection));
  for (int attempt = 0; attempt < kAddAttemptsMax; ++attempt) {
    const UpdateRequest r = add_request(connection, to_unix_ms(clock_.wall_now()));
    auto written = store_.update(kConnectionsTable, r.key, r.update, r.condition);
    if (written.ok()) {
      count(added_state(connection), +1);
      return parse_written(*written);
    }
    if (written.status().code() != Code::kConditionFailed) {
      return written.status().with_context(cannot_add(connection.id));
    }
    LEASEHOLD_RETURN_IF_ERROR(explain_refused_add(connection.id));
  }
  return added_meanwhile(connection.id);
}

// Why add() was refused, read consistently after the refusal: OK if the ID
// has been freed since (the caller writes again).
Status Connections::explain_refused_add(std::string_view id) {
  auto item = store_.get(kConnectionsTable, connection_key(id), /*consistent=*/true);
  if (item.status().code() == Code::kNotFound) return Status::ok_status();
  LEASEHOLD_RETURN_IF_ERROR(item.status().with_context(cannot_add(id)));
  return refused_add(id, *item, to_unix_ms(clock_.wall_now()));
}

Result<AddedConnections> Connections::add_many(std::span<const NewConnection> connections) {
  std::set<std::string_view> ids;
  for (const NewConnection& c : connections) {
    // Among many, a bad URL or sequence field says whose it is.
    LEASEHOLD_RETURN_IF_ERROR(validate_connection_id(c.id));
    LEASEHOLD_RETURN_IF_ERROR(validate_new_connection(c).with_context("connection '" + c.id + "'"));
    if (!ids.insert(c.id).second) {
      return invalid_argument("connection '" + c.id + "' is given more than once");
    }
  }
  AddedConnections out;
  out.results.reserve(connections.size());
  int64_t started = 0;
  int64_t stopped = 0;
  Status failure;  // the first write that failed for a reason other than a refusal
  std::vector<Status> results;
  for (size_t begin = 0; begin < connections.size(); begin += kAddManyChunk) {
    const std::span<const NewConnection> chunk =
        connections.subspan(begin, std::min(kAddManyChunk, connections.size() - begin));
    if (!failure.ok()) {
      for (const NewConnection& c : chunk) {
        out.results.push_back(
            unavailable("connection '" + c.id +
                        "' was not added: an earlier write failed: " + failure.message()));
      }
      continue;
    }
    failure = add_chunk(chunk, results);
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (results[i].ok()) {
        ++out.added;
        ++(chunk[i].stopped ? stopped : started);
      } else if (results[i].code() == Code::kAlreadyExists) {
        ++out.existing;
      }
      out.results.push_back(std::move(results[i]));
    }
  }
  // Once for them all: the counts item is one item that every add writes,
  // and a write per connection would make it the bulk add's bottleneck.
  // Best effort, as count() is: the next recount puts the counts right.
  if (started != 0 || stopped != 0) (void)count_change(store_, started, stopped);
  return out;
}

// add()'s write for each connection of `chunk` in one update_each(), and
// for those refused one batch read (consistent) that says why; those whose
// ID was freed meanwhile are written again, as add() writes again.
// `results` gets one status per connection (AddedConnections::results);
// returns the first failure that was not a refusal (OK if none).
Status Connections::add_chunk(std::span<const NewConnection> chunk, std::vector<Status>& results) {
  results.assign(chunk.size(), Status::ok_status());
  Status failure;
  const auto fail = [&](size_t i, const Status& why) {
    results[i] = why.with_context(cannot_add(chunk[i].id));
    if (failure.ok()) failure = results[i];
  };
  std::vector<size_t> pending(chunk.size());
  for (size_t i = 0; i < chunk.size(); ++i) pending[i] = i;
  for (int attempt = 0; attempt < kAddAttemptsMax && !pending.empty(); ++attempt) {
    const int64_t now_ms = to_unix_ms(clock_.wall_now());
    std::vector<UpdateRequest> requests;
    requests.reserve(pending.size());
    for (const size_t i : pending) {
      requests.push_back(add_request(chunk[i], now_ms));
      // Unlike add(), nothing is made of the item written: a store that
      // talks to a server need not send it back whole.
      requests.back().update.returning_updated_only();
    }
    const std::vector<Result<Item>> written = store_.update_each(kConnectionsTable, requests);
    std::vector<size_t> refused;
    for (size_t k = 0; k < pending.size(); ++k) {
      if (written[k].ok()) continue;
      if (written[k].status().code() == Code::kConditionFailed) {
        refused.push_back(pending[k]);
      } else {
        fail(pending[k], written[k].status());
      }
    }
    pending.clear();
    if (refused.empty()) break;
    std::vector<Key> keys;
    keys.reserve(refused.size());
    for (const size_t i : refused) keys.push_back(connection_key(chunk[i].id));
    const Result<std::vector<Item>> items = store_.batch_get(kConnectionsTable, keys);
    if (!items.ok()) {
      for (const size_t i : refused) fail(i, items.status());
      break;
    }
    std::map<std::string_view, const Item*> by_pk;
    for (const Item& item : *items) {
      if (const std::string* pk = get_string(item, kConnectionsKeyAttr)) by_pk.emplace(*pk, &item);
    }
    const int64_t read_ms = to_unix_ms(clock_.wall_now());
    for (size_t k = 0; k < refused.size(); ++k) {
      const size_t i = refused[k];
      const auto found = by_pk.find(keys[k].pk);
      // No item: removed for good meanwhile (by another tool), and free.
      Status why = found == by_pk.end() ? Status::ok_status()
                                        : refused_add(chunk[i].id, *found->second, read_ms);
      if (why.ok()) {
        pending.push_back(i);
      } else {
        results[i] = std::move(why);
      }
    }
  }
  for (const size_t i : pending) results[i] = added_meanwhile(chunk[i].id);
  return failure;
}

Result<Connection> Connections::set(std::string_view id, const ConnectionChange& change) {
  LEASEHOLD_RETURN_IF_ERROR(validate_connection_id(id));
  if (!change.url && !change.seq_field) {
    return invalid_argument("nothing to change: give a URL, a sequence field or both");
  }
  Update update;
  if (change.url) {
    LEASEHOLD_RETURN_IF_ERROR(validate_url_template(*change.url));
    update.set(kWsUrlAttr, *change.url);
  }
  if (change.seq_field) {
    LEASEHOLD_RETURN_IF_ERROR(validate_seq_field(*change.seq_field));
    update.set(kSeqFieldAttr, *change.seq_field);
  }
  return update_live(id, update, "cannot change connection '");
}

// The write is conditioned on the state read just before, so that the
// counts (fleet/summary.h) move from the state it really had; should the
// state change in between, it is read and written again.
Result<Connection> Connections::set_desired(std::string_view id, DesiredState state) {
  LEASEHOLD_RETURN_IF_ERROR(validate_connection_id(id));
  assert(state != DesiredState::kRemoved && "remove() makes tombstones");
  Update update;
  update.set(kDesiredStateAttr, std::string(desired_state_name(state)));
  return change_state(id, state, update, "cannot set the desired state of connection '");
}

Result<Connection> Connections::remove(std::string_view id) {
  LEASEHOLD_RETURN_IF_ERROR(validate_connection_id(id));
  Update update;
  update.set(kDesiredStateAttr, removed_name())
      .set(kRemovedAtMsAttr, to_unix_ms(clock_.wall_now()));
  return change_state(id, DesiredState::kRemoved, update, "cannot remove connection '");
}

Result<Connection> Connections::change_state(std::string_view id, DesiredState state,
                                             const Update& update, std::string_view what) {
  for (int attempt = 0; attempt < kAddAttemptsMax; ++attempt) {
    LEASEHOLD_ASSIGN_OR_RETURN(Connection before, inspect(id));
    if (before.desired_state == DesiredState::kRemoved) return no_such_connection(id);
    if (before.desired_state == state) return before;  // nothing to write
    const std::string from(desired_state_name(before.desired_state));
    Result<Connection> now =
        update_live(id, update, what, cond::eq(kDesiredStateAttr, from), /*refused_is_gone=*/false);
    if (now.status().code() == Code::kConditionFailed) continue;  // changed meanwhile
    if (!now.ok()) return now.status();
    count(before.desired_state, -1);
    if (state != DesiredState::kRemoved) count(state, +1);
    return now;
  }
  return unavailable("the desired state of connection '" + std::string(id) +
                     "' was changed by others while it was being set; try again");
}

// Best effort: should it fail, the next recount puts the counts right.
void Connections::count(DesiredState state, int64_t delta) {
  (void)count_change(store_, state == DesiredState::kStarted ? delta : 0,
                     state == DesiredState::kStopped ? delta : 0);
}

// One write to a connection that exists and is not a tombstone (and meets
// `also`); `what` begins the message of a store failure ("cannot remove
// connection '"). A refused write is kNotFound, or kConditionFailed if not
// `refused_is_gone`.
Result<Connection> Connections::update_live(std::string_view id, const Update& update,
                                            std::string_view what, Condition also,
                                            bool refused_is_gone) {
  auto written = store_.update(kConnectionsTable, connection_key(id), update,
                               live_connection() && std::move(also));
  // kNotFound too: a table that does not exist holds no connection.
  if (written.status().code() == Code::kNotFound ||
      (written.status().code() == Code::kConditionFailed && refused_is_gone)) {
    return no_such_connection(id);
  }
  if (written.status().code() == Code::kConditionFailed) return written.status();
  LEASEHOLD_RETURN_IF_ERROR(
      written.status().with_context(std::string(what) + std::string(id) + "'"));
  Result<Connection> now = parse_written(*written);
  // Its holder is told to read it now rather than at its next poll. Should
  // that fail, the poll still finds the change: the write above is done.
  if (now.ok() && !now->owner.empty() && now->expires_at_ms != 0) {
    (void)nudge_member(store_, now->owner);
  }
  return now;
}

Result<Connection> Connections::get(std::string_view id) {
  LEASEHOLD_ASSIGN_OR_RETURN(Connection connection, inspect(id));
  if (connection.desired_state == DesiredState::kRemoved) return no_such_connection(id);
  LEASEHOLD_RETURN_IF_ERROR(
      show_positions(store_, std::span<Connection>(&connection, 1), /*consistent=*/true));
  return connection;
}

Result<Connection> Connections::inspect(std::string_view id) {
  LEASEHOLD_RETURN_IF_ERROR(validate_connection_id(id));
  auto item = store_.get(kConnectionsTable, connection_key(id), /*consistent=*/true);
  if (item.status().code() == Code::kNotFound) return no_such_connection(id);
  LEASEHOLD_RETURN_IF_ERROR(
      item.status().with_context("cannot read connection '" + std::string(id) + "'"));
  return parse_written(*item);
}

Status show_positions(ItemStore& store, std::span<Connection> connections, bool consistent) {
  std::map<std::string, Positions, std::less<>> read;
  for (Connection& c : connections) {
    if (c.session.empty() || c.expires_at_ms == 0) continue;
    auto it = read.find(c.session);
    if (it == read.end()) {
      LEASEHOLD_ASSIGN_OR_RETURN(Positions positions, read_positions(store, c.session, consistent));
      it = read.emplace(c.session, std::move(positions)).first;
    }
    const Position* p = find_position(it->second, c.id, c.epoch);
    if (p == nullptr || p->seq < c.last_seq) continue;
    c.last_seq = p->seq;
    c.messages = p->messages;
    c.reconnects = p->reconnects;
    c.last_message_at_ms = p->last_message_at_ms;
  }
  return {};
}

Result<std::vector<Connection>> Connections::list() {
  std::vector<Connection> read;
  LEASEHOLD_RETURN_IF_ERROR(list_state(DesiredState::kStarted, read));
  LEASEHOLD_RETURN_IF_ERROR(list_state(DesiredState::kStopped, read));
  // By ID; where a connection was read twice, the later read wins.
  std::map<std::string, Connection, std::less<>> by_id;
  for (Connection& c : read) by_id.insert_or_assign(c.id, std::move(c));
  std::vector<Connection> out;
  out.reserve(by_id.size());
  for (auto& [id, c] : by_id) out.push_back(std::move(c));
  LEASEHOLD_RETURN_IF_ERROR(show_positions(store_, out, /*consistent=*/false));
  return out;
}

Status Connections::list_state(DesiredState state, std::vector<Connection>& out) {
  QueryOptions query;
  query.limit = kQueryLimitMax;
  do {
    LEASEHOLD_ASSIGN_OR_RETURN(
        Page page, store_.query_index(kConnectionsTable, kOrphanIndex, desired_state_name(state),
                                      KeyRange::all(), query));
    for (const Item& item : page.items) {
      auto connection = parse_connection(item);
      if (!connection.ok()) {
        const std::string* pk = get_string(item, kConnectionsKeyAttr);
        return internal_error("an item of table " + std::string(kConnectionsTable) +
                              (pk != nullptr ? " (" + shown(*pk, 256) + ")" : std::string()) +
                              " is not a connection: " + connection.status().message());
      }
      out.push_back(*std::move(connection));
    }
    if (!page.next_cursor.empty() && page.next_cursor == query.cursor) {
      return internal_error("the store returned the same page cursor twice");
    }
    query.cursor = page.next_cursor;
  } while (!query.cursor.empty());
  return Status::ok_status();
}

}  // namespace leasehold::fleet

namespace leasehold::fleet {
namespace {

// Up to kConnectionIdBytesMax bytes that an ID could hold, or be a prefix
// of; `what` names the parameter.
Status check_id_part(std::string_view text, std::string_view what) {
  if (text.size() > kConnectionIdBytesMax) {
    return invalid_argument(std::string(what) + ": longer than any ID (" +
                            std::to_string(kConnectionIdBytesMax) + " bytes)");
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_id_char(text[i])) continue;
    return invalid_argument(std::string(what) + ": " + byte_shown(text, i) +
                            " is in no ID (A-Z, a-z, 0-9, '.', '_', '~', '-')");
  }
  return {};
}

bool matches(const ListQuery& q, const Connection& c) {
  return c.id.starts_with(q.prefix) && (q.after.empty() || c.id > q.after) &&
         (!q.state || c.desired_state == *q.state) && c.desired_state != DesiredState::kRemoved;
}

}  // namespace

Status validate_list_query(const ListQuery& q) {
  if (q.limit < 1 || q.limit > kListPageMax) {
    return invalid_argument("limit: expected an integer from 1 to " + std::to_string(kListPageMax));
  }
  if (q.state && *q.state == DesiredState::kRemoved) {
    return invalid_argument("state: expected STARTED or STOPPED");
  }
  LEASEHOLD_RETURN_IF_ERROR(check_id_part(q.prefix, "prefix"));
  LEASEHOLD_RETURN_IF_ERROR(check_id_part(q.owner, "owner"));
  return check_id_part(q.after, "after");
}

Result<std::vector<Connection>> Connections::get_many(std::span<const std::string> ids) {
  std::vector<Key> keys;
  for (const std::string& id : ids) {
    if (validate_connection_id(id).ok()) keys.push_back(connection_key(id));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(std::vector<Item> items, store_.batch_get(kConnectionsTable, keys));
  std::map<std::string, Connection, std::less<>> by_id;
  for (const Item& item : items) {
    Result<Connection> c = parse_connection(item);
    if (c.ok() && c->desired_state != DesiredState::kRemoved) by_id.emplace(c->id, *std::move(c));
  }
  std::vector<Connection> out;
  for (const std::string& id : ids) {
    const auto found = by_id.find(id);
    if (found == by_id.end()) continue;
    out.push_back(std::move(found->second));
    by_id.erase(found);  // named twice: shown once
  }
  LEASEHOLD_RETURN_IF_ERROR(show_positions(store_, out, /*consistent=*/false));
  return out;
}

Result<ConnectionPage> Connections::list_page(const ListQuery& query) {
  LEASEHOLD_RETURN_IF_ERROR(validate_list_query(query));
  std::vector<Connection> read;
  bool more = false;
  if (!query.owner.empty()) {
    LEASEHOLD_RETURN_IF_ERROR(page_owned(query, read, more));
  } else {
    // STARTED first (most connections are); when it fills the page, STOPPED
    // is read only up to the page's last ID, so that a page costs about one
    // page of reads rather than two.
    std::optional<std::string> upto;
    for (DesiredState state : {DesiredState::kStarted, DesiredState::kStopped}) {
      if (query.state && *query.state != state) continue;
      const size_t before = read.size();
      LEASEHOLD_RETURN_IF_ERROR(page_state(query, state, upto, read, more));
      if (read.size() - before > query.limit) upto = read[before + query.limit - 1].id;
    }
  }
  // Each state's first limit + 1 after `after` (the second's up to the
  // first's limit-th, when it had that many): the first `limit` of both
  // together are the fleet's.
  std::stable_sort(read.begin(), read.end(),
                   [](const Connection& a, const Connection& b) { return a.id < b.id; });
  // One that changed state between the two queries may be in both.
  read.erase(std::unique(read.begin(), read.end(),
                         [](const Connection& a, const Connection& b) { return a.id == b.id; }),
             read.end());
  if (read.size() > query.limit) {
    read.resize(query.limit);
    more = true;
  }
  LEASEHOLD_RETURN_IF_ERROR(show_positions(store_, read, /*consistent=*/false));
  ConnectionPage page;
  if (more && !read.empty()) page.next_after = read.back().id;
  page.items = std::move(read);
  return page;
}

// The first limit + 1 connections of `state` that match, by ID, up to
// `upto` if given: a query of the list index from `after` (or the
// prefix's first), which stops at the first ID past the prefix.
Status Connections::page_state(const ListQuery& q, DesiredState state,
                               const std::optional<std::string>& upto, std::vector<Connection>& out,
                               bool& more) {
  const std::string prefix_key = connection_key(q.prefix).pk;
  KeyRange range = q.after > q.prefix ? KeyRange::gt(connection_key(q.after).pk)
                   : q.prefix.empty() ? KeyRange::all()
                                      : KeyRange::begins_with(prefix_key);
  if (upto) {
    // The smallest ID after `after` is it with '-', the lowest byte an ID
    // holds; one after the prefix's first, the prefix itself.
    const std::string from = q.after > q.prefix ? q.after + "-" : q.prefix;
    range = KeyRange::between(connection_key(from).pk, connection_key(*upto).pk);
  }
  QueryOptions options;
  options.limit = static_cast<int>(q.limit + 1);
  size_t found = 0;
  do {
    Result<Page> page = store_.query_index(kConnectionsTable, kListIndex, desired_state_name(state),
                                           range, options);
    if (!page.ok()) return page.status().with_context("listing connections");
    for (const Item& item : page->items) {
      Result<Connection> c = parse_connection(item);
      if (!c.ok()) continue;
      if (!c->id.starts_with(q.prefix)) return {};  // past the prefix: no more
      if (upto && c->id > *upto) return {};
      if (!matches(q, *c)) continue;
      out.push_back(*std::move(c));
      if (++found > q.limit) {
        more = true;
        return {};
      }
    }
    options.cursor = page->next_cursor;
  } while (!options.cursor.empty());
  return {};
}

// The connections held under the owner's sessions (its member item names
// them), from the session index, by ID. The index holds what a sweep
// needs; what the page shows is read from the items themselves, for the
// page only.
Status Connections::page_owned(const ListQuery& q, std::vector<Connection>& out, bool& more) {
  Result<std::vector<Member>> members = list_members(store_, clock_, /*alive_only=*/false);
  if (!members.ok()) return members.status();
  const auto member = std::find_if(members->begin(), members->end(),
                                   [&](const Member& m) { return m.id == q.owner; });
  if (member == members->end()) return {};
  std::vector<std::string> sessions = member->previous_sessions;
  if (!member->session.empty()) sessions.insert(sessions.begin(), member->session);
  std::map<std::string, Connection, std::less<>> held;
  for (const std::string& session : sessions) {
    QueryOptions options;
    options.limit = kQueryLimitMax;
    do {
      Result<Page> page =
          store_.query_index(kConnectionsTable, kSessionIndex, session, KeyRange::all(), options);
      if (!page.ok()) return page.status().with_context("listing connections");
      for (const Item& item : page->items) {
        Result<Connection> c = parse_connection(item);
        if (c.ok() && c->owner == q.owner && matches(q, *c)) held.emplace(c->id, *std::move(c));
      }
      options.cursor = page->next_cursor;
    } while (!options.cursor.empty());
  }
  std::vector<Key> keys;
  for (const auto& [id, c] : held) {
    if (keys.size() == q.limit) {
      more = true;
      break;
    }
    keys.push_back(connection_key(id));
  }
  Result<std::vector<Item>> items = store_.batch_get(kConnectionsTable, keys);
  if (!items.ok()) return items.status().with_context("listing connections");
  for (const Item& item : *items) {
    Result<Connection> c = parse_connection(item);
    if (c.ok() && c->owner == q.owner && matches(q, *c)) out.push_back(*std::move(c));
  }
  return {};
}

}  // namespace leasehold::fleet
