// Tests of the SigV4 signer on its own: the examples AWS publishes, header
// canonicalisation edge cases, input validation, and that every input is
// covered by the signature. The checks against every case of AWS's SigV4
// test suite and against botocore (generated DynamoDB requests, the S3
// client's requests and presigned URLs) are in tests/aws/.
#include "aws/sigv4.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

namespace leasehold::aws {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kExampleSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

WallTime at(std::chrono::year_month_day day, int h, int m, int s) {
  return WallTime(std::chrono::sys_days(day) + std::chrono::hours(h) + std::chrono::minutes(m) +
                  std::chrono::seconds(s));
}

WallTime example_time() {
  using namespace std::chrono;
  return at(2015y / August / 30, 12, 36, 0);
}

Credentials example_credentials() { return {"AKIDEXAMPLE", kExampleSecret, ""}; }

// The request of AWS's "Signature Version 4" guide: IAM ListUsers over GET.
HttpRequestToSign list_users_request() {
  HttpRequestToSign r;
  r.method = "GET";
  r.host = "iam.amazonaws.com";
  r.path = "/";
  r.query_params = {{"Version", "2010-05-08"}, {"Action", "ListUsers"}};
  r.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  return r;
}

TEST(SigV4Test, MatchesAwsDocumentedListUsersExample) {
  auto signed_request =
      sign_v4(list_users_request(), example_credentials(), "us-east-1", "iam", example_time());
  ASSERT_TRUE(signed_request.ok()) << signed_request.status().to_string();
  EXPECT_EQ(signed_request->canonical_request,
            "GET\n"
            "/\n"
            "Action=ListUsers&Version=2010-05-08\n"
            "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
            "host:iam.amazonaws.com\n"
            "x-amz-date:20150830T123600Z\n"
            "\n"
            "content-type;host;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(signed_request->canonical_request),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
  EXPECT_EQ(signed_request->string_to_sign,
            "AWS4-HMAC-SHA256\n"
            "20150830T123600Z\n"
            "20150830/us-east-1/iam/aws4_request\n"
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
  EXPECT_EQ(signed_request->signature,
            "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
  EXPECT_EQ(signed_request->amz_date, "20150830T123600Z");
  EXPECT_EQ(signed_request->authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-date, "
            "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
  EXPECT_EQ(signed_request->security_token, "");
}

// "get-vanilla-query-order-key-case" from AWS's SigV4 test suite.
TEST(SigV4Test, MatchesAwsTestSuiteQueryOrderCase) {
  HttpRequestToSign r;
  r.method = "GET";
  r.host = "example.amazonaws.com";
  r.query_params = {{"Param2", "value2"}, {"Param1", "value1"}};
  auto signed_request = sign_v4(r, example_credentials(), "us-east-1", "service", example_time());
  ASSERT_TRUE(signed_request.ok());
  EXPECT_EQ(signed_request->authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST(SigV4Test, Sha256OfKnownStrings) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(SigV4Test, TrimAllCollapsesWhitespace) {
  EXPECT_EQ(trim_all(""), "");
  EXPECT_EQ(trim_all("   "), "");
  EXPECT_EQ(trim_all("a"), "a");
  EXPECT_EQ(trim_all("  a   b\t\tc  "), "a b c");
  EXPECT_EQ(trim_all("\"a   b\""), "\"a b\"");  // quoted values are collapsed too
}

TEST(SigV4Test, UriEncodeKeepsOnlyUnreserved) {
  EXPECT_EQ(uri_encode("AZaz09-._~", false), "AZaz09-._~");
  EXPECT_EQ(uri_encode("a b+c=d/e", false), "a%20b%2Bc%3Dd%2Fe");
  EXPECT_EQ(uri_encode("/a b/", true), "/a%20b/");
  EXPECT_EQ(uri_encode("\xc3\xa9", false), "%C3%A9");  // UTF-8 bytes, uppercase hex
  EXPECT_EQ(uri_encode("%", true), "%25");             // the wire path is encoded again
}

Result<SigV4Result> sign_headers(HeaderList headers, std::string token = "") {
  HttpRequestToSign r;
  r.host = "dynamodb.us-east-1.amazonaws.com";
  r.headers = std::move(headers);
  return sign_v4(r, {"AKID", "secret", std::move(token)}, "us-east-1", "dynamodb", example_time());
}

std::string headers_block(const SigV4Result& s) {
  // Lines 4.. up to the blank line of the canonical request.
  size_t start = 0;
  for (int i = 0; i < 3; ++i) start = s.canonical_request.find('\n', start) + 1;
  return s.canonical_request.substr(start, s.canonical_request.find("\n\n", start) + 1 - start);
}

TEST(SigV4Test, CanonicalHeadersAreLowercasedTrimmedAndSorted) {
  auto s = sign_headers({{"X-Amz-Target", "  DynamoDB_20120810.GetItem "},
                         {"Content-Type", "application/x-amz-json-1.0"},
                         {"X-Custom", "a   b \t c"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(headers_block(*s),
            "content-type:application/x-amz-json-1.0\n"
            "host:dynamodb.us-east-1.amazonaws.com\n"
            "x-amz-date:20150830T123600Z\n"
            "x-amz-target:DynamoDB_20120810.GetItem\n"
            "x-custom:a b c\n");
  EXPECT_THAT(s->authorization,
              HasSubstr("SignedHeaders=content-type;host;x-amz-date;x-amz-target;x-custom,"));
}

TEST(SigV4Test, RepeatedHeadersJoinInOrderWithComma) {
  auto s = sign_headers({{"X-B", "2"}, {"x-a", "z"}, {"X-A", " y "}, {"x-a", "x"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(headers_block(*s),
            "host:dynamodb.us-east-1.amazonaws.com\n"
            "x-a:z,y,x\n"
            "x-amz-date:20150830T123600Z\n"
            "x-b:2\n");
  EXPECT_THAT(s->authorization, HasSubstr("SignedHeaders=host;x-a;x-amz-date;x-b,"));
}

TEST(SigV4Test, UserAgentAndFriendsAreNotSigned) {
  auto s = sign_headers(
      {{"User-Agent", "leasehold"}, {"Expect", "100-continue"}, {"X-Amzn-Trace-Id", "Root=1"}});
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->authorization, HasSubstr("SignedHeaders=host;x-amz-date,"));
  EXPECT_THAT(s->canonical_request, Not(HasSubstr("leasehold")));
}

TEST(SigV4Test, SessionTokenIsSignedAndReturned) {
  auto s = sign_headers({}, "token/with+chars=");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->security_token, "token/with+chars=");
  EXPECT_THAT(s->authorization, HasSubstr("SignedHeaders=host;x-amz-date;x-amz-security-token,"));
  EXPECT_THAT(headers_block(*s), HasSubstr("x-amz-security-token:token/with+chars=\n"));
}

TEST(SigV4Test, QueryIsSortedByEncodedNameThenValue) {
  HttpRequestToSign r;
  r.host = "h";
  // '-' (0x2D) sorts before '=' (0x3D): pairs, not "k=v" strings, are sorted.
  r.query_params = {{"a", "2"}, {"a-b", "1"}, {"a", "1"}, {"b c", "\xc3\xa9"}, {"", "e"}};
  auto s = sign_v4(r, {"AKID", "secret", ""}, "r", "s", example_time());
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->canonical_request, HasSubstr("\n=e&a=1&a=2&a-b=1&b%20c=%C3%A9\n"));
}

TEST(SigV4Test, MethodIsUppercasedAndTimeTruncatedToTheSecond) {
  HttpRequestToSign r = list_users_request();
  r.method = "get";
  auto s = sign_v4(r, example_credentials(), "us-east-1", "iam",
                   example_time() + std::chrono::milliseconds(999));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->signature, "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

TEST(SigV4Test, RefusesBadInputWithoutLeakingSecrets) {
  const Credentials creds{"AKID", "TOPSECRETKEY", "TOPSECRETTOKEN"};
  const auto fails = [&](const std::function<void(HttpRequestToSign&, Credentials&)>& mutate) {
    HttpRequestToSign r = list_users_request();
    Credentials c = creds;
    mutate(r, c);
    auto s = sign_v4(r, c, "us-east-1", "iam", example_time());
    if (s.ok()) return std::string("signed");
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(s.status().message(), Not(HasSubstr("TOPSECRET")));
    return s.status().message();
  };
  EXPECT_THAT(fails([](auto&, auto& c) { c.access_key_id.clear(); }), HasSubstr("access key"));
  EXPECT_THAT(fails([](auto&, auto& c) { c.secret_access_key.clear(); }), HasSubstr("secret"));
  EXPECT_THAT(fails([](auto&, auto& c) { c.session_token = "TOPSECRETTOKEN\n"; }),
              HasSubstr("session token"));
  EXPECT_THAT(fails([](auto& r, auto&) {
                r.headers.push_back({"Host", "x"});
              }),
              HasSubstr("set by the signer"));
  EXPECT_THAT(fails([](auto& r, auto&) {
                r.headers.push_back({"x-amz-date", "x"});
              }),
              HasSubstr("set by the signer"));
  EXPECT_THAT(fails([](auto& r, auto&) {
                r.headers.push_back({"X-A", "a\r\nB: c"});
              }),
              HasSubstr("non-printable"));
  EXPECT_THAT(fails([](auto& r, auto&) {
                r.headers.push_back({"X A", "v"});
              }),
              HasSubstr("header name"));
  EXPECT_THAT(fails([](auto& r, auto&) { r.host.clear(); }), HasSubstr("host"));
  for (const char* path : {"", "a", "//", "/a//b", "/./a", "/a/..", "/a/../b"}) {
    EXPECT_THAT(fails([&](auto& r, auto&) { r.path = path; }), HasSubstr("path")) << path;
  }
  for (const char* path : {"/", "/a", "/a/", "/a/b.c/..d"}) {
    EXPECT_EQ(fails([&](auto& r, auto&) { r.path = path; }), "signed") << path;
  }
}

TEST(SigV4Test, RefusesTimesOutsideTheFourDigitYears) {
  using namespace std::chrono;
  const auto sign_at = [](WallTime t) {
    return sign_v4(list_users_request(), example_credentials(), "us-east-1", "iam", t);
  };
  EXPECT_FALSE(sign_at(WallTime(seconds(-1))).ok());
  EXPECT_EQ(sign_at(WallTime(seconds(0)))->amz_date, "19700101T000000Z");
  EXPECT_EQ(sign_at(at(2024y / February / 29, 23, 59, 59))->amz_date, "20240229T235959Z");
}

TEST(SigV4Test, EveryInputChangesTheSignature) {
  using Mutation =
      std::function<void(HttpRequestToSign&, Credentials&, std::string&, std::string&, WallTime&)>;
  const std::vector<std::pair<std::string, Mutation>> mutations = {
      {"method", [](auto& r, auto&, auto&, auto&, auto&) { r.method = "POST"; }},
      {"host", [](auto& r, auto&, auto&, auto&, auto&) { r.host += ":8000"; }},
      {"path", [](auto& r, auto&, auto&, auto&, auto&) { r.path = "/x"; }},
      {"query name", [](auto& r, auto&, auto&, auto&, auto&) { r.query_params[0].first = "V"; }},
      {"query value", [](auto& r, auto&, auto&, auto&, auto&) { r.query_params[0].second += "1"; }},
      {"header value", [](auto& r, auto&, auto&, auto&, auto&) { r.headers[0].second += "1"; }},
      {"extra header",
       [](auto& r, auto&, auto&, auto&, auto&) {
         r.headers.push_back({"a", ""});
       }},
      {"body", [](auto& r, auto&, auto&, auto&, auto&) { r.body = "{}"; }},
      {"access key", [](auto&, auto& c, auto&, auto&, auto&) { c.access_key_id = "AKID2"; }},
      {"secret", [](auto&, auto& c, auto&, auto&, auto&) { c.secret_access_key += "x"; }},
      {"token", [](auto&, auto& c, auto&, auto&, auto&) { c.session_token = "t"; }},
      {"region", [](auto&, auto&, auto& region, auto&, auto&) { region = "eu-west-1"; }},
      {"service", [](auto&, auto&, auto&, auto& service, auto&) { service = "dynamodb"; }},
      {"time", [](auto&, auto&, auto&, auto&, auto& t) { t += std::chrono::seconds(1); }},
  };
  const SigV4Result base =
      *sign_v4(list_users_request(), example_credentials(), "us-east-1", "iam", example_time());
  for (const auto& [name, mutate] : mutations) {
    HttpRequestToSign r = list_users_request();
    Credentials c = example_credentials();
    std::string region = "us-east-1", service = "iam";
    WallTime t = example_time();
    mutate(r, c, region, service, t);
    auto s = sign_v4(r, c, region, service, t);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().to_string();
    // The access key id is not an input of the HMAC; it reaches the
    // Authorization header through the credential scope only.
    if (name != "access key") {
      EXPECT_NE(s->signature, base.signature) << name;
    }
    EXPECT_NE(s->authorization, base.authorization) << name;
  }
}

// The cache changes nothing but the work: every request signs the same with
// and without it, and the key is derived again exactly when the secret, the
// day, the region or the service changes.
TEST(SigV4Test, SigningKeyCacheSignsTheSameAndDerivesOncePerScope) {
  SigningKeyCache cache;
  struct Step {
    Credentials credentials;
    std::string region, service;
    WallTime time;
    bool derives;
  };
  const Credentials c = example_credentials();
  Credentials other_secret = c;
  other_secret.secret_access_key += "x";
  const WallTime t = example_time();
  const std::vector<Step> steps = {
      {c, "us-east-1", "iam", t, true},
      {c, "us-east-1", "iam", t + std::chrono::hours(1), false},  // same day
      {c, "us-east-1", "iam", t + std::chrono::hours(24), true},  // next day
      {c, "eu-west-1", "iam", t + std::chrono::hours(24), true},
      {c, "eu-west-1", "dynamodb", t + std::chrono::hours(24), true},
      {other_secret, "eu-west-1", "dynamodb", t + std::chrono::hours(24), true},
      {other_secret, "eu-west-1", "dynamodb", t + std::chrono::hours(25), false},
  };
  uint64_t derivations = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    auto plain =
        sign_v4(list_users_request(), step.credentials, step.region, step.service, step.time);
    auto cached = sign_v4(list_users_request(), step.credentials, step.region, step.service,
                          step.time, &cache);
    ASSERT_TRUE(plain.ok() && cached.ok()) << i;
    EXPECT_EQ(cached->authorization, plain->authorization) << i;
    if (step.derives) ++derivations;
    EXPECT_EQ(cache.derivations(), derivations) << i;
  }
}

}  // namespace
}  // namespace leasehold::aws
