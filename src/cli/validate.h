// Validation of command-line input, done in full before any store is opened.
//
// Each function returns kInvalidArgument with a message that names the flag
// and says what is wrong and what is accepted. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/status.h"

namespace leasehold::cli {

inline constexpr size_t kKeyBytesMax = 1024;
inline constexpr size_t kSlotBytesMax = 32;
// Bounds on `lease hold --grace`: long enough for any orderly shutdown, short
// enough that a lost lease is never outlived by much.
inline constexpr Duration kGraceMax = std::chrono::minutes(10);
// `--grace` when none is given, unless the ttl leaves less room (below).
inline constexpr Duration kGraceDefault = std::chrono::seconds(5);
// How long before the lease's local deadline `lease hold` must have killed its
// command: slack for the SIGKILL to land and for the guard to wake.
inline constexpr Duration kKillLead = std::chrono::milliseconds(100);

// Non-empty, at most kKeyBytesMax bytes of UTF-8, no control characters.
Status check_key(std::string_view key);
// Non-empty, at most kOwnerBytesMax bytes of UTF-8, no control characters.
Status check_owner(std::string_view owner);
// At most kHolderBytesMax bytes of UTF-8, no control characters; may be empty.
Status check_holder(std::string_view holder);
// 32 lowercase hex digits (is_well_formed_token).
Status check_token(std::string_view token);
// [a-z][a-z0-9_]{0,31}.
Status check_slot(std::string_view slot);

// Parses a lease ttl and checks it with LeaseManager::check_timing() at the
// default renew period, without opening any store.
Result<Duration> parse_ttl(std::string_view text);
// Parses `--grace` (nullopt: not given) for `lease hold` with a lease of
// `ttl`: a duration in (0, kGraceMax] that fits the ttl. The command gets
// SIGTERM grace + kKillLead before the lease's local deadline, and that must
// leave room for the first renewal and one retry: grace is at most
// validity(ttl) - 2 * default_renew_every(ttl) - kKillLead, in whole ms. Not
// given, it is kGraceDefault or that maximum, whichever is shorter.
Result<Duration> parse_grace(const std::optional<std::string>& text, Duration ttl);
// A size in bytes: a positive whole number, bare (bytes) or with one of
// the units KiB, MiB, GiB, TiB ("2GiB", "512MiB", "1048576"), at most
// 2^62. Errors name `flag`.
Result<uint64_t> parse_byte_size(std::string_view flag, std::string_view text);
// "expire" or "clear".
Result<ReleaseMode> parse_mode(std::string_view text);

// Checks that `command[0]` names an executable: a path that can be executed,
// or a name found in $PATH. REQUIRES: !command.empty().
Status check_command(const std::vector<std::string>& command);

}  // namespace leasehold::cli
