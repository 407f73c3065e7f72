#include "accounts/accounts.h"

#include <array>
#include <cassert>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "accounts/secrets.h"
#include "accounts/sign_in_limiter.h"
#include "base/mutex.h"

namespace leasehold::accounts {

static_assert(kSecretHexDigits == 2 * kSecretBytes, "a secret is its bytes as hex");

namespace {

// Attributes of the accounts table (docs/schema.md).
constexpr std::string_view kPk = "pk";
constexpr std::string_view kKind = "kind";  // "user", "token" or "session"
constexpr std::string_view kName = "name";  // users: the user's name
constexpr std::string_view kDisplayName = "display_name";
constexpr std::string_view kAdmin = "admin";
constexpr std::string_view kPasswordHash = "password_hash";
// Users: random, new for each user ever added under a name; tokens and
// sessions repeat their user's, so a user added again under a removed name
// does not inherit what was left of the old one.
constexpr std::string_view kGeneration = "generation";
// Users: raised by set_password(); sessions repeat the value they began with.
constexpr std::string_view kSessionEpoch = "session_epoch";
constexpr std::string_view kOwner = "user";  // tokens and sessions: the user's name
constexpr std::string_view kCreatedAtMs = "created_at_ms";
constexpr std::string_view kExpiresAtMs = "expires_at_ms";      // sessions
constexpr std::string_view kRefreshedAtMs = "refreshed_at_ms";  // sessions: last slide

constexpr std::string_view kUserKind = "user";
constexpr std::string_view kTokenKind = "token";
constexpr std::string_view kSessionKind = "session";

// Tokens and sessions by their user, oldest first.
constexpr std::string_view kOwnerIndex = "user-created_at_ms-index";
// Users by name (hash: kind = "user").
constexpr std::string_view kUserIndex = "kind-name-index";

// Expired sessions a successful sign-in clears away, at most, from its
// user's oldest items.
constexpr int kPruneItemsMax = 100;

// Tokens and sessions whose user's name (and, for tokens, last check) this
// process remembers (see Impl::Known), at most; past that it forgets them
// all, which costs each one read more the next time it is used.
constexpr size_t kKnownOwnersMax = 10'000;

Key user_key(std::string_view name) { return Key{"USER#" + std::string(name), ""}; }
Key token_key(std::string_view token) { return Key{"TOKEN#" + sha256_hex(token), ""}; }
Key session_key(std::string_view id) { return Key{"SESSION#" + sha256_hex(id), ""}; }

// get_string_or(item, attr) without a copy, for comparing: valid while the
// item is.
std::string_view string_view_of(const Item& item, std::string_view attr) {
  const std::string* s = get_string(item, attr);
  return s != nullptr ? std::string_view(*s) : std::string_view();
}

User user_of(const Item& item) {
  User user;
  user.name = get_string_or(item, kName);
  user.display_name = get_string_or(item, kDisplayName);
  const auto admin = item.find(kAdmin);
  user.admin = admin != item.end() && std::get_if<bool>(&admin->second) != nullptr &&
               std::get<bool>(admin->second);
  user.has_password = get_string(item, kPasswordHash) != nullptr;
  return user;
}
// The same, taking the item's strings rather than copying them.
User user_of(Item&& item) {
  const auto take = [&item](std::string_view attr) {
    const auto it = item.find(attr);
    std::string* s = it != item.end() ? std::get_if<std::string>(&it->second) : nullptr;
    return s != nullptr ? std::move(*s) : std::string();
  };
  User user;
  user.name = take(kName);
  user.display_name = take(kDisplayName);
  const auto admin = item.find(kAdmin);
  user.admin = admin != item.end() && std::get_if<bool>(&admin->second) != nullptr &&
               std::get<bool>(admin->second);
  user.has_password = get_string(item, kPasswordHash) != nullptr;
  return user;
}

Status no_such_user(std::string_view name) {
  return not_found("no user named '" + std::string(name) + "'");
}

// The length of the well-formed UTF-8 sequence at s[i] and the code point
// it encodes, or 0 bytes if it is not one (overlong forms, surrogates and
// values past U+10FFFF are not).
std::pair<size_t, uint32_t> utf8_decode(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {1, lead};
  size_t n = 0;
  uint32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) n = 2, cp = lead & 0x1F;
  if (lead >= 0xE0 && lead <= 0xEF) n = 3, cp = lead & 0x0F;
  if (lead >= 0xF0 && lead <= 0xF4) n = 4, cp = lead & 0x07;
  if (n == 0 || i + n > s.size()) return {0, 0};
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kSmallest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {n, cp};
}

}  // namespace

