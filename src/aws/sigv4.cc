#include "aws/sigv4.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <optional>

namespace leasehold::aws {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kTerminator = "aws4_request";
constexpr std::string_view kS3Service = "s3";
constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
constexpr std::string_view kContentSha256Header = "x-amz-content-sha256";
constexpr size_t kSha256Bytes = 32;
constexpr size_t kSha256BlockBytes = 64;

// Headers botocore never signs: proxies and SDK layers rewrite them.
constexpr std::array<std::string_view, 3> kUnsignedHeaders = {"expect", "user-agent",
                                                              "x-amzn-trace-id"};
// Headers the signer writes itself; a caller who sets them is confused.
constexpr std::array<std::string_view, 4> kReservedHeaders = {"authorization", "host", "x-amz-date",
                                                              "x-amz-security-token"};
// The query parameters presign_v4() writes itself.
constexpr std::array<std::string_view, 7> kPresignParams = {
    "X-Amz-Algorithm", "X-Amz-Credential",    "X-Amz-Date",          "X-Amz-Expires",
    "X-Amz-Signature", "X-Amz-SignedHeaders", "X-Amz-Security-Token"};

// S3's rules (see sigv4.h) apply to this service name only.
bool is_s3(std::string_view service) { return service == kS3Service; }

bool is_upper_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string to_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// Writes 2 * n lowercase hex digits to `out`.
void write_hex(const unsigned char* bytes, size_t n, char* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
}

std::string to_hex(const unsigned char* bytes, size_t n) {
  std::string out(2 * n, '\0');
  write_hex(bytes, n, out.data());
  return out;
}

// The pieces joined, in one allocation.
std::string concat(std::initializer_list<std::string_view> pieces) {
  size_t size = 0;
  for (const std::string_view piece : pieces) size += piece.size();
  std::string out;
  out.reserve(size);
  for (const std::string_view piece : pieces) out.append(piece);
  return out;
}

// OpenSSL fails here only when it cannot allocate; there is no sane way on.
[[noreturn]] void openssl_failed(const char* what) {
  std::fprintf(stderr, "leasehold: OpenSSL %s failed\n", what);
  std::abort();
}

// SHA-256 and HMAC, fetched from OpenSSL's default provider once: an
// implicit fetch on every call (EVP_sha256(), HMAC()) costs more than hashing
// a request.
const EVP_MD* sha256_md() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (md == nullptr) openssl_failed("EVP_MD_fetch(SHA256)");
  return md;
}

EVP_MAC* hmac_mac() {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (mac == nullptr) openssl_failed("EVP_MAC_fetch(HMAC)");
  return mac;
}

// Raw 32-byte HMAC-SHA256 of `message` under `key`.
std::string hmac_sha256(std::string_view key, std::string_view message) {
  std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_new(hmac_mac()),
                                                                EVP_MAC_CTX_free);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                               OSSL_PARAM_construct_end()};
  std::string out(kSha256Bytes, '\0');
  size_t out_len = 0;
  if (ctx == nullptr ||
      EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                   params) != 1 ||
      EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1 ||
      EVP_MAC_final(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &out_len,
                    out.size()) != 1 ||
      out_len != kSha256Bytes) {
    openssl_failed("HMAC");
  }
  return out;
}

using MdCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

MdCtx new_md_ctx() {
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (ctx == nullptr) openssl_failed("EVP_MD_CTX_new");
  return ctx;
}

// Overwrites key material before the string's memory is released.
void wipe(std::string& s) {
  if (!s.empty()) OPENSSL_cleanse(s.data(), s.size());
  s.clear();
}

// Appends `n` as exactly `width` decimal digits. REQUIRES: 0 <= n < 10^width.
void append_digits(int n, int width, std::string& out) {
  out.resize(out.size() + static_cast<size_t>(width));
  for (size_t i = out.size(); width-- > 0; n /= 10) out[--i] = static_cast<char>('0' + n % 10);
}

// "YYYYMMDDTHHMMSSZ" for `now` truncated to the second, in UTC.
Result<std::string> format_amz_date(WallTime now) {
  using namespace std::chrono;
  const auto secs = floor<seconds>(now);
  const auto day = floor<days>(secs);
  const year_month_day ymd(day);
  const hh_mm_ss hms(secs - day);
  const int y = static_cast<int>(ymd.year());
  if (y < 1970 || y > 9999) return invalid_argument("sigv4: signing time outside 1970..9999");
  std::string out;
  append_digits(y, 4, out);
  append_digits(static_cast<int>(static_cast<unsigned>(ymd.month())), 2, out);
  append_digits(static_cast<int>(static_cast<unsigned>(ymd.day())), 2, out);
  out += 'T';
  append_digits(static_cast<int>(hms.hours().count()), 2, out);
  append_digits(static_cast<int>(hms.minutes().count()), 2, out);
  append_digits(static_cast<int>(hms.seconds().count()), 2, out);
  out += 'Z';
  return out;
}

