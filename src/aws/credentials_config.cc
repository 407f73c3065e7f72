// The shared config and credentials files, as botocore reads them
// (botocore/configloader.py: raw_config_parse and build_profile_map; the
// merge of the two files in botocore/session.py, Session.full_config), and
// the region.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aws/credentials_internal.h"

namespace leasehold::aws::credentials_internal {
namespace {

// The profile a section of a config file holds, or nullopt for a section of
// another kind: "[default]" and "[profile NAME]" only, as build_profile_map.
std::optional<std::string> config_profile_name(std::string_view section) {
  if (section == "default") return std::string(section);
  if (!section.starts_with("profile")) return std::nullopt;
  const std::string_view rest = section.substr(7);
  if (rest.empty() || (rest.front() != ' ' && rest.front() != '\t')) return std::nullopt;
  const std::string_view name = trim_blanks(rest);
  if (name.empty() || name.find_first_of(" \t") != std::string_view::npos) return std::nullopt;
  return std::string(name);
}

// The text of `path`, or nullopt when it does not exist (a missing file is
// an empty one, as in botocore); kInvalidArgument when it exists but cannot
// be read.
Result<std::optional<std::string>> read_optional_file(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return std::optional<std::string>();
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return std::optional<std::string>(text.str());
}

}  // namespace

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim_blanks(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

bool env_true(const EnvLookup& env, const char* name) {
  return ascii_lower(env(name).value_or("")) == "true";
}

Result<std::map<std::string, ProfileSettings>> parse_profiles(std::string_view text,
                                                              bool config_file) {
  std::map<std::string, ProfileSettings> out;
  ProfileSettings* section = nullptr;  // null: outside any profile
  bool in_any_section = false;
  bool in_subsection = false;  // indented lines under "key =" belong to it
  int line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t nl = text.find('\n');
    const std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::string_view line = trim_blanks(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    const bool indented = raw.front() == ' ' || raw.front() == '\t';
    if (indented && in_subsection) continue;
    const std::string where = "line " + std::to_string(line_number);
    if (line.front() == '[') {
      if (line.back() != ']') return invalid_argument(where + ": a section header lacks ']'");
      const std::string_view name = trim_blanks(line.substr(1, line.size() - 2));
      in_any_section = true;
      in_subsection = false;
      const std::optional<std::string> profile =
          config_file ? config_profile_name(name) : std::optional<std::string>(name);
      section = profile ? &out[*profile] : nullptr;
      continue;
    }
    const size_t eq = line.find_first_of("=:");
    if (eq == std::string_view::npos || eq == 0) {
      return invalid_argument(where + " is neither a section, a setting nor a comment");
    }
    if (!in_any_section) return invalid_argument(where + ": a setting before any [section]");
    const std::string_view value = trim_blanks(line.substr(eq + 1));
    in_subsection = value.empty();
    if (section != nullptr)
      (*section)[ascii_lower(trim_blanks(line.substr(0, eq)))] = std::string(value);
  }
  return out;
}

const ProfileSettings* SharedConfig::find(const std::string& name) const {
  const auto it = profiles.find(name);
  return it == profiles.end() ? nullptr : &it->second;
}

Result<SharedConfig> load_shared_config(const EnvLookup& env) {
  SharedConfig out;
  out.profile = env("AWS_PROFILE").value_or("");
  if (out.profile.empty()) out.profile = "default";
  const std::string home = env("HOME").value_or("");
  out.config_path = env("AWS_CONFIG_FILE").value_or("");
  if (out.config_path.empty() && !home.empty()) out.config_path = home + "/.aws/config";
  out.credentials_path = env("AWS_SHARED_CREDENTIALS_FILE").value_or("");
  if (out.credentials_path.empty() && !home.empty()) {
    out.credentials_path = home + "/.aws/credentials";
  }
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> config_text,
                             read_optional_file(out.config_path));
  if (config_text) {
    auto parsed = parse_profiles(*config_text, /*config_file=*/true);
    if (!parsed.ok()) return invalid_argument(out.config_path + ": " + parsed.status().message());
    out.config = std::move(*parsed);
  }
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> credentials_text,
                             read_optional_file(out.credentials_path));
  if (credentials_text) {
    auto parsed = parse_profiles(*credentials_text, /*config_file=*/false);
    if (!parsed.ok()) {
      return invalid_argument(out.credentials_path + ": " + parsed.status().message());
    }
    out.credentials = std::move(*parsed);
  }
  out.profiles = out.config;
  for (const auto& [name, settings] : out.credentials) {
    for (const auto& [key, value] : settings) out.profiles[name][key] = value;
  }
  return out;
}

Result<std::optional<Credentials>> static_keys(const ProfileSettings& profile,
                                               std::string_view profile_name,
                                               std::string_view where) {
  const auto value = [&](const char* key) -> std::string {
    const auto it = profile.find(key);
    return it == profile.end() ? std::string() : it->second;
  };
  Credentials c{value("aws_access_key_id"), value("aws_secret_access_key"),
                value("aws_session_token")};
  if (c.session_token.empty()) c.session_token = value("aws_security_token");
  if (!profile.contains("aws_access_key_id")) return std::optional<Credentials>();
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return invalid_argument(std::string(where) + ": profile [" + std::string(profile_name) +
                            "] has aws_access_key_id without aws_secret_access_key");
  }
  return std::optional<Credentials>(std::move(c));
}

}  // namespace leasehold::aws::credentials_internal

namespace leasehold::aws {

Result<std::string> resolve_region(const EnvLookup& env) {
  std::string region;
  std::string from;
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    region = env(name).value_or("");
    from = name;
    if (!region.empty()) break;
  }
  if (region.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(const credentials_internal::SharedConfig config,
                               credentials_internal::load_shared_config(env));
    const credentials_internal::ProfileSettings* profile = config.find(config.profile);
    if (profile != nullptr && profile->contains("region")) region = profile->at("region");
    from = "the region of profile [" + config.profile + "] in " +
           (config.config_path.empty() ? std::string("the config file") : config.config_path);
    if (region.empty()) {
      return failed_precondition(
          "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or `region` in profile [" +
          config.profile + "] of " +
          (config.config_path.empty() ? std::string("~/.aws/config") : config.config_path));
    }
  }
  const bool valid = region.size() <= 64 && std::all_of(region.begin(), region.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                     });
  if (!valid) return invalid_argument(from + " is not a region name (like eu-west-1)");
  return region;
}

std::optional<std::string> configured_endpoint(const EnvLookup& env, std::string_view service) {
  if (credentials_internal::env_true(env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"))
    return std::nullopt;
  for (const std::string& name :
       {"AWS_ENDPOINT_URL_" + std::string(service), std::string("AWS_ENDPOINT_URL")}) {
    std::optional<std::string> url = env(name);
    if (url && !url->empty()) return url;
  }
  return std::nullopt;
}

}  // namespace leasehold::aws