// ---------------------------------------------------------------- input rules

Status check_user_name(std::string_view name) {
  const auto lower_or_digit = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  const auto is_valid = [&] {
    if (name.empty() || name.size() > kUserNameBytesMax || !lower_or_digit(name[0])) return false;
    for (const char c : name) {
      if (!lower_or_digit(c) && c != '.' && c != '_' && c != '-') return false;
    }
    return true;
  };
  if (is_valid()) return Status::ok_status();
  if (name.empty()) return invalid_argument("user name is empty");
  // Quoted only when it is short, printable text: anything else was most
  // likely pasted by mistake.
  const std::string shown = name.size() <= kUserNameBytesMax && check_display_name(name).ok()
                                ? "'" + std::string(name) + "'"
                                : "of " + std::to_string(name.size()) + " bytes";
  return invalid_argument("user name " + shown + " is not accepted: 1 to " +
                          std::to_string(kUserNameBytesMax) +
                          " characters of a-z, 0-9, '.', '_' and '-', starting with a letter or "
                          "digit");
}

Status check_display_name(std::string_view display_name) {
  if (display_name.empty()) return invalid_argument("display name is empty");
  if (display_name.size() > kDisplayNameBytesMax) {
    return invalid_argument("display name is " + std::to_string(display_name.size()) +
                            " bytes long; at most " + std::to_string(kDisplayNameBytesMax) +
                            " are allowed");
  }
  for (size_t i = 0; i < display_name.size();) {
    const auto [bytes, cp] = utf8_decode(display_name, i);
    if (bytes == 0) {
      return invalid_argument("display name is not valid UTF-8 at byte " + std::to_string(i));
    }
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
      return invalid_argument("display name contains a control character at byte " +
                              std::to_string(i));
    }
    i += bytes;
  }
  return Status::ok_status();
}

Status check_password(std::string_view password, const AccountsOptions& options) {
  if (password.size() < options.password_bytes_min ||
      password.size() > options.password_bytes_max) {
    return invalid_argument("password is " + std::to_string(password.size()) +
                            " bytes long; it must be " +
                            std::to_string(options.password_bytes_min) + " to " +
                            std::to_string(options.password_bytes_max) + " bytes");
  }
  return Status::ok_status();
}

// ---------------------------------------------------------------- Impl

class Accounts::Impl {
 public:
  Impl(ItemStore& store, Clock& clock, Random& random, AccountsOptions options)
      : store_(store),
        clock_(clock),
        options_(std::move(options)),
        random_(&random),
        limiter_(clock,
                 SignInLimits{options_.failures_per_name_max, options_.failures_per_address_max,
                              options_.failure_window, options_.limiter_keys_max}) {
    assert(options_.argon2_memory_kib >= 8 && options_.argon2_passes >= 1);
    assert(options_.session_ttl > Duration::zero() && options_.slide_every >= Duration::zero());
  }

  Result<Added> add_user(const NewUser& user);
  Result<std::string> new_token(std::string_view name);
  Status set_password(std::string_view name, std::string_view password);
  Result<std::vector<User>> list_users();
  Result<User> get_user(std::string_view name);
  Status remove_user(std::string_view name);
  Result<User> authenticate_token(std::string_view token, Recency recency);
  SignIn sign_in(std::string_view name, std::string_view password, std::string_view address);
  Result<User> authenticate_session(std::string_view session_id, Recency recency);
  Status sign_out(std::string_view session_id);

 private:
  const std::string& table() const { return options_.table; }
  int64_t now_ms() { return to_unix_ms(clock_.wall_now()); }

  Item new_user_item(const NewUser& user);
  Item token_item(const Item& user, std::string_view token);
  Status resolve_unknown_put(const Key& key, std::string_view generation, const Status& sent);
  Result<Item> read_user(std::string_view name);
  // A token's or a session's item and its user, as found together.
  struct Owned {
    std::optional<Item> item;  // empty: no such token or session
    std::optional<Item> user;  // empty: no user of the name the item names
  };
  Result<Owned> read_owned(const Key& key);
  Result<Owned> read_owned_known(const Key& key, const std::string& name);
  // REQUIRES: owned.item.
  Result<const Item*> owner_of(const Owned& owned, std::string_view what);
  void remove_owned(std::string_view name, std::string_view generation, std::string_view kind);
  Result<Item> check_credentials(std::string_view name, std::string_view password);
  Result<Session> open_session(const Item& user);
  void slide(const Key& key, const Item& session, int64_t now_ms);
  void prune_expired_sessions(std::string_view name);