// A header name is an HTTP token: visible ASCII without separators we care
// about. A value is visible ASCII, space or tab (no CR/LF: no injection).
Status validate_header(const std::string& name, const std::string& value, bool s3) {
  if (name.empty()) return invalid_argument("sigv4: empty header name");
  for (unsigned char c : name) {
    if (c <= 0x20 || c >= 0x7f || c == ':') {
      return invalid_argument("sigv4: bad character in header name '" + name + "'");
    }
  }
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c >= 0x7f) {
      return invalid_argument("sigv4: header '" + name + "' has a non-printable or non-ASCII byte");
    }
  }
  const std::string lower = to_lower(name);
  if (std::find(kReservedHeaders.begin(), kReservedHeaders.end(), lower) !=
          kReservedHeaders.end() ||
      (s3 && lower == kContentSha256Header)) {
    return invalid_argument("sigv4: header '" + name + "' is set by the signer");
  }
  return Status::ok_status();
}

Status validate_path(std::string_view path) {
  if (path.empty() || path.front() != '/') return invalid_argument("sigv4: path must start with /");
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view segment = path.substr(start, end - start);
    const bool last = end == path.size();
    if (segment == "." || segment == ".." || (segment.empty() && !last)) {
      return invalid_argument("sigv4: path is not normalised (empty, '.' or '..' segment)");
    }
    start = end + 1;
  }
  return Status::ok_status();
}

// S3 signs the path as it is sent, so it must already be in SigV4's encoding:
// nothing but unreserved bytes, "/" and "%XY" with uppercase hex digits. Any
// other spelling of the same path would be signed as something S3 does not
// compute. S3 does not normalise keys, so "//", "." and ".." may appear.
Status validate_s3_path(std::string_view path) {
  if (path.empty() || path.front() != '/') return invalid_argument("sigv4: path must start with /");
  for (size_t i = 0; i < path.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (is_unreserved(c) || c == '/') continue;
    if (c == '%' && i + 2 < path.size() && is_upper_hex(path[i + 1]) && is_upper_hex(path[i + 2])) {
      i += 2;
      continue;
    }
    return invalid_argument(
        "sigv4: an S3 path must be percent-encoded as uri_encode() does (unreserved "
        "characters, '/' and %XY with uppercase hex only)");
  }
  return Status::ok_status();
}

Status validate_payload_hash(std::string_view hash, bool s3) {
  if (hash.empty()) return Status::ok_status();
  if (hash == kUnsignedPayload) {
    if (s3) return Status::ok_status();
    return invalid_argument("sigv4: UNSIGNED-PAYLOAD is for S3 only");
  }
  const bool hex =
      hash.size() == 2 * kSha256Bytes && std::all_of(hash.begin(), hash.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      });
  if (!hex) return invalid_argument("sigv4: payload hash is not 64 lowercase hex digits");
  return Status::ok_status();
}

Status validate(const HttpRequestToSign& request, const Credentials& credentials,
                std::string_view region, std::string_view service) {
  if (credentials.access_key_id.empty()) return invalid_argument("sigv4: no access key id");
  if (credentials.secret_access_key.empty()) return invalid_argument("sigv4: no secret key");
  if (region.empty()) return invalid_argument("sigv4: empty region");
  if (service.empty()) return invalid_argument("sigv4: empty service");
  if (request.host.empty()) return invalid_argument("sigv4: empty host");
  if (request.method.empty()) return invalid_argument("sigv4: empty method");
  const bool s3 = is_s3(service);
  LEASEHOLD_RETURN_IF_ERROR(s3 ? validate_s3_path(request.path) : validate_path(request.path));
  LEASEHOLD_RETURN_IF_ERROR(validate_payload_hash(request.payload_hash, s3));
  for (const auto& [name, value] : request.headers)
    LEASEHOLD_RETURN_IF_ERROR(validate_header(name, value, s3));
  for (unsigned char c : request.host) {
    if (c <= 0x20 || c >= 0x7f) return invalid_argument("sigv4: bad character in host");
  }
  for (unsigned char c : credentials.session_token) {
    if (c < 0x20 || c >= 0x7f) return invalid_argument("sigv4: session token is not printable");
  }
  return Status::ok_status();
}

