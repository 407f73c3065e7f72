// Accounts: users, their API tokens and their browser sessions, kept in the
// item store (every backend), so that several `leasehold serve` processes on
// one store share them.
//
// Secrets are never stored as given: passwords as Argon2id hashes (libargon2,
// a random salt each), API tokens and session IDs as the SHA-256 of their
// 256-bit CSPRNG value. A token or session ID is handed to its owner once
// (add_user, new_token, sign_in) and cannot be read back. Nothing here logs
// or puts a secret in a Status message.
//
// A check sees what the store holds when it begins, so that a token or a
// user removed, or a user changed, by another process counts at the next
// request. What a process remembers is which user each token and session
// it has seen belongs to, which never changes: it lets a check read the
// item and its user in one batch_get instead of two reads in a row. On a
// store with change stamps (ItemStore::change_stamp(): SQLite, memory) a
// token's check is also kept with the stamp taken before its read, and
// stands for as long as the stamp stays the same, that is until anything
// is written to the store. On a store without them (DynamoDB), a check for a
// request that only reads (Recency::kRecent) may reuse this process's last
// check of the same token or session for recent_check_for (10 s): a
// revocation made through another process counts for reads within that
// long, for writes at once; one made through this process counts at once.
// Every other check reads. A session's
// expiry slides on use, written at most once per slide_every so that a busy
// browser does not cost a write per request. Each user carries a random
// generation ID that its tokens and sessions repeat, and a session epoch
// that set_password() raises: a token or session whose user was removed
// (even if the name was taken again since) or whose password changed is
// refused by that comparison, whether or not the cleanup of its item got to
// it. So the cleanup may lag behind an eventually consistent index.
//
// Failed sign-ins are limited per user name and per client address, in this
// process (accounts/sign_in_limiter.h); several processes each keep their
// own count.
//
// Thread-safe, whatever Random is injected (draws from it are serialised).
// Every call blocks on the store (include/leasehold/store.h: call it from a
// BlockingPool, never on an event loop, but for authenticate_token on a
// store whose reads_are_local()), and add_user, set_password and
// sign_in also spend an Argon2id hash (tens of milliseconds at the default
// cost, and argon2_memory_kib of memory while it runs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::accounts {

inline constexpr size_t kUserNameBytesMax = 64;
inline constexpr size_t kDisplayNameBytesMax = 100;
// API tokens and session IDs: 32 random bytes as lowercase hex.
inline constexpr size_t kSecretHexDigits = 64;

// A user as the server and the CLI show it; never any secret.
struct User {
  std::string name;          // [a-z0-9][a-z0-9._-]{0,63}
  std::string display_name;  // 1..100 bytes of UTF-8, no control characters
  bool admin = false;
  bool has_password = false;
  bool operator==(const User&) const = default;
};

struct NewUser {
  std::string name;
  std::string display_name;
  bool admin = false;
  std::optional<std::string> password;  // none: API tokens only, until set_password
};

// A browser session, as sign_in() returns it.
struct Session {
  std::string id;  // 64 hex digits; the cookie's value; shown only here
  User user;
  WallTime expires_at;
};

// What sign_in() did. On kResourceExhausted, retry_after says when another
// attempt may be made (for Retry-After).
struct SignIn {
  Status status;  // OK, kUnauthenticated, kResourceExhausted, or the store's error
  std::optional<Session> session;
  Duration retry_after{};
};