  std::string draw_secret();
  std::string draw_generation();
  Result<std::string> hash(std::string_view password);
  // Spends the time a password check takes, for a user that has none to
  // check, so that the answer's timing does not tell which users exist.
  void spend_a_check(std::string_view password);

  ItemStore& store_;
  Clock& clock_;
  const AccountsOptions options_;
  Mutex random_mu_;
  Random* const random_ GUARDED_BY(random_mu_);
  SignInLimiter limiter_;
  std::once_flag decoy_once_;
  std::string decoy_hash_;  // written once under decoy_once_
  // What this process knows of a token or session, by its key (its pk).
  struct Known {
    // Its user's name, which cannot go stale: a token or session never
    // changes its user while it lives, and a key is never reused (the
    // SHA-256 of 256 random bits).
    std::string owner;
    // Tokens, on a store that has change stamps: the user that the last
    // check found, and the store's stamp taken before that check's read.
    // What can change (the item's presence, the user's presence,
    // generation, admin flag) changes only by a write, and a write moves the
    // stamp: while the store's stamp is still `stamp`, the check's answer
    // stands, in every process. Otherwise it is read again.
    std::optional<User> checked;
    ChangeStamp stamp;
    // Tokens and sessions, on a store without change stamps: the user that
    // the last check found, when (recent_at), and until when a session it
    // was lasts (Unix ms), for Recency::kRecent.
    std::optional<User> recent;
    MonoTime recent_at{};
    int64_t recent_until_ms = 0;
  };
  // The user of the token at `pk` if a check found it at `stamp`.
  std::optional<User> checked_user(const std::string& pk, const ChangeStamp& stamp);
  void remember_check(const std::string& pk, const User& user, const ChangeStamp& stamp);
  // The user of the token or session at `pk` if a check found it within
  // recent_check_for (and before `recent_until_ms`).
  std::optional<User> recent_user(const std::string& pk);
  // What a check (on a store without change stamps) found: a user it may
  // stand for until `until_ms`, or a failure, which no later check reuses.
  void remember_recent(const std::string& pk, const Result<User>& checked, int64_t until_ms);
  // Forgets every check kept for reuse (a user removed, or signed out of
  // every session, here).
  void forget_recent_checks();
  // A session's check that read the store: its user, and its expiry as read.
  struct SessionCheck {
    User user;
    int64_t expires_at_ms = 0;
  };
  Result<SessionCheck> check_session(const Key& key);
  Result<User> check_token(const Key& key);

  Mutex owners_mu_;
  std::unordered_map<std::string, Known> known_ GUARDED_BY(owners_mu_);
};

std::string Accounts::Impl::draw_secret() {
  MutexLock lock(random_mu_);
  return new_secret(*random_);
}

std::string Accounts::Impl::draw_generation() {
  MutexLock lock(random_mu_);
  return random_token(*random_);
}

Result<std::string> Accounts::Impl::hash(std::string_view password) {
  std::array<std::byte, kSaltBytes> salt;
  {
    MutexLock lock(random_mu_);
    random_->fill(salt);
  }
  return hash_password(password, salt,
                       Argon2Cost{options_.argon2_memory_kib, options_.argon2_passes});
}

void Accounts::Impl::spend_a_check(std::string_view password) {
  std::call_once(decoy_once_, [&] {
    auto decoy = hash(draw_secret());
    if (decoy.ok()) decoy_hash_ = std::move(*decoy);
  });
  if (!decoy_hash_.empty()) (void)verify_password(decoy_hash_, password);
}

Item Accounts::Impl::new_user_item(const NewUser& user) {
  return Item{{std::string(kPk), user_key(user.name).pk},
              {std::string(kKind), std::string(kUserKind)},
              {std::string(kName), user.name},
              {std::string(kDisplayName), user.display_name},
              {std::string(kAdmin), user.admin},
              {std::string(kGeneration), draw_generation()},
              {std::string(kSessionEpoch), int64_t{0}},
              {std::string(kCreatedAtMs), now_ms()}};
}