std::string canonical_query(const HeaderList& params) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(params.size());
  for (const auto& [k, v] : params)
    encoded.emplace_back(uri_encode(k, false), uri_encode(v, false));
  // Sorted by encoded name, then by encoded value: pairs, not "k=v" strings,
  // since '=' sorts after '-' and '.'.
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out += '&';
    out += k + '=' + v;
  }
  return out;
}

struct CanonicalHeaders {
  std::string block;  // "name:value\n" for each header, sorted
  std::string names;  // "name;name;...", the SignedHeaders value
};

// Appends trim_all(value) to `out`.
void append_trimmed(std::string_view value, std::string& out) {
  bool first = true;
  size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && is_space(value[i])) ++i;
    if (i == value.size()) break;
    if (!first) out += ' ';
    first = false;
    const size_t start = i;
    while (i < value.size() && !is_space(value[i])) ++i;
    out.append(value.substr(start, i - start));
  }
}

// A header the signer adds: a lowercase name, and a value that, when empty,
// means the header is not sent (a session token of long-term credentials).
struct SignerHeader {
  std::string_view name;
  std::string_view value;
};

CanonicalHeaders canonical_headers(const HeaderList& headers,
                                   std::initializer_list<SignerHeader> added) {
  struct Line {
    std::string name;        // lowercase
    std::string_view value;  // as given: trimmed as it is written out
  };
  std::vector<Line> lines;
  lines.reserve(headers.size() + added.size());
  for (const auto& [name, value] : headers) {
    std::string lower = to_lower(name);
    if (std::find(kUnsignedHeaders.begin(), kUnsignedHeaders.end(), lower) !=
        kUnsignedHeaders.end()) {
      continue;
    }
    lines.push_back({std::move(lower), value});
  }
  for (const SignerHeader& header : added) {
    if (!header.value.empty()) lines.push_back({std::string(header.name), header.value});
  }
  // Stable by name only: repeated headers keep their order and join with ",".
  // An insertion sort, which needs no buffer: a request has a few headers.
  for (size_t i = 1; i < lines.size(); ++i) {
    for (size_t j = i; j > 0 && lines[j].name < lines[j - 1].name; --j) {
      std::swap(lines[j], lines[j - 1]);
    }
  }
  CanonicalHeaders out;
  size_t bytes = 0;
  for (const Line& line : lines) bytes += line.name.size() + line.value.size() + 2;
  out.block.reserve(bytes);
  out.names.reserve(bytes);
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool repeat = i > 0 && lines[i].name == lines[i - 1].name;
    if (repeat) {
      out.block.back() = ',';  // replace the previous line's '\n'
    } else {
      if (!out.names.empty()) out.names += ';';
      out.names += lines[i].name;
      out.block += lines[i].name;
      out.block += ':';
    }
    append_trimmed(lines[i].value, out.block);
    out.block += '\n';
  }
  return out;
}

// SHA-256 of some data as 64 hex digits, held without an allocation: the
// signer only copies it into the text it hashes next.
class Sha256Hex {
 public:
  explicit Sha256Hex(std::string_view data) {
    unsigned char md[kSha256Bytes];
    unsigned int md_len = 0;
    if (EVP_Digest(data.data(), data.size(), md, &md_len, sha256_md(), nullptr) != 1 ||
        md_len != kSha256Bytes) {
      openssl_failed("EVP_Digest");
    }
    write_hex(md, kSha256Bytes, text_);
  }
  std::string_view view() const { return {text_, sizeof text_}; }

 private:
  char text_[2 * kSha256Bytes];
};

// The signing key: the secret, through the date, region, service and
// terminator.
std::string derive_signing_key(const std::string& secret, std::string_view date,
                               std::string_view region, std::string_view service) {
  std::string key = "AWS4" + secret;
  std::string k_date = hmac_sha256(key, date);
  std::string k_region = hmac_sha256(k_date, region);
  std::string k_service = hmac_sha256(k_region, service);
  std::string k_signing = hmac_sha256(k_service, kTerminator);
  for (std::string* s : {&key, &k_date, &k_region, &k_service}) wipe(*s);
  return k_signing;
}

std::string canonical_path(const std::string& path, bool s3) {
  return s3 ? path : uri_encode(path, true);
}

std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request) {
  return concat(
      {kAlgorithm, "\n", amz_date, "\n", scope, "\n", Sha256Hex(canonical_request).view()});
}

}  // namespace

std::string sha256_hex(std::string_view data) { return std::string(Sha256Hex(data).view()); }

std::string uri_encode(std::string_view raw, bool keep_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(raw.size());
  for (unsigned char c : raw) {
    if (is_unreserved(c) || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
    }
  }
  return out;
}

