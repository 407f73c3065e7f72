// The AWS shared config and credentials files (aws/credentials_internal.h:
// parse_profiles, static_keys), as ~/.aws/config and ~/.aws/credentials
// hold them.
//
// The first byte says which file it is (config or credentials); the rest is
// its text.
// Properties: the profiles read, written again as an INI file of that kind,
// read back the same; static_keys() never quotes a secret in its errors.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "aws/credentials_internal.h"
#include "check.h"

namespace {

namespace internal = leasehold::aws::credentials_internal;
using leasehold::fuzz::escaped;
using Profiles = std::map<std::string, internal::ProfileSettings>;

std::string write_ini(const Profiles& profiles, bool config_file) {
  std::string out;
  for (const auto& [name, settings] : profiles) {
    out += config_file && name != "default" ? "[profile " + name + "]\n" : "[" + name + "]\n";
    for (const auto& [key, value] : settings) out += key + " = " + value + "\n";
  }
  return out;
}

std::string show(const Profiles& profiles) { return escaped(write_ini(profiles, false)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool config_file = data[0] & 1;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto profiles = internal::parse_profiles(text, config_file);
  if (!profiles.ok()) return 0;
  const std::string written = write_ini(*profiles, config_file);
  const auto again = internal::parse_profiles(written, config_file);
  FUZZ_CHECK(again.ok(), "the profiles written again are refused: " + escaped(written) + ": " +
                             again.status().to_string());
  FUZZ_CHECK(*again == *profiles,
             "the profiles read back as " + show(*again) + ", not " + show(*profiles));
  for (const auto& [name, settings] : *profiles) {
    const auto secret = settings.find("aws_secret_access_key");
    if (secret == settings.end() || secret->second.empty()) continue;
    const auto keys = internal::static_keys(settings, name, "credentials");
    if (keys.ok()) continue;
    // The same settings with another secret: a secret found in the message
    // only with it there was quoted from it.
    internal::ProfileSettings other = settings;
    other["aws_secret_access_key"] = "\x01";
    const auto other_keys = internal::static_keys(other, name, "credentials");
    const std::string& message = keys.status().message();
    FUZZ_CHECK(message.find(secret->second) == std::string::npos ||
                   other_keys.status().message().find(secret->second) != std::string::npos,
               "an error quotes the secret: " + escaped(message));
  }
  return 0;
}