Item Accounts::Impl::token_item(const Item& user, std::string_view token) {
  return Item{{std::string(kPk), token_key(token).pk},
              {std::string(kKind), std::string(kTokenKind)},
              {std::string(kOwner), get_string_or(user, kName)},
              {std::string(kGeneration), get_string_or(user, kGeneration)},
              {std::string(kCreatedAtMs), now_ms()}};
}

// A put whose reply was lost applied if the item now carries its generation.
Status Accounts::Impl::resolve_unknown_put(const Key& key, std::string_view generation,
                                           const Status& sent) {
  if (sent.code() != Code::kUnknownOutcome) return sent;
  auto item = store_.get(table(), key, /*consistent=*/true);
  if (item.ok() && get_string_or(*item, kGeneration) == generation) return Status::ok_status();
  return sent;
}

Result<Item> Accounts::Impl::read_user(std::string_view name) {
  auto item = store_.get(table(), user_key(name), /*consistent=*/true);
  if (item.status().code() == Code::kNotFound) return no_such_user(name);
  return item;
}

// ---------------------------------------------------------------- users

Result<Accounts::Added> Accounts::Impl::add_user(const NewUser& user) {
  LEASEHOLD_RETURN_IF_ERROR(check_user_name(user.name));
  LEASEHOLD_RETURN_IF_ERROR(check_display_name(user.display_name));
  if (user.password) LEASEHOLD_RETURN_IF_ERROR(check_password(*user.password, options_));
  const Status taken = already_exists("a user named '" + user.name + "' already exists");
  // A taken name is answered before anything is hashed or written.
  auto existing = read_user(user.name);
  if (existing.ok()) return taken;
  if (existing.status().code() != Code::kNotFound) return existing.status();

  Item item = new_user_item(user);
  if (user.password) {
    LEASEHOLD_ASSIGN_OR_RETURN(item[std::string(kPasswordHash)], hash(*user.password));
  }
  // The token is written first: a token whose user never came to be is
  // refused (no user has its generation) and removed below, while a user
  // written first and left without its token would have no way in.
  const std::string token = draw_secret();
  const Item token_it = token_item(item, token);
  LEASEHOLD_RETURN_IF_ERROR(store_.put(table(), token_it, cond::not_exists(std::string(kKind))));
  const Status put =
      resolve_unknown_put(user_key(user.name), get_string_or(item, kGeneration),
                          store_.put(table(), item, cond::not_exists(std::string(kKind))));
  if (!put.ok()) {
    (void)store_.remove(table(), token_key(token), Condition{});
    return put.code() == Code::kConditionFailed ? taken : put;
  }
  return Added{user_of(item), token};
}

Result<std::string> Accounts::Impl::new_token(std::string_view name) {
  LEASEHOLD_RETURN_IF_ERROR(check_user_name(name));
  LEASEHOLD_ASSIGN_OR_RETURN(const Item user, read_user(name));
  std::string token = draw_secret();
  LEASEHOLD_RETURN_IF_ERROR(
      store_.put(table(), token_item(user, token), cond::not_exists(std::string(kKind))));
  return token;
}

Status Accounts::Impl::set_password(std::string_view name, std::string_view password) {
  LEASEHOLD_RETURN_IF_ERROR(check_user_name(name));
  LEASEHOLD_RETURN_IF_ERROR(check_password(password, options_));
  LEASEHOLD_ASSIGN_OR_RETURN(const Item user, read_user(name));
  LEASEHOLD_ASSIGN_OR_RETURN(std::string hashed, hash(password));
  const std::string generation = get_string_or(user, kGeneration);
  Update update;
  update.set(std::string(kPasswordHash), std::move(hashed))
      .add(std::string(kSessionEpoch), 1)
      .returning_updated_only();
  // Only the user that was read: if it was removed (and perhaps added again)
  // meanwhile, the password was not the one to change.
  auto updated = store_.update(table(), user_key(name), update,
                               cond::eq(std::string(kGeneration), generation));
  if (updated.status().code() == Code::kConditionFailed) return no_such_user(name);
  LEASEHOLD_RETURN_IF_ERROR(updated.status());
  // The raised epoch has signed every session out already; removing them
  // only keeps the table small.
  forget_recent_checks();
  remove_owned(name, generation, kSessionKind);
  return Status::ok_status();
}