std::string trim_all(std::string_view value) {
  std::string out;
  append_trimmed(value, out);
  return out;
}

// HMAC-SHA256 under one key (RFC 2104): H((K ^ opad) || H((K ^ ipad) || m)).
// The two pad blocks depend on the key alone, so they are hashed once, here;
// a signature copies those two states and hashes only the message and the
// inner digest. (An HMAC context made for every signature costs several
// times the hashing itself.)
class SigningKeyCache::Key {
 public:
  // REQUIRES: key.size() <= kSha256BlockBytes (a SigV4 key is 32 bytes).
  explicit Key(std::string_view key) : inner_(new_md_ctx()), outer_(new_md_ctx()) {
    assert(key.size() <= kSha256BlockBytes);
    unsigned char ipad[kSha256BlockBytes];
    unsigned char opad[kSha256BlockBytes];
    for (size_t i = 0; i < kSha256BlockBytes; ++i) {
      const unsigned char k = i < key.size() ? static_cast<unsigned char>(key[i]) : 0;
      ipad[i] = k ^ 0x36;
      opad[i] = k ^ 0x5c;
    }
    const bool ok = EVP_DigestInit_ex2(inner_.get(), sha256_md(), nullptr) == 1 &&
                    EVP_DigestUpdate(inner_.get(), ipad, sizeof ipad) == 1 &&
                    EVP_DigestInit_ex2(outer_.get(), sha256_md(), nullptr) == 1 &&
                    EVP_DigestUpdate(outer_.get(), opad, sizeof opad) == 1;
    OPENSSL_cleanse(ipad, sizeof ipad);
    OPENSSL_cleanse(opad, sizeof opad);
    if (!ok) openssl_failed("SHA-256");
  }

  // The raw 32-byte MAC of `message`. Freeing a context wipes it.
  std::string sign(std::string_view message) const {
    const MdCtx work = new_md_ctx();
    unsigned char inner[kSha256Bytes];
    unsigned int length = 0;
    std::string out(kSha256Bytes, '\0');
    if (EVP_MD_CTX_copy_ex(work.get(), inner_.get()) != 1 ||
        EVP_DigestUpdate(work.get(), message.data(), message.size()) != 1 ||
        EVP_DigestFinal_ex(work.get(), inner, &length) != 1 ||
        EVP_MD_CTX_copy_ex(work.get(), outer_.get()) != 1 ||
        EVP_DigestUpdate(work.get(), inner, sizeof inner) != 1 ||
        EVP_DigestFinal_ex(work.get(), reinterpret_cast<unsigned char*>(out.data()), &length) !=
            1) {
      openssl_failed("HMAC-SHA256");
    }
    return out;
  }

 private:
  const MdCtx inner_;  // after K ^ ipad
  const MdCtx outer_;  // after K ^ opad
};

SigningKeyCache::SigningKeyCache() = default;

SigningKeyCache::~SigningKeyCache() { wipe(secret_); }

std::string SigningKeyCache::sign(const std::string& secret, std::string_view date,
                                  std::string_view region, std::string_view service,
                                  std::string_view string_to_sign) {
  MutexLock lock(mu_);
  if (key_ == nullptr || secret_ != secret || date_ != date || region_ != region ||
      service_ != service) {
    std::string raw = derive_signing_key(secret, date, region, service);
    key_ = std::make_unique<const Key>(raw);
    wipe(raw);
    wipe(secret_);
    secret_ = secret;
    date_ = date;
    region_ = region;
    service_ = service;
    ++derivations_;
  }
  return key_->sign(string_to_sign);
}

uint64_t SigningKeyCache::derivations() const {
  MutexLock lock(mu_);
  return derivations_;
}

