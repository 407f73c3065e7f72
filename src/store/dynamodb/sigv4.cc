#include "store/dynamodb/sigv4.h"

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

namespace leasehold::store::dynamodb {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kTerminator = "aws4_request";
constexpr size_t kSha256Bytes = 32;
constexpr size_t kSha256BlockBytes = 64;

// Headers botocore never signs: proxies and SDK layers rewrite them.
constexpr std::array<std::string_view, 3> kUnsignedHeaders = {"expect", "user-agent",
                                                              "x-amzn-trace-id"};
// Headers the signer writes itself; a caller who sets them is confused.
constexpr std::array<std::string_view, 4> kReservedHeaders = {"authorization", "host", "x-amz-date",
                                                              "x-amz-security-token"};

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
Status validate_header(const std::string& name, const std::string& value) {
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
      kReservedHeaders.end()) {
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

Status validate(const HttpRequestToSign& request, const Credentials& credentials,
                std::string_view region, std::string_view service) {
  if (credentials.access_key_id.empty()) return invalid_argument("sigv4: no access key id");
  if (credentials.secret_access_key.empty()) return invalid_argument("sigv4: no secret key");
  if (region.empty()) return invalid_argument("sigv4: empty region");
  if (service.empty()) return invalid_argument("sigv4: empty service");
  if (request.host.empty()) return invalid_argument("sigv4: empty host");
  if (request.method.empty()) return invalid_argument("sigv4: empty method");
  LEASEHOLD_RETURN_IF_ERROR(validate_path(request.path));
  for (const auto& [name, value] : request.headers)
    LEASEHOLD_RETURN_IF_ERROR(validate_header(name, value));
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

CanonicalHeaders canonical_headers(const HttpRequestToSign& request, const std::string& amz_date,
                                   const std::string& session_token) {
  struct Line {
    std::string name;        // lowercase
    std::string_view value;  // as given: trimmed as it is written out
  };
  std::vector<Line> lines;
  lines.reserve(request.headers.size() + 3);
  for (const auto& [name, value] : request.headers) {
    std::string lower = to_lower(name);
    if (std::find(kUnsignedHeaders.begin(), kUnsignedHeaders.end(), lower) !=
        kUnsignedHeaders.end()) {
      continue;
    }
    lines.push_back({std::move(lower), value});
  }
  lines.push_back({"host", request.host});
  lines.push_back({"x-amz-date", amz_date});
  if (!session_token.empty()) lines.push_back({"x-amz-security-token", session_token});
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

Result<SigV4Result> sign_v4(const HttpRequestToSign& request, const Credentials& credentials,
                            std::string_view region, std::string_view service, WallTime now,
                            SigningKeyCache* cache) {
  LEASEHOLD_RETURN_IF_ERROR(validate(request, credentials, region, service));
  SigV4Result out;
  LEASEHOLD_ASSIGN_OR_RETURN(out.amz_date, format_amz_date(now));
  const std::string_view date = std::string_view(out.amz_date).substr(0, 8);
  const CanonicalHeaders headers =
      canonical_headers(request, out.amz_date, credentials.session_token);

  out.canonical_request = concat({to_upper(request.method), "\n", uri_encode(request.path, true),
                                  "\n", canonical_query(request.query_params), "\n", headers.block,
                                  "\n", headers.names, "\n", Sha256Hex(request.body).view()});
  const std::string scope = concat({date, "/", region, "/", service, "/", kTerminator});
  out.string_to_sign = concat(
      {kAlgorithm, "\n", out.amz_date, "\n", scope, "\n", Sha256Hex(out.canonical_request).view()});
  std::string mac;
  if (cache != nullptr) {
    mac = cache->sign(credentials.secret_access_key, date, region, service, out.string_to_sign);
  } else {
    std::string key = derive_signing_key(credentials.secret_access_key, date, region, service);
    mac = hmac_sha256(key, out.string_to_sign);
    wipe(key);
  }
  out.signature = to_hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  out.authorization = concat({kAlgorithm, " Credential=", credentials.access_key_id, "/", scope,
                              ", SignedHeaders=", headers.names, ", Signature=", out.signature});
  out.security_token = credentials.session_token;
  return out;
}

}  // namespace leasehold::store::dynamodb