Result<std::vector<User>> Accounts::Impl::list_users() {
  std::vector<User> users;
  QueryOptions query;
  query.limit = kQueryLimitMax;
  do {
    LEASEHOLD_ASSIGN_OR_RETURN(
        Page page, store_.query_index(table(), kUserIndex, kUserKind, KeyRange::all(), query));
    for (const Item& item : page.items) users.push_back(user_of(item));
    if (!page.next_cursor.empty() && page.next_cursor == query.cursor) {
      return internal_error("the store returned the same page cursor twice");
    }
    query.cursor = page.next_cursor;
  } while (!query.cursor.empty());
  return users;
}

Result<User> Accounts::Impl::get_user(std::string_view name) {
  LEASEHOLD_RETURN_IF_ERROR(check_user_name(name));
  LEASEHOLD_ASSIGN_OR_RETURN(const Item user, read_user(name));
  return user_of(user);
}

Status Accounts::Impl::remove_user(std::string_view name) {
  LEASEHOLD_RETURN_IF_ERROR(check_user_name(name));
  LEASEHOLD_ASSIGN_OR_RETURN(const Item user, read_user(name));
  const std::string generation = get_string_or(user, kGeneration);
  const Status removed =
      store_.remove(table(), user_key(name), cond::eq(std::string(kGeneration), generation));
  if (removed.code() == Code::kConditionFailed) return no_such_user(name);  // removed meanwhile
  LEASEHOLD_RETURN_IF_ERROR(removed);
  forget_recent_checks();
  // Its tokens and sessions stopped working with the user; this only clears
  // them away, and may miss those an eventually consistent index does not
  // show yet.
  remove_owned(name, generation, "");
  return Status::ok_status();
}

// Removes the tokens and sessions (only those of `kind`, unless it is empty)
// of the user `name` of `generation`, as far as the index shows them. Best
// effort: they are refused already.
void Accounts::Impl::remove_owned(std::string_view name, std::string_view generation,
                                  std::string_view kind) {
  std::vector<Key> keys;
  QueryOptions query;
  query.limit = kQueryLimitMax;
  do {
    auto page = store_.query_index(table(), kOwnerIndex, name, KeyRange::all(), query);
    if (!page.ok()) break;
    for (const Item& item : page->items) {
      if (get_string_or(item, kGeneration) != generation) continue;
      if (!kind.empty() && get_string_or(item, kKind) != kind) continue;
      keys.push_back(Key{get_string_or(item, kPk), ""});
    }
    if (page->next_cursor == query.cursor) break;  // a store that repeats itself
    query.cursor = page->next_cursor;
  } while (!query.cursor.empty());
  for (const Key& key : keys) {
    (void)store_.remove(table(), key, cond::eq(std::string(kGeneration), std::string(generation)));
  }
}

// ---------------------------------------------------------------- tokens

// The item at `key` and its user. Once this process has seen the item, it
// knows the user's name, and reads both in one batch_get: one consistent
// read (one SQLite read transaction, one DynamoDB round trip) instead of two
// in a row. The first time, it reads the item and then its user.
Result<Accounts::Impl::Owned> Accounts::Impl::read_owned(const Key& key) {
  std::optional<std::string> known;
  {
    MutexLock lock(owners_mu_);
    if (const auto it = known_.find(key.pk); it != known_.end()) known = it->second.owner;
  }
  if (known) {
    LEASEHOLD_ASSIGN_OR_RETURN(Owned owned, read_owned_known(key, *known));
    // An item that names another user cannot be (keys are never reused);
    // if it ever did, the user read with it would be the wrong one.
    if (!owned.item || string_view_of(*owned.item, kOwner) == *known) return owned;
  }
  Owned owned;
  auto item = store_.get(table(), key, /*consistent=*/true);
  if (item.status().code() == Code::kNotFound) return owned;
  LEASEHOLD_RETURN_IF_ERROR(item.status());
  owned.item = std::move(*item);
  const std::string name = get_string_or(*owned.item, kOwner);
  auto user = store_.get(table(), user_key(name), /*consistent=*/true);
  if (user.ok()) {
    owned.user = std::move(*user);
  } else if (user.status().code() != Code::kNotFound) {
    return user.status();
  }
  MutexLock lock(owners_mu_);
  if (known_.size() >= kKnownOwnersMax) known_.clear();
  Known entry;
  entry.owner = name;
  known_.insert_or_assign(key.pk, std::move(entry));
  return owned;
}