struct AccountsOptions {
  std::string table = "accounts";
  Duration session_ttl = std::chrono::hours(12);
  // A session's expiry is moved forward (to now + session_ttl) when a use
  // finds it older than this.
  Duration slide_every = std::chrono::minutes(1);
  // Argon2id cost. The defaults follow OWASP's (19 MiB, 2 passes); tests
  // lower them. REQUIRES: argon2_memory_kib >= 8, argon2_passes >= 1.
  uint32_t argon2_memory_kib = 19 * 1024;
  uint32_t argon2_passes = 2;
  // Failed sign-ins allowed per window, per user name and per client address.
  int failures_per_name_max = 5;
  int failures_per_address_max = 20;
  Duration failure_window = std::chrono::minutes(1);
  // How many names and how many addresses the limiter keeps counts for; past
  // that it forgets the ones whose failures are oldest.
  size_t limiter_keys_max = 100'000;
  size_t password_bytes_min = 8;
  size_t password_bytes_max = 1024;
  // How long a check of a token or session may stand for requests that only
  // read (Recency::kRecent), on a store without change stamps: each check
  // otherwise costs two consistent reads (2 read units on DynamoDB), and a
  // page that polls asks several times a second. A token or session
  // revoked, or a user removed or given a new password, through another
  // process still reads for up to this long (never past a session's
  // expiry); writes are checked against the store each time. 0: every check
  // reads.
  Duration recent_check_for = std::chrono::seconds(10);
};

// What a check may rely on: the store as it is now (kExact, for requests
// that change something), or a check of the same credentials made by this
// process within AccountsOptions::recent_check_for (kRecent, for requests
// that only read).
enum class Recency { kExact, kRecent };

// The input rules add_user() and set_password() apply, for callers that
// check their input before they open a store. kInvalidArgument saying what
// is wrong; a password is never quoted.
Status check_user_name(std::string_view name);
Status check_display_name(std::string_view display_name);
Status check_password(std::string_view password, const AccountsOptions& options = {});

class Accounts {
 public:
  // REQUIRES: store, clock and random outlive this. `random` must be a CSPRNG
  // (SystemRandom) outside tests. The table must exist (table_spec()).
  Accounts(ItemStore& store, Clock& clock, Random& random, AccountsOptions options = {});
  ~Accounts();
  Accounts(const Accounts&) = delete;
  Accounts& operator=(const Accounts&) = delete;

  // The table this keeps everything in (created by `leasehold store init`
  // and by `serve` at start): key attribute "pk"; items USER#<name>,
  // TOKEN#<sha256 hex> and SESSION#<sha256 hex>; an index over the owning
  // user's name (tokens and sessions) and one over user names (list_users).
  static TableSpec table_spec(std::string_view table = "accounts");

  // Creates a user and a first API token, returned in `token` (64 hex
  // digits). kInvalidArgument for a bad name, display name or password
  // (nothing written); kAlreadyExists if the name is taken (nothing
  // written).
  struct Added {
    User user;
    std::string token;
  };
  Result<Added> add_user(const NewUser& user);
  // A new API token for `name` (kNotFound if no such user). Earlier tokens
  // stay valid.
  Result<std::string> new_token(std::string_view name);
  // Sets or replaces the password; signs out the user's sessions at once.
  // kInvalidArgument for a bad name or password, kNotFound if no such user.
  Status set_password(std::string_view name, std::string_view password);
  // Every user, by name.
  Result<std::vector<User>> list_users();
  // kNotFound if no such user, kInvalidArgument for a malformed name.
  Result<User> get_user(std::string_view name);
  // Removes the user, its tokens and its sessions (kNotFound if none). The
  // tokens and sessions stop working at once, even those the cleanup misses.
  Status remove_user(std::string_view name);

  // The user a bearer token belongs to; kUnauthenticated if the token is
  // malformed, unknown, or its user is gone. Only reads the store, never
  // writes (so it may run on an event loop when the store's
  // reads_are_local()).
  Result<User> authenticate_token(std::string_view token, Recency recency = Recency::kExact);
  // Checks a password and opens a session. Counts failures (see above): a
  // wrong password or an unknown user is kUnauthenticated, with the same
  // message and about the same time; too many failures in the window is
  // kResourceExhausted with retry_after, and then the password is not even
  // checked. `client_address` is the peer's address as text.
  SignIn sign_in(std::string_view name, std::string_view password, std::string_view client_address);
  // The user of a live session, sliding its expiry; kUnauthenticated if the
  // ID is malformed, unknown or expired, or the user is gone or changed its
  // password since.
  Result<User> authenticate_session(std::string_view session_id, Recency recency = Recency::kExact);
  // Ends a session (OK if it was already gone, or the ID is malformed).
  Status sign_out(std::string_view session_id);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::accounts
