// S3's wire, without the client: bucket, key and region names, "s3://"
// URIs, XML (the text of S3's documents, and what goes into those sent),
// the error table, and Content-Range. See s3.h and s3_internal.h.
#include <algorithm>
#include <array>

#include "aws/credentials.h"
#include "aws/retries.h"
#include "aws/s3.h"
#include "aws/s3_internal.h"
#include "base/text.h"
#include "net/endpoint.h"

namespace leasehold::aws {

using s3_internal::is_throttled;
using s3_internal::is_transient;
using s3_internal::validate_bucket;
using s3_internal::validate_region;

namespace {

constexpr std::string_view kUriScheme = "s3://";
constexpr size_t kRegionBytesMax = 64;
// S3's own error messages are short; a longer one is cut here.
constexpr size_t kErrorMessageBytesMax = 300;

// ---------------------------------------------------------------- names

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool looks_like_ipv4(std::string_view s) {
  return std::count(s.begin(), s.end(), '.') == 3 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
}

// Keys and prefixes: no control character (they end up in URLs and logs),
// and no "." or ".." segment, which HTTP clients and browsers remove from a
// URL's path before they send it, so that a presigned URL would fetch
// another key.
Status validate_key_text(std::string_view what, std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f)
      return invalid_argument("s3: " + std::string(what) + " has a control character");
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('/', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view segment = text.substr(start, end - start);
    if (segment == "." || segment == "..") {
      return invalid_argument("s3: " + std::string(what) + " '" + std::string(text) +
                              "' has a '.' or '..' segment");
    }
    start = end + 1;
  }
  return Status::ok_status();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%XY" decoded; nullopt for a '%' without two hex digits after it.
std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]);
    const int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

Status s3_internal::validate_bucket(std::string_view bucket) {
  const std::string quoted = "s3: bucket name '" + std::string(bucket) + "' ";
  if (bucket.size() < 3 || bucket.size() > 63) {
    return invalid_argument(quoted + "must have 3 to 63 characters");
  }
  for (char c : bucket) {
    if (!is_lower_alnum(c) && c != '.' && c != '-') {
      return invalid_argument(quoted + "may hold only a-z, 0-9, '.' and '-'");
    }
  }
  if (!is_lower_alnum(bucket.front()) || !is_lower_alnum(bucket.back())) {
    return invalid_argument(quoted + "must start and end with a letter or a digit");
  }
  if (bucket.find("..") != std::string_view::npos) {
    return invalid_argument(quoted + "may not hold \"..\"");
  }
  if (looks_like_ipv4(bucket)) return invalid_argument(quoted + "may not be an IP address");
  if (bucket.starts_with("xn--") || bucket.starts_with("sthree-") || bucket.ends_with("-s3alias") ||
      bucket.ends_with("--ol-s3")) {
    return invalid_argument(quoted + "uses a prefix or suffix S3 reserves");
  }
  return Status::ok_status();
}

Status s3_internal::validate_region(std::string_view region) {
  if (region.empty() || region.size() > kRegionBytesMax ||
      !std::all_of(region.begin(), region.end(),
                   [](char c) { return is_lower_alnum(c) || c == '-'; })) {
    return invalid_argument("s3: region '" + std::string(region) +
                            "' must be 1 to 64 characters of a-z, 0-9 and '-'");
  }
  return Status::ok_status();
}

Status s3_internal::validate_key(std::string_view key) {
  if (key.empty()) return invalid_argument("s3: empty key");
  if (key.size() > kKeyBytesMax) {
    return invalid_argument("s3: key longer than " + std::to_string(kKeyBytesMax) + " bytes");
  }
  if (key.front() == '/') {
    return invalid_argument("s3: key '" + std::string(key) +
                            "' starts with '/'; keys are relative to the bucket");
  }
  return validate_key_text("key", key);
}

// ---------------------------------------------------------------- regions