Result<Accounts::Impl::Owned> Accounts::Impl::read_owned_known(const Key& key,
                                                               const std::string& name) {
  const Key keys[] = {key, user_key(name)};
  LEASEHOLD_ASSIGN_OR_RETURN(std::vector<Item> items, store_.batch_get(table(), keys));
  Owned owned;
  for (Item& item : items) {
    (string_view_of(item, kPk) == key.pk ? owned.item : owned.user) = std::move(item);
  }
  if (!owned.item) {
    // Revoked, ended or expired: it will not be back.
    MutexLock lock(owners_mu_);
    known_.erase(key.pk);
  }
  return owned;
}

// The user of a token or session, if it still exists as the same user (the
// same generation).
Result<const Item*> Accounts::Impl::owner_of(const Owned& owned, std::string_view what) {
  const std::string* generation = get_string(*owned.item, kGeneration);
  const std::string* user_generation = owned.user ? get_string(*owned.user, kGeneration) : nullptr;
  if (generation == nullptr || user_generation == nullptr || *generation != *user_generation) {
    return unauthenticated("the " + std::string(what) + "'s user no longer exists");
  }
  return &*owned.user;
}

std::optional<User> Accounts::Impl::checked_user(const std::string& pk,
                                                 const ChangeStamp& stamp) {
  MutexLock lock(owners_mu_);
  const auto it = known_.find(pk);
  if (it == known_.end() || !it->second.checked || it->second.stamp != stamp) return std::nullopt;
  return it->second.checked;
}

void Accounts::Impl::remember_check(const std::string& pk, const User& user,
                                    const ChangeStamp& stamp) {
  MutexLock lock(owners_mu_);
  // Gone if the table was cleared meanwhile, or the token found revoked by
  // a later check: then the next check reads.
  const auto it = known_.find(pk);
  if (it == known_.end()) return;
  it->second.checked = user;
  it->second.stamp = stamp;
}

std::optional<User> Accounts::Impl::recent_user(const std::string& pk) {
  if (options_.recent_check_for <= Duration::zero()) return std::nullopt;
  const MonoTime now = clock_.mono_now();
  const int64_t wall_ms = now_ms();
  MutexLock lock(owners_mu_);
  const auto it = known_.find(pk);
  if (it == known_.end() || !it->second.recent) return std::nullopt;
  const Known& k = it->second;
  if (now - k.recent_at >= options_.recent_check_for || wall_ms >= k.recent_until_ms) {
    return std::nullopt;
  }
  return k.recent;
}

void Accounts::Impl::remember_recent(const std::string& pk, const Result<User>& checked,
                                     int64_t until_ms) {
  const MonoTime now = clock_.mono_now();
  MutexLock lock(owners_mu_);
  const auto it = known_.find(pk);
  if (it == known_.end()) return;
  if (!checked.ok()) {
    it->second.recent.reset();
    return;
  }
  it->second.recent = *checked;
  it->second.recent_at = now;
  it->second.recent_until_ms = until_ms;
}

void Accounts::Impl::forget_recent_checks() {
  MutexLock lock(owners_mu_);
  for (auto& [pk, known] : known_) known.recent.reset();
}

Result<User> Accounts::Impl::check_token(const Key& key) {
  LEASEHOLD_ASSIGN_OR_RETURN(Owned owned, read_owned(key));
  if (!owned.item) return unauthenticated("unknown or revoked API token");
  LEASEHOLD_RETURN_IF_ERROR(owner_of(owned, "API token").status());
  return user_of(std::move(*owned.user));
}

Result<User> Accounts::Impl::authenticate_token(std::string_view token, Recency recency) {
  if (!is_secret(token)) return unauthenticated("malformed API token");
  const Key key = token_key(token);
  // Taken before the read: a write that the read misses moves it on.
  const std::optional<ChangeStamp> stamp = store_.change_stamp();
  if (stamp) {
    if (std::optional<User> user = checked_user(key.pk, *stamp)) return std::move(*user);
  } else if (recency == Recency::kRecent) {
    if (std::optional<User> user = recent_user(key.pk)) return std::move(*user);
  }
  Result<User> user = check_token(key);
  if (stamp) {
    if (user.ok()) remember_check(key.pk, *user, *stamp);
  } else {
    remember_recent(key.pk, user, std::numeric_limits<int64_t>::max());
  }
  return user;
}

