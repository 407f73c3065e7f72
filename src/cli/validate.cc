#include "cli/validate.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "base/duration.h"

namespace leasehold::cli {
namespace {

// The well-formed UTF-8 sequences by their first byte (the Unicode
// standard's table 3-7): the second byte's narrower range is what refuses
// overlong forms, surrogates and values past U+10FFFF.
struct Utf8Lead {
  unsigned char first_lo, first_hi;
  size_t bytes;
  unsigned char second_lo, second_hi;
};
constexpr Utf8Lead kUtf8Leads[] = {
    {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF}, {0xE1, 0xEC, 3, 0x80, 0xBF},
    {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF}, {0xF0, 0xF0, 4, 0x90, 0xBF},
    {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
};

// The length of the UTF-8 sequence starting at s[i], or 0 if it is not a
// well-formed one.
size_t utf8_sequence_bytes(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  if (byte(i) < 0x80) return 1;
  for (const Utf8Lead& lead : kUtf8Leads) {
    if (byte(i) < lead.first_lo || byte(i) > lead.first_hi) continue;
    if (i + lead.bytes > s.size()) return 0;
    if (byte(i + 1) < lead.second_lo || byte(i + 1) > lead.second_hi) return 0;
    for (size_t k = 2; k < lead.bytes; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    }
    return lead.bytes;
  }
  return 0;
}

// Checks the rules shared by keys, owners and holders.
Status check_text(std::string_view what, std::string_view text, size_t bytes_max,
                  bool allow_empty) {
  if (text.empty() && !allow_empty) return invalid_argument(std::string(what) + " is empty");
  if (text.size() > bytes_max) {
    return invalid_argument(std::string(what) + " is " + std::to_string(text.size()) +
                            " bytes long; at most " + std::to_string(bytes_max) + " are allowed");
  }
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      return invalid_argument(std::string(what) + " contains a control character at byte " +
                              std::to_string(i));
    }
    const size_t n = utf8_sequence_bytes(text, i);
    if (n == 0) {
      return invalid_argument(std::string(what) + " is not valid UTF-8 at byte " +
                              std::to_string(i));
    }
    i += n;
  }
  return Status::ok_status();
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

Status check_key(std::string_view key) { return check_text("KEY", key, kKeyBytesMax, false); }

Status check_owner(std::string_view owner) {
  return check_text("--owner", owner, kOwnerBytesMax, false);
}

Status check_holder(std::string_view holder) {
  return check_text("--holder", holder, kHolderBytesMax, true);
}

Status check_token(std::string_view token) {
  if (is_well_formed_token(token)) return Status::ok_status();
  return invalid_argument("--token '" + std::string(token.substr(0, 64)) +
                          "' is not a lease token (32 lowercase hex digits, as printed by "
                          "`lease acquire`)");
}

Status check_slot(std::string_view slot) {
  const auto bad = [&] {
    return invalid_argument("--slot '" + std::string(slot.substr(0, 64)) +
                            "' is not a slot name ([a-z][a-z0-9_]{0,31}, e.g. lease)");
  };
  if (slot.empty() || slot.size() > kSlotBytesMax) return bad();
  if (slot[0] < 'a' || slot[0] > 'z') return bad();
  for (const char c : slot) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return bad();
  }
  return Status::ok_status();
}

namespace {

// What the lease layer's timing rules (default configuration) say about a
// ttl, without a store.
struct TtlTiming {
  Duration validity{};
  Duration renew_every{};
  Status check;  // check_timing() at renew_every
};

Result<TtlTiming> timing_of(Duration ttl) {
  const LeaseConfig config;
  const Duration renew_every = default_renew_every(config, ttl);
  return TtlTiming{validity(config, ttl), renew_every, check_timing(config, ttl, renew_every)};
}

// The longest grace period that fits: the command gets SIGTERM grace +
// kKillLead before the local deadline, and that moment must leave room for
// the first renewal and one retry (two renew periods), rounded down to whole
// milliseconds. Zero or less for a ttl too short to hold a command under.
Duration grace_max_of(const TtlTiming& timing) {
  return std::chrono::floor<std::chrono::milliseconds>(timing.validity - 2 * timing.renew_every -
                                                       kKillLead);
}

// The shortest ttl under which `grace` fits: a validity window of
// 3 * (grace + kKillLead), so that its renew period (a third) leaves exactly
// grace + kKillLead, plus the same allowances as `ttl` has.
Duration ttl_needed_for(Duration grace, Duration ttl, const TtlTiming& timing) {
  return 3 * (grace + kKillLead) + (ttl - timing.validity);
}

// Parses an explicit `--grace` and checks it against kGraceMax.
Result<Duration> parse_grace_text(const std::string& text) {
  auto grace = parse_duration(text);
  if (!grace.ok()) return grace.status().with_context("--grace");
  if (*grace <= Duration::zero() || *grace > kGraceMax) {
    return invalid_argument("--grace " + text + ": must be more than 0 and at most " +
                            format_duration(kGraceMax));
  }
  return grace;
}

}  // namespace

Result<Duration> parse_ttl(std::string_view text) {
  auto ttl = parse_duration(text);
  if (!ttl.ok()) return ttl.status().with_context("--ttl");
  LEASEHOLD_ASSIGN_OR_RETURN(const TtlTiming timing, timing_of(*ttl));
  if (!timing.check.ok()) return invalid_argument("--ttl: " + timing.check.message());
  return ttl;
}

Result<uint64_t> parse_byte_size(std::string_view flag, std::string_view text) {
  const Status bad = invalid_argument(std::string(flag) + " '" + std::string(text.substr(0, 64)) +
                                      "': expected a size such as 2GiB, 512MiB or 1048576");
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19) return bad;
  const uint64_t number = std::stoull(std::string(text.substr(0, digits)));
  const std::string_view unit = text.substr(digits);
  int shift = -1;
  for (const auto& [name, bits] : {std::pair<std::string_view, int>{"", 0},
                                   {"B", 0},
                                   {"KiB", 10},
                                   {"MiB", 20},
                                   {"GiB", 30},
                                   {"TiB", 40}}) {
    if (unit == name) shift = bits;
  }
  constexpr uint64_t kMax = uint64_t{1} << 62;
  if (shift < 0 || number == 0 || number > (kMax >> shift)) return bad;
  return number << shift;
}