std::string s3_internal::aws_endpoint(std::string_view bucket, std::string_view region) {
  const bool dotted = bucket.find('.') != std::string_view::npos;
  return "https://" + (dotted ? std::string() : std::string(bucket) + ".") + "s3." +
         std::string(region) + ".amazonaws.com";
}

bool s3_internal::is_region_refusal(int http_status, std::string_view body, bool names_region) {
  if (http_status == 301 || http_status == 302 || http_status == 307) return true;
  const std::string code = xml_element(body, "Code").value_or("");
  if (code == "PermanentRedirect" || code == "IllegalLocationConstraintException") return true;
  // AuthorizationHeaderMalformed says other things too (a bad date, say):
  // only one naming a region is about the region.
  if (code == "AuthorizationHeaderMalformed" && xml_element(body, "Region")) return true;
  return (http_status == 400 || http_status == 403) && names_region;
}

// ---------------------------------------------------------------- URIs

namespace {

struct UriParams {
  std::optional<std::string> endpoint;
  std::optional<std::string> region;
};

Result<UriParams> parse_uri_params(std::string_view query, std::string_view uri) {
  UriParams out;
  const auto bad = [&](std::string what) {
    return invalid_argument("s3 uri '" + std::string(uri) + "': " + what);
  };
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view part = query.substr(start, end - start);
    start = end + 1;
    if (part.empty()) return bad("empty parameter (a stray '?' or '&')");
    const size_t eq = part.find('=');
    const std::string_view name = part.substr(0, eq);
    if (eq == std::string_view::npos || eq + 1 == part.size()) {
      return bad("parameter '" + std::string(name) + "' needs a value");
    }
    std::optional<std::string> value = percent_decode(part.substr(eq + 1));
    if (!value) return bad("parameter '" + std::string(name) + "' has a bad %-escape");
    std::optional<std::string>* slot = name == "endpoint" ? &out.endpoint
                                       : name == "region" ? &out.region
                                                          : nullptr;
    if (slot == nullptr) {
      return bad("unknown parameter '" + std::string(name) + "' (known: endpoint, region)");
    }
    if (slot->has_value()) return bad("parameter '" + std::string(name) + "' given twice");
    *slot = std::move(value);
  }
  return out;
}

// "" or "a/b/" from the URI's path after the bucket.
Result<std::string> normalise_prefix(std::string_view raw) {
  while (!raw.empty() && raw.front() == '/') raw.remove_prefix(1);
  if (raw.empty()) return std::string();
  std::string prefix(raw);
  if (prefix.back() != '/') prefix += '/';
  if (prefix.size() >= kKeyBytesMax) return invalid_argument("s3: prefix is too long");
  LEASEHOLD_RETURN_IF_ERROR(validate_key_text("prefix", prefix));
  return prefix;
}

// The region of a URI that names none: the one the AWS SDKs would use
// (aws::resolve_region). None at all is refused, as the SDKs refuse to start
// without one, rather than guessed: a request signed for the wrong region is
// refused later, by S3, and less clearly.
Result<std::string> region_from_env(const EnvLookup& env, std::string_view uri) {
  Result<std::string> region = resolve_region(env);
  if (region.ok()) return region;
  const std::string quoted = "s3 uri '" + std::string(uri) + "'";
  if (region.status().code() != Code::kFailedPrecondition) {
    return region.status().with_context(quoted + ": its region");
  }
  const char* join = uri.find('?') == std::string_view::npos ? "?" : "&";
  return failed_precondition(quoted + " names no region: add '" + join +
                             "region=REGION' to it (eu-west-1, say), or set AWS_REGION (" +
                             region.status().message() + ")");
}

}  // namespace