// ---------------------------------------------------------------- sessions

SignIn Accounts::Impl::sign_in(std::string_view name, std::string_view password,
                               std::string_view address) {
  // A name that cannot exist is counted by the address alone, so that junk
  // names cost the limiter no memory.
  const std::string_view counted = check_user_name(name).ok() ? name : std::string_view();
  const SignInLimiter::Admission admission = limiter_.admit(counted, address);
  if (!admission.admitted) {
    const auto wait_s = std::chrono::ceil<std::chrono::seconds>(admission.retry_after).count();
    return SignIn{resource_exhausted("too many failed sign-ins; try again in " +
                                     std::to_string(wait_s) + " s"),
                  std::nullopt, admission.retry_after};
  }
  auto user = check_credentials(name, password);
  if (!user.ok()) {
    // Only a wrong name or password counts against the limit, not a store
    // that could not answer.
    if (user.status().code() != Code::kUnauthenticated) {
      limiter_.abandoned(counted, address, admission);
    }
    return SignIn{user.status(), std::nullopt, {}};
  }
  limiter_.succeeded(counted, address, admission);
  auto session = open_session(*user);
  if (!session.ok()) return SignIn{session.status(), std::nullopt, {}};
  prune_expired_sessions(name);
  return SignIn{Status::ok_status(), std::move(*session), {}};
}

// The user, if `password` is theirs. An unknown user, or one without a
// password, costs the same Argon2 check as a wrong password and gets the
// same answer.
Result<Item> Accounts::Impl::check_credentials(std::string_view name, std::string_view password) {
  const Status wrong = unauthenticated("wrong user name or password");
  // Bounded before any hashing, so that a huge password costs nothing.
  if (!check_user_name(name).ok() || password.size() > options_.password_bytes_max) return wrong;
  auto user = store_.get(table(), user_key(name), /*consistent=*/true);
  if (user.status().code() == Code::kNotFound) {
    spend_a_check(password);
    return wrong;
  }
  LEASEHOLD_RETURN_IF_ERROR(user.status());
  const std::string* encoded = get_string(*user, kPasswordHash);
  if (encoded == nullptr) {
    spend_a_check(password);
    return wrong;
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const bool matches, verify_password(*encoded, password));
  if (!matches) return wrong;
  return user;
}

Result<Session> Accounts::Impl::open_session(const Item& user) {
  const std::string id = draw_secret();
  const int64_t now = now_ms();
  const int64_t expires_at_ms = now + to_ms(options_.session_ttl);
  const Item item{{std::string(kPk), session_key(id).pk},
                  {std::string(kKind), std::string(kSessionKind)},
                  {std::string(kOwner), get_string_or(user, kName)},
                  {std::string(kGeneration), get_string_or(user, kGeneration)},
                  {std::string(kSessionEpoch), get_int_or(user, kSessionEpoch)},
                  {std::string(kCreatedAtMs), now},
                  {std::string(kExpiresAtMs), expires_at_ms},
                  {std::string(kRefreshedAtMs), now}};
  LEASEHOLD_RETURN_IF_ERROR(store_.put(table(), item, cond::not_exists(std::string(kKind))));
  return Session{id, user_of(user), from_unix_ms(expires_at_ms)};
}

Result<User> Accounts::Impl::authenticate_session(std::string_view session_id, Recency recency) {
  if (!is_secret(session_id)) return unauthenticated("malformed session ID");
  const Key key = session_key(session_id);
  const bool stamped = store_.change_stamp().has_value();
  if (!stamped && recency == Recency::kRecent) {
    if (std::optional<User> user = recent_user(key.pk)) return std::move(*user);
  }
  Result<SessionCheck> checked = check_session(key);
  if (!stamped) {
    remember_recent(key.pk, checked.ok() ? Result<User>(checked->user) : checked.status(),
                    checked.ok() ? checked->expires_at_ms : 0);
  }
  if (!checked.ok()) return checked.status();
  return std::move(checked->user);
}

