#include "store/dynamodb/credentials.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace leasehold::store::dynamodb {
namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string env_or_empty(const EnvLookup& env, const std::string& name) {
  return env(name).value_or("");
}

Result<std::optional<Credentials>> from_env(const EnvLookup& env) {
  Credentials c;
  c.access_key_id = env_or_empty(env, "AWS_ACCESS_KEY_ID");
  c.secret_access_key = env_or_empty(env, "AWS_SECRET_ACCESS_KEY");
  c.session_token = env_or_empty(env, "AWS_SESSION_TOKEN");
  if (c.access_key_id.empty() && c.secret_access_key.empty()) return std::optional<Credentials>();
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return invalid_argument(
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together (one is missing)");
  }
  return std::optional<Credentials>(std::move(c));
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read only
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Result<Credentials> parse_shared_credentials(std::string_view text, std::string_view profile) {
  Credentials c;
  bool in_profile = false, seen_profile = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        return invalid_argument("malformed section header in credentials file");
      in_profile = trim(line.substr(1, line.size() - 2)) == profile;
      seen_profile = seen_profile || in_profile;
      continue;
    }
    if (!in_profile) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;  // the SDKs ignore such lines too
    const std::string_view key = trim(line.substr(0, eq));
    const std::string value(trim(line.substr(eq + 1)));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  if (!seen_profile) return not_found("no profile [" + std::string(profile) + "]");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return not_found("profile [" + std::string(profile) +
                     "] lacks aws_access_key_id or aws_secret_access_key");
  }
  return c;
}

Result<Credentials> load_credentials(const EnvLookup& env) {
  ASSIGN_OR_RETURN(std::optional<Credentials> from_environment, from_env(env));
  if (from_environment) return std::move(*from_environment);

  std::string path = env_or_empty(env, "AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty()) {
    const std::string home = env_or_empty(env, "HOME");
    if (!home.empty()) path = home + "/.aws/credentials";
  }
  std::string profile = env_or_empty(env, "AWS_PROFILE");
  if (profile.empty()) profile = "default";
  const std::string where = "no AWS credentials: AWS_ACCESS_KEY_ID is unset and ";
  if (path.empty()) return unavailable(where + "there is no HOME for ~/.aws/credentials");
  std::ifstream in(path, std::ios::binary);
  if (!in) return unavailable(where + "cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parse_shared_credentials(text.str(), profile);
  if (parsed.ok()) return parsed;
  if (parsed.status().code() == Code::kNotFound) {
    return unavailable(where + path + ": " + parsed.status().message());
  }
  return invalid_argument(path + ": " + parsed.status().message());
}

}  // namespace leasehold::store::dynamodb