Result<Duration> parse_grace(const std::optional<std::string>& text, Duration ttl) {
  LEASEHOLD_ASSIGN_OR_RETURN(const TtlTiming timing, timing_of(ttl));
  const Duration fits = grace_max_of(timing);
  const std::string ttl_text = format_duration(ttl);
  if (!text) {
    if (fits > Duration::zero()) return std::min(kGraceDefault, fits);
    const Duration needed = ttl_needed_for(std::chrono::milliseconds(1), ttl, timing);
    return invalid_argument("--ttl " + ttl_text +
                            " leaves the command no time to stop once the lease is lost; "
                            "`lease hold` needs a ttl of at least " +
                            format_duration(needed));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const Duration grace, parse_grace_text(*text));
  if (grace <= fits) return grace;
  const std::string allowed =
      fits > Duration::zero() ? "a grace of at most " + format_duration(fits) : "no grace at all";
  return invalid_argument("--grace " + *text + " does not fit --ttl " + ttl_text +
                          ": the command gets SIGTERM grace + " + format_duration(kKillLead) +
                          " before the lease's local deadline, which must leave room for a "
                          "renewal and a retry; a " +
                          ttl_text + " ttl allows " + allowed + ", and a " +
                          format_duration(grace) + " grace needs a ttl of at least " +
                          format_duration(ttl_needed_for(grace, ttl, timing)));
}

Result<ReleaseMode> parse_mode(std::string_view text) {
  if (text == "expire") return ReleaseMode::kExpire;
  if (text == "clear") return ReleaseMode::kClear;
  return invalid_argument("--mode '" + std::string(text.substr(0, 64)) +
                          "' is not a release mode (expire or clear)");
}

Status check_command(const std::vector<std::string>& command) {
  const std::string& name = command.at(0);
  if (name.empty()) return invalid_argument("COMMAND is empty");
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return Status::ok_status();
    return invalid_argument("COMMAND '" + name + "' is not an executable file");
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (is_executable_file(candidate)) return Status::ok_status();
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return invalid_argument("COMMAND '" + name + "' was not found in $PATH");
}

}  // namespace leasehold::cli