Result<Accounts::Impl::SessionCheck> Accounts::Impl::check_session(const Key& key) {
  LEASEHOLD_ASSIGN_OR_RETURN(const Owned owned, read_owned(key));
  if (!owned.item) return unauthenticated("unknown or ended session");
  const Item* const session = &*owned.item;
  const int64_t now = now_ms();
  const int64_t expires_at_ms = get_int_or(*session, kExpiresAtMs);
  if (expires_at_ms <= now) {
    // Unless another process slid it meanwhile, it is of no use any more.
    (void)store_.remove(table(), key, cond::eq(std::string(kExpiresAtMs), expires_at_ms));
    return unauthenticated("session expired");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const Item* const user, owner_of(owned, "session"));
  if (get_int_or(*session, kSessionEpoch) != get_int_or(*user, kSessionEpoch)) {
    return unauthenticated("session ended: the password was changed");
  }
  slide(key, *session, now);
  return SessionCheck{user_of(*user), expires_at_ms};
}

// Moves the session's expiry to now + session_ttl if it was last moved at
// least slide_every ago. Best effort: a failed write leaves the session as
// it was, valid until its old expiry.
void Accounts::Impl::slide(const Key& key, const Item& session, int64_t now) {
  if (now - get_int_or(session, kRefreshedAtMs) < to_ms(options_.slide_every)) return;
  Update update;
  update.set(std::string(kExpiresAtMs), now + to_ms(options_.session_ttl))
      .set(std::string(kRefreshedAtMs), now)
      .returning_updated_only();
  // False for a session signed out meanwhile (no attributes), so that the
  // update cannot bring it back, and for one another process slid later.
  const Condition still_there = cond::lt(std::string(kRefreshedAtMs), now);
  (void)store_.update(table(), key, update, still_there);
}

void Accounts::Impl::prune_expired_sessions(std::string_view name) {
  QueryOptions query;
  query.limit = kPruneItemsMax;
  auto page = store_.query_index(table(), kOwnerIndex, name, KeyRange::all(), query);
  if (!page.ok()) return;
  const int64_t now = now_ms();
  for (const Item& item : page->items) {
    if (get_string_or(item, kKind) != kSessionKind) continue;
    const int64_t expires_at_ms = get_int_or(item, kExpiresAtMs);
    if (expires_at_ms > now) continue;
    (void)store_.remove(table(), Key{get_string_or(item, kPk), ""},
                        cond::eq(std::string(kExpiresAtMs), expires_at_ms));
  }
}

Status Accounts::Impl::sign_out(std::string_view session_id) {
  if (!is_secret(session_id)) return Status::ok_status();  // no such session can exist
  const Key key = session_key(session_id);
  {
    MutexLock lock(owners_mu_);
    known_.erase(key.pk);
  }
  return store_.remove(table(), key, Condition{});
}

// ---------------------------------------------------------------- Accounts

Accounts::Accounts(ItemStore& store, Clock& clock, Random& random, AccountsOptions options)
    : impl_(std::make_unique<Impl>(store, clock, random, std::move(options))) {}

Accounts::~Accounts() = default;

TableSpec Accounts::table_spec(std::string_view table) {
  return TableSpec{std::string(table),
                   std::string(kPk),
                   "",
                   {IndexSpec{std::string(kOwnerIndex), std::string(kOwner),
                              std::string(kCreatedAtMs), AttrType::kInt},
                    IndexSpec{std::string(kUserIndex), std::string(kKind), std::string(kName),
                              AttrType::kString}}};
}

Result<Accounts::Added> Accounts::add_user(const NewUser& user) { return impl_->add_user(user); }
Result<std::string> Accounts::new_token(std::string_view name) { return impl_->new_token(name); }
Status Accounts::set_password(std::string_view name, std::string_view password) {
  return impl_->set_password(name, password);
}
Result<std::vector<User>> Accounts::list_users() { return impl_->list_users(); }
Result<User> Accounts::get_user(std::string_view name) { return impl_->get_user(name); }
Status Accounts::remove_user(std::string_view name) { return impl_->remove_user(name); }
Result<User> Accounts::authenticate_token(std::string_view token, Recency recency) {
  return impl_->authenticate_token(token, recency);
}
SignIn Accounts::sign_in(std::string_view name, std::string_view password,
                         std::string_view client_address) {
  return impl_->sign_in(name, password, client_address);
}
Result<User> Accounts::authenticate_session(std::string_view session_id, Recency recency) {
  return impl_->authenticate_session(session_id, recency);
}
Status Accounts::sign_out(std::string_view session_id) { return impl_->sign_out(session_id); }

}  // namespace leasehold::accounts