Result<S3Location> parse_s3_uri(std::string_view uri, const EnvLookup& env) {
  const auto bad = [&](std::string what) {
    return invalid_argument("s3 uri '" + std::string(uri) + "': " + what);
  };
  if (!uri.starts_with(kUriScheme)) return bad("must start with s3://");
  if (uri.find('#') != std::string_view::npos) return bad("may not have a fragment ('#')");
  std::string_view rest = uri.substr(kUriScheme.size());
  std::string_view query;
  const size_t question = rest.find('?');
  const bool has_query = question != std::string_view::npos;
  if (has_query) {
    query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  const size_t slash = rest.find('/');
  S3Location out;
  out.bucket = std::string(rest.substr(0, slash));
  if (out.bucket.empty()) return bad("names no bucket (s3://BUCKET/PREFIX)");
  LEASEHOLD_RETURN_IF_ERROR(validate_bucket(out.bucket));
  if (slash != std::string_view::npos) {
    LEASEHOLD_ASSIGN_OR_RETURN(out.prefix, normalise_prefix(rest.substr(slash)));
  }
  UriParams params;
  if (has_query) {
    LEASEHOLD_ASSIGN_OR_RETURN(params, parse_uri_params(query, uri));
  }
  if (params.region) {
    out.region = *std::move(params.region);
  } else {
    LEASEHOLD_ASSIGN_OR_RETURN(out.region, region_from_env(env, uri));
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_region(out.region));
  // The URI's own endpoint, else the one an operator configured for S3, as
  // the AWS CLI and SDKs read it; neither: AWS itself.
  std::string endpoint_from = "endpoint";
  if (!params.endpoint) {
    params.endpoint = configured_endpoint(env, "S3");
    endpoint_from = "the configured endpoint (AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL)";
  }
  if (params.endpoint) {
    Result<net::HttpEndpoint> endpoint = net::parse_http_endpoint(*params.endpoint);
    if (!endpoint.ok()) return bad(endpoint_from + ": " + endpoint.status().message());
    out.endpoint = *std::move(params.endpoint);
    while (out.endpoint.ends_with('/')) out.endpoint.pop_back();
  }
  return out;
}

// ---------------------------------------------------------------- XML

std::string s3_internal::xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// Appends the UTF-8 encoding of `cp`; false for a code point XML forbids.
bool append_utf8(uint32_t cp, std::string& out) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return true;
}

// Decodes one reference at the start of `s` ("&amp;", "&#38;", "&#x26;")
// into `out` and returns its length; 0 if it is not one (then the '&' is
// kept as it is: S3 escapes properly, and a stray '&' is better shown than
// dropped).
size_t decode_reference(std::string_view s, std::string& out) {
  static constexpr std::array<std::pair<std::string_view, char>, 5> kNamed = {
      {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}}};
  for (const auto& [name, c] : kNamed) {
    if (s.starts_with(name)) {
      out += c;
      return name.size();
    }
  }
  const size_t semi = s.find(';');
  if (!s.starts_with("&#") || semi == std::string_view::npos || semi < 3 || semi > 10) return 0;
  const bool hex = s[2] == 'x';
  const std::string_view digits = s.substr(hex ? 3 : 2, semi - (hex ? 3 : 2));
  if (digits.empty()) return 0;
  uint32_t cp = 0;
  for (char c : digits) {
    const int v = hex ? hex_value(c) : (c >= '0' && c <= '9' ? c - '0' : -1);
    if (v < 0) return 0;
    cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
  }
  return append_utf8(cp, out) ? semi + 1 : 0;
}

}  // namespace

std::optional<std::string> xml_element(std::string_view xml, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  const size_t start = xml.find(open);
  if (start == std::string_view::npos) return std::nullopt;
  const size_t text_start = start + open.size();
  const size_t end = xml.find(close, text_start);
  if (end == std::string_view::npos) return std::nullopt;
  const std::string_view raw = xml.substr(text_start, end - text_start);
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size();) {
    if (raw[i] == '&') {
      const size_t used = decode_reference(raw.substr(i), out);
      if (used > 0) {
        i += used;
        continue;
      }
    }
    out += raw[i++];
  }
  return out;
}

// ---------------------------------------------------------------- errors

bool s3_internal::is_throttled(int http_status, std::string_view code) {
  return is_throttling_error(code) || http_status == 503;
}