namespace {

// The signature of `string_to_sign`, as lowercase hex, through `cache` when
// there is one.
std::string signature_hex(const std::string& secret, std::string_view date, std::string_view region,
                          std::string_view service, std::string_view string_to_sign,
                          SigningKeyCache* cache) {
  std::string mac;
  if (cache != nullptr) {
    mac = cache->sign(secret, date, region, service, string_to_sign);
  } else {
    std::string key = derive_signing_key(secret, date, region, service);
    mac = hmac_sha256(key, string_to_sign);
    wipe(key);
  }
  return to_hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

}  // namespace

void add_signature_headers(SigV4Result& signature, HeaderList& headers) {
  headers.emplace_back("X-Amz-Date", std::move(signature.amz_date));
  headers.emplace_back("Authorization", std::move(signature.authorization));
  if (!signature.security_token.empty()) {
    headers.emplace_back("X-Amz-Security-Token", std::move(signature.security_token));
  }
}

Result<SigV4Result> sign_v4(const HttpRequestToSign& request, const Credentials& credentials,
                            std::string_view region, std::string_view service, WallTime now,
                            SigningKeyCache* cache) {
  LEASEHOLD_RETURN_IF_ERROR(validate(request, credentials, region, service));
  const bool s3 = is_s3(service);
  SigV4Result out;
  LEASEHOLD_ASSIGN_OR_RETURN(out.amz_date, format_amz_date(now));
  const std::string_view date = std::string_view(out.amz_date).substr(0, 8);
  const std::optional<Sha256Hex> body_hash = request.payload_hash.empty()
                                                 ? std::optional<Sha256Hex>(Sha256Hex(request.body))
                                                 : std::nullopt;
  const std::string_view payload_hash =
      body_hash ? body_hash->view() : std::string_view(request.payload_hash);
  if (s3) out.content_sha256 = std::string(payload_hash);
  const CanonicalHeaders headers =
      canonical_headers(request.headers, {{"host", request.host},
                                          {"x-amz-date", out.amz_date},
                                          {"x-amz-security-token", credentials.session_token},
                                          {kContentSha256Header, out.content_sha256}});

  out.canonical_request = concat({to_upper(request.method), "\n", canonical_path(request.path, s3),
                                  "\n", canonical_query(request.query_params), "\n", headers.block,
                                  "\n", headers.names, "\n", payload_hash});
  const std::string scope = concat({date, "/", region, "/", service, "/", kTerminator});
  out.string_to_sign = string_to_sign(out.amz_date, scope, out.canonical_request);
  out.signature = signature_hex(credentials.secret_access_key, date, region, service,
                                out.string_to_sign, cache);
  out.authorization = concat({kAlgorithm, " Credential=", credentials.access_key_id, "/", scope,
                              ", SignedHeaders=", headers.names, ", Signature=", out.signature});
  out.security_token = credentials.session_token;
  return out;
}

Result<PresignedQuery> presign_v4(const HttpRequestToSign& request, const Credentials& credentials,
                                  std::string_view region, std::string_view service, WallTime now,
                                  Duration expires, SigningKeyCache* cache) {
  using std::chrono::seconds;
  LEASEHOLD_RETURN_IF_ERROR(validate(request, credentials, region, service));
  if (!request.headers.empty()) {
    return invalid_argument("sigv4: a presigned request signs no header but Host");
  }
  if (!request.body.empty()) return invalid_argument("sigv4: a presigned request has no body");
  if (!request.payload_hash.empty() && request.payload_hash != kUnsignedPayload) {
    return invalid_argument("sigv4: a presigned request's payload is UNSIGNED-PAYLOAD");
  }
  const seconds expires_s = std::chrono::floor<seconds>(expires);
  if (expires_s < seconds(1) || expires_s > kPresignExpiresMax) {
    return invalid_argument("sigv4: a presigned URL must expire within 1 s to 7 days");
  }
  for (const auto& [name, value] : request.query_params) {
    if (std::find(kPresignParams.begin(), kPresignParams.end(), name) != kPresignParams.end()) {
      return invalid_argument("sigv4: query parameter '" + name + "' is set by the signer");
    }
  }
  PresignedQuery out;
  LEASEHOLD_ASSIGN_OR_RETURN(out.amz_date, format_amz_date(now));
  const std::string_view date = std::string_view(out.amz_date).substr(0, 8);
  const std::string scope = concat({date, "/", region, "/", service, "/", kTerminator});
  HeaderList params = request.query_params;
  params.emplace_back("X-Amz-Algorithm", kAlgorithm);
  params.emplace_back("X-Amz-Credential", concat({credentials.access_key_id, "/", scope}));
  params.emplace_back("X-Amz-Date", out.amz_date);
  params.emplace_back("X-Amz-Expires", std::to_string(expires_s.count()));
  if (!credentials.session_token.empty()) {
    params.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  params.emplace_back("X-Amz-SignedHeaders", "host");
  const std::string query = canonical_query(params);
  const CanonicalHeaders headers = canonical_headers(HeaderList{}, {{"host", request.host}});
  out.canonical_request =
      concat({to_upper(request.method), "\n", canonical_path(request.path, is_s3(service)), "\n",
              query, "\n", headers.block, "\n", headers.names, "\n", kUnsignedPayload});
  out.string_to_sign = string_to_sign(out.amz_date, scope, out.canonical_request);
  out.signature = signature_hex(credentials.secret_access_key, date, region, service,
                                out.string_to_sign, cache);
  out.query = concat({query, "&X-Amz-Signature=", out.signature});
  return out;
}

}  // namespace leasehold::aws