bool s3_internal::is_transient(int http_status, std::string_view code) {
  return is_transient_error(http_status, code) || (http_status >= 500 && http_status != 501) ||
         code == "InternalError";
}

Status s3_error_status(int http_status, std::string_view body, std::string_view what,
                       std::string_view bucket, std::string_view request_id) {
  const std::string code = xml_element(body, "Code").value_or("");
  const std::string message =
      printable(xml_element(body, "Message").value_or(""), kErrorMessageBytesMax);
  // The ID AWS support asks for; a HEAD's answer carries it only in its header.
  const std::string id =
      printable(request_id.empty() ? xml_element(body, "RequestId").value_or("") : request_id,
                kErrorMessageBytesMax);
  const std::string answer = "HTTP " + std::to_string(http_status) +
                             (id.empty() ? std::string() : ", AWS request ID " + id) + ")";
  std::string text = std::string(what) + ": " +
                     (code.empty() ? "no error code" : printable(code, kErrorMessageBytesMax));
  if (!message.empty()) text += ": " + message;
  text += " (" + answer;
  // The client's one bucket gone is not an object missing: nothing the client
  // does can succeed until the bucket is made again, as when S3 is down.
  if (code == "NoSuchBucket") {
    return unavailable(std::string(what) + ": bucket '" + std::string(bucket) +
                       "' does not exist (NoSuchBucket, " + answer);
  }
  if (code == "NoSuchKey" || code == "NoSuchUpload" || (code.empty() && http_status == 404)) {
    return not_found(std::move(text));
  }
  if (credentials_refused(code)) return unauthenticated(text + "; S3 refused the credentials");
  if (code == "AccessDenied" || code == "AllAccessDisabled" ||
      (code.empty() && http_status == 403)) {
    return permission_denied(std::move(text));
  }
  if (code == "BucketAlreadyExists" || code == "BucketAlreadyOwnedByYou") {
    return already_exists(std::move(text));
  }
  if (code == "PreconditionFailed" || http_status == 412)
    return failed_precondition(std::move(text));
  if (is_throttled(http_status, code) || is_transient(http_status, code)) {
    return unavailable(std::move(text));
  }
  if (http_status >= 300 && http_status < 500) return invalid_argument(std::move(text));
  return internal_error(std::move(text));
}

bool s3_internal::is_error_document(std::string_view body) {
  const auto skip_space = [&] {
    while (!body.empty() && (body.front() == ' ' || body.front() == '\t' || body.front() == '\r' ||
                             body.front() == '\n')) {
      body.remove_prefix(1);
    }
  };
  skip_space();
  if (body.starts_with("<?xml")) {
    const size_t end = body.find("?>");
    if (end == std::string_view::npos) return false;
    body.remove_prefix(end + 2);
    skip_space();
  }
  if (!body.starts_with("<Error")) return false;
  body.remove_prefix(6);
  return !body.empty() && (body.front() == '>' || body.front() == ' ' || body.front() == '\t' ||
                           body.front() == '\r' || body.front() == '\n');
}

bool s3_internal::is_multipart_etag(std::string_view etag, size_t parts) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  const std::string suffix = "-" + std::to_string(parts);
  return parts > 0 && etag.size() > suffix.size() && etag.ends_with(suffix);
}

// ---------------------------------------------------------------- numbers and ranges

std::optional<uint64_t> s3_internal::parse_u64(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<s3_internal::ContentRange> s3_internal::parse_content_range(std::string_view value) {
  if (!value.starts_with("bytes ")) return std::nullopt;
  value.remove_prefix(6);
  const size_t dash = value.find('-');
  const size_t slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) {
    return std::nullopt;
  }
  const auto first = parse_u64(value.substr(0, dash));
  const auto last = parse_u64(value.substr(dash + 1, slash - dash - 1));
  const auto total = parse_u64(value.substr(slash + 1));
  if (!first || !last || !total || *first > *last || *last >= *total) return std::nullopt;
  return ContentRange{*first, *last, *total};
}

}  // namespace leasehold::aws
