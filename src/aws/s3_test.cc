// Tests of the S3 pieces that need no server: "s3://" URIs, SigV4 as S3
// wants it (checked against the examples in AWS's S3 documentation), the
// error table, the XML reading and the client's option checks. The client
// against a server is tested in tests/aws/s3_client_test.cc.
#include "aws/s3.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "aws/s3_internal.h"
#include "aws/sigv4.h"
#include "testing/temp_dir.h"

namespace leasehold::aws {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------- URIs

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// An environment that names a region, for the tests of the URI's other parts.
EnvLookup region_env() { return env_of({{"AWS_REGION", "eu-west-1"}}); }

TEST(S3UriTest, ParsesBucketPrefixEndpointAndRegion) {
  auto l = parse_s3_uri(
      "s3://media-bucket/movies/2024?endpoint=http://127.0.0.1:4566&region=eu-west-1", env_of({}));
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->bucket, "media-bucket");
  EXPECT_EQ(l->prefix, "movies/2024/");
  EXPECT_EQ(l->endpoint, "http://127.0.0.1:4566");
  EXPECT_EQ(l->region, "eu-west-1");
}

TEST(S3UriTest, NormalisesThePrefix) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"s3://abc", ""},
      {"s3://abc/", ""},
      {"s3://abc//", ""},
      {"s3://abc/a", "a/"},
      {"s3://abc/a/", "a/"},
      {"s3://abc//a/b", "a/b/"},
      {"s3://abc/a b+c", "a b+c/"},
  };
  for (const auto& [uri, prefix] : cases) {
    auto l = parse_s3_uri(uri, region_env());
    ASSERT_TRUE(l.ok()) << uri << ": " << l.status().to_string();
    EXPECT_EQ(l->prefix, prefix) << uri;
    EXPECT_EQ(l->endpoint, "") << uri;
  }
}

TEST(S3UriTest, RegionComesFromTheUriThenAsTheSdksResolveIt) {
  EXPECT_EQ(parse_s3_uri("s3://abc", env_of({{"AWS_DEFAULT_REGION", "eu-north-1"}}))->region,
            "eu-north-1");
  EXPECT_EQ(parse_s3_uri("s3://abc", env_of({{"AWS_REGION", "ap-south-1"},
                                             {"AWS_DEFAULT_REGION", "eu-north-1"}}))
                ->region,
            "ap-south-1");
  EXPECT_EQ(
      parse_s3_uri("s3://abc?region=sa-east-1", env_of({{"AWS_REGION", "ap-south-1"}}))->region,
      "sa-east-1");
  const testing::TempDir dir("leasehold-s3-region-");
  std::ofstream(dir.file("config")) << "[default]\nregion = ca-central-1\n";
  EXPECT_EQ(parse_s3_uri("s3://abc/p", env_of({{"AWS_CONFIG_FILE", dir.file("config")}}))->region,
            "ca-central-1");
}

// No region anywhere is refused, saying how to name one, never guessed.
TEST(S3UriTest, NoRegionAnywhereIsRefusedSayingHowToNameOne) {
  const testing::TempDir dir("leasehold-s3-region-");
  for (const auto& [uri, add] : std::vector<std::pair<std::string, std::string>>{
           {"s3://abc/p", "'?region=REGION'"},
           {"s3://abc/p?endpoint=http://127.0.0.1:9000", "'&region=REGION'"}}) {
    for (const EnvLookup& env : {env_of({}), env_of({{"HOME", dir.path().string()}}),
                                 env_of({{"AWS_REGION", ""}, {"AWS_DEFAULT_REGION", ""}})}) {
      auto l = parse_s3_uri(uri, env);
      ASSERT_FALSE(l.ok()) << uri << " is in " << l->region;
      EXPECT_EQ(l.status().code(), Code::kFailedPrecondition) << l.status().to_string();
      EXPECT_THAT(l.status().message(), HasSubstr("names no region: add " + add));
      EXPECT_THAT(l.status().message(), HasSubstr("or set AWS_REGION"));
    }
  }
  std::ofstream(dir.file("config")) << "[default]\nregion = Bad!\n";
  auto bad = parse_s3_uri("s3://abc", env_of({{"AWS_CONFIG_FILE", dir.file("config")}}));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << bad.status().to_string();
}

TEST(S3UriTest, DecodesQueryValues) {
  auto l = parse_s3_uri("s3://abc/p?endpoint=http%3A%2F%2F127.0.0.1%3A9000%2F", region_env());
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->endpoint, "http://127.0.0.1:9000");
}

// The endpoint is the URI's, else the one configured for S3, else AWS's.
TEST(S3UriTest, EndpointComesFromTheUriThenTheConfiguredOne) {
  const auto endpoint_of = [](const std::string& uri,
                              std::map<std::string, std::string> vars) -> std::string {
    vars.emplace("AWS_REGION", "eu-west-1");
    auto l = parse_s3_uri(uri, env_of(std::move(vars)));
    EXPECT_TRUE(l.ok()) << uri << ": " << l.status().to_string();
    return l.ok() ? l->endpoint : "(refused)";
  };
  EXPECT_EQ(endpoint_of("s3://abc/p", {}), "");
  EXPECT_EQ(endpoint_of("s3://abc/p", {{"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/"}}),
            "http://127.0.0.1:9000");
  EXPECT_EQ(endpoint_of("s3://abc/p", {{"AWS_ENDPOINT_URL", "http://127.0.0.1:9001"}}),
            "http://127.0.0.1:9001");
  EXPECT_EQ(endpoint_of("s3://abc/p", {{"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000"},
                                       {"AWS_ENDPOINT_URL", "http://127.0.0.1:9001"}}),
            "http://127.0.0.1:9000");
  EXPECT_EQ(endpoint_of("s3://abc/p", {{"AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:9002"}}), "");
  EXPECT_EQ(endpoint_of("s3://abc/p?endpoint=http://127.0.0.1:4566",
                        {{"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000"}}),
            "http://127.0.0.1:4566")
      << "the URI's own endpoint wins";
  EXPECT_EQ(endpoint_of("s3://abc/p", {{"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000"},
                                       {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"}}),
            "");
  auto bad = parse_s3_uri("s3://abc/p", env_of({{"AWS_REGION", "eu-west-1"},
                                                {"AWS_ENDPOINT_URL_S3", "ftp://127.0.0.1:9000"}}));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("AWS_ENDPOINT_URL_S3"));
}

TEST(S3UriTest, RefusesBadUrisWithAClearMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"http://abc/p", "s3://"},
      {"s3://", "no bucket"},
      {"s3:///p", "no bucket"},
      {"s3://ab", "3 to 63"},
      {"s3://" + std::string(64, 'a'), "3 to 63"},
      {"s3://Abc", "a-z"},
      {"s3://ab_c", "a-z"},
      {"s3://-abc", "start and end"},
      {"s3://abc.", "start and end"},
      {"s3://a..bc", ".."},
      {"s3://192.168.1.10", "IP address"},
      {"s3://xn--abc", "reserves"},
      {"s3://abc/a/../b", "'.' or '..'"},
      {"s3://abc/./b", "'.' or '..'"},
      {"s3://abc/a\tb", "control character"},
      {"s3://abc/p#frag", "fragment"},
      {"s3://abc/p?bucket=x", "unknown parameter 'bucket'"},
      {"s3://abc/p?endpoint=http://127.0.0.1:1&endpoint=http://127.0.0.1:2", "twice"},
      {"s3://abc/p?region=", "needs a value"},
      {"s3://abc/p?region", "needs a value"},
      {"s3://abc/p?region=eu-west-1&", "empty parameter"},
      {"s3://abc/p?", "empty parameter"},
      {"s3://abc/p?region=EU_WEST", "region"},
      {"s3://abc/p?region=%zz", "%-escape"},
      {"s3://abc/p?endpoint=ftp://x", "endpoint"},
      {"s3://abc/p?endpoint=http://127.0.0.1:9000/path", "endpoint"},
  };
  for (const auto& [uri, words] : cases) {
    auto l = parse_s3_uri(uri, region_env());
    ASSERT_FALSE(l.ok()) << uri;
    EXPECT_EQ(l.status().code(), Code::kInvalidArgument) << uri;
    EXPECT_THAT(l.status().message(), HasSubstr(words)) << uri;
  }
}

// ---------------------------------------------------------------- SigV4 for S3

// The credentials of the examples in AWS's S3 documentation.
constexpr char kS3ExampleKeyId[] = "AKIAIOSFODNN7EXAMPLE";
constexpr char kS3ExampleSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

WallTime may_24_2013() {
  using namespace std::chrono;
  return WallTime(sys_days(2013y / May / 24));
}

// "Signature Calculations for the Authorization Header: Transferring Payload
// in a Single Chunk", Example: GET Object (the first 10 bytes of test.txt).
TEST(SigV4S3Test, MatchesAwsDocumentedGetObjectExample) {
  HttpRequestToSign r;
  r.method = "GET";
  r.host = "examplebucket.s3.amazonaws.com";
  r.path = "/test.txt";
  r.headers = {{"Range", "bytes=0-9"}};
  auto s = sign_v4(r, {kS3ExampleKeyId, kS3ExampleSecret, ""}, "us-east-1", "s3", may_24_2013());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(
      s->canonical_request,
      "GET\n"
      "/test.txt\n"
      "\n"
      "host:examplebucket.s3.amazonaws.com\n"
      "range:bytes=0-9\n"
      "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
      "x-amz-date:20130524T000000Z\n"
      "\n"
      "host;range;x-amz-content-sha256;x-amz-date\n"
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(s->string_to_sign,
            "AWS4-HMAC-SHA256\n"
            "20130524T000000Z\n"
            "20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(s->signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(s->content_sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_THAT(s->authorization,
              HasSubstr("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature="
                        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"));
}

// "Authenticating Requests: Using Query Parameters", the presigned URL
// example: GET examplebucket/test.txt for 86400 s.
TEST(SigV4S3Test, MatchesAwsDocumentedPresignedUrlExample) {
  HttpRequestToSign r;
  r.method = "GET";
  r.host = "examplebucket.s3.amazonaws.com";
  r.path = "/test.txt";
  auto p = presign_v4(r, {kS3ExampleKeyId, kS3ExampleSecret, ""}, "us-east-1", "s3", may_24_2013(),
                      std::chrono::seconds(86400));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->canonical_request,
            "GET\n"
            "/test.txt\n"
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%"
            "2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-"
            "Amz-SignedHeaders=host\n"
            "host:examplebucket.s3.amazonaws.com\n"
            "\n"
            "host\n"
            "UNSIGNED-PAYLOAD");
  EXPECT_EQ(p->signature, "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
  EXPECT_EQ(p->query,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%"
            "2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-"
            "Amz-SignedHeaders=host&X-Amz-Signature="
            "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

TEST(SigV4S3Test, PresignSignsTheSessionTokenInTheQuery) {
  HttpRequestToSign r;
  r.method = "GET";
  r.host = "h";
  r.path = "/k";
  auto p = presign_v4(r, {"AKID", "secret", "tok/en+="}, "us-east-1", "s3", may_24_2013(),
                      std::chrono::seconds(60));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_THAT(p->query, HasSubstr("&X-Amz-Security-Token=tok%2Fen%2B%3D&"));
  EXPECT_THAT(p->canonical_request, HasSubstr("X-Amz-Security-Token=tok%2Fen%2B%3D"));
  EXPECT_THAT(p->canonical_request, HasSubstr("\nhost:h\n\nhost\nUNSIGNED-PAYLOAD"));
}

TEST(SigV4S3Test, PresignRefusesWhatItCannotSign) {
  const Credentials c{"AKID", "TOPSECRET", ""};
  const auto fails = [&](HttpRequestToSign r, Duration expires) {
    auto p = presign_v4(r, c, "us-east-1", "s3", may_24_2013(), expires);
    EXPECT_FALSE(p.ok());
    if (p.ok()) return std::string();
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(p.status().message(), Not(HasSubstr("TOPSECRET")));
    return p.status().message();
  };
  HttpRequestToSign r;
  r.method = "GET";
  r.host = "h";
  r.path = "/k";
  EXPECT_THAT(fails(r, std::chrono::milliseconds(999)), HasSubstr("expire"));
  EXPECT_THAT(fails(r, kPresignExpiresMax + std::chrono::seconds(1)), HasSubstr("expire"));
  EXPECT_TRUE(presign_v4(r, c, "us-east-1", "s3", may_24_2013(), kPresignExpiresMax).ok());
  HttpRequestToSign with_header = r;
  with_header.headers = {{"Range", "bytes=0-1"}};
  EXPECT_THAT(fails(with_header, std::chrono::seconds(60)), HasSubstr("Host"));
  HttpRequestToSign with_param = r;
  with_param.query_params = {{"X-Amz-Expires", "1"}};
  EXPECT_THAT(fails(with_param, std::chrono::seconds(60)), HasSubstr("set by the signer"));
}

// S3 signs the path as it is sent: a key with spaces and "+" is encoded once
// on the wire, and the canonical request holds that same text, where every
// other service would encode its "%" again.
TEST(SigV4S3Test, S3PathIsEncodedOnceOtherServicesTwice) {
  const std::string wire_path = "/bucket/" + uri_encode("dir/a b+c.txt", true);
  ASSERT_EQ(wire_path, "/bucket/dir/a%20b%2Bc.txt");
  HttpRequestToSign r;
  r.method = "PUT";
  r.host = "127.0.0.1:9000";
  r.path = wire_path;
  r.body = "hello";
  const Credentials c{"AKID", "secret", ""};
  auto s3 = sign_v4(r, c, "us-east-1", "s3", may_24_2013());
  ASSERT_TRUE(s3.ok()) << s3.status().to_string();
  EXPECT_THAT(s3->canonical_request, HasSubstr("PUT\n/bucket/dir/a%20b%2Bc.txt\n"));
  EXPECT_EQ(s3->content_sha256, sha256_hex("hello"));
  EXPECT_THAT(s3->canonical_request, HasSubstr("x-amz-content-sha256:" + sha256_hex("hello")));

  auto other = sign_v4(r, c, "us-east-1", "execute-api", may_24_2013());
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  EXPECT_THAT(other->canonical_request, HasSubstr("PUT\n/bucket/dir/a%2520b%252Bc.txt\n"));
  EXPECT_EQ(other->content_sha256, "");
  EXPECT_THAT(other->canonical_request, Not(HasSubstr("x-amz-content-sha256")));
}

TEST(SigV4S3Test, S3PathMustBeInSigV4Encoding) {
  HttpRequestToSign r;
  r.method = "GET";
  r.host = "h";
  const Credentials c{"AKID", "secret", ""};
  for (const char* path : {"/a b", "/a+b", "/a%2b", "/a%2", "/a%", "a"}) {
    r.path = path;
    auto s = sign_v4(r, c, "us-east-1", "s3", may_24_2013());
    EXPECT_FALSE(s.ok()) << path;
    EXPECT_THAT(s.status().message(), HasSubstr("path")) << path;
  }
  // S3 keys are not normalised: these are keys, not mistakes.
  for (const char* path : {"/", "/a//b", "/a/../b", "/%2B%20"}) {
    r.path = path;
    EXPECT_TRUE(sign_v4(r, c, "us-east-1", "s3", may_24_2013()).ok()) << path;
  }
}

TEST(SigV4S3Test, PayloadHashMayBeGivenOrUnsigned) {
  HttpRequestToSign r;
  r.method = "PUT";
  r.host = "h";
  r.path = "/k";
  r.body = "ignored when a hash is given";
  const Credentials c{"AKID", "secret", ""};
  r.payload_hash = "UNSIGNED-PAYLOAD";
  auto unsigned_payload = sign_v4(r, c, "us-east-1", "s3", may_24_2013());
  ASSERT_TRUE(unsigned_payload.ok());
  EXPECT_EQ(unsigned_payload->content_sha256, "UNSIGNED-PAYLOAD");
  EXPECT_TRUE(unsigned_payload->canonical_request.ends_with("\nUNSIGNED-PAYLOAD"));
  EXPECT_FALSE(sign_v4(r, c, "us-east-1", "dynamodb", may_24_2013()).ok());

  r.payload_hash = sha256_hex("x");
  auto given = sign_v4(r, c, "us-east-1", "s3", may_24_2013());
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->content_sha256, sha256_hex("x"));
  r.payload_hash = "ABC";
  EXPECT_FALSE(sign_v4(r, c, "us-east-1", "s3", may_24_2013()).ok());
  r.payload_hash.clear();
  r.headers = {{"X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD"}};
  auto reserved = sign_v4(r, c, "us-east-1", "s3", may_24_2013());
  EXPECT_THAT(reserved.status().message(), HasSubstr("set by the signer"));
}

// ---------------------------------------------------------------- regions

TEST(S3RegionTest, AwsEndpointOfABucketInARegion) {
  EXPECT_EQ(s3_internal::aws_endpoint("examplebucket", "eu-west-1"),
            "https://examplebucket.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(s3_internal::aws_endpoint("example.bucket", "ap-south-1"),
            "https://s3.ap-south-1.amazonaws.com");
}

// The refusals botocore's S3RegionRedirectorv2 follows, and some it does not.
TEST(S3RegionTest, TellsRefusalsForTheRegionFromOthers) {
  const auto doc = [](std::string code, std::string extra = "") {
    return "<Error><Code>" + code + "</Code><Message>m</Message>" + extra + "</Error>";
  };
  const std::vector<std::tuple<int, std::string, bool, bool>> cases = {
      {301, doc("PermanentRedirect"), false, true},
      {301, "", false, true},  // a HEAD's answer has no document
      {307, doc("TemporaryRedirect"), true, true},
      {400, doc("AuthorizationHeaderMalformed", "<Region>eu-west-1</Region>"), false, true},
      {400, doc("AuthorizationHeaderMalformed"), false, false},
      {400, doc("IllegalLocationConstraintException"), false, true},
      {400, "", true, true},
      {403, doc("AccessDenied"), true, true},
      {403, doc("AccessDenied"), false, false},
      {404, doc("NoSuchKey"), true, false},
      {400, doc("ExpiredToken"), false, false},
      {500, doc("InternalError"), true, false},
      {200, "", true, false},
  };
  for (const auto& [status, body, names_region, refusal] : cases) {
    EXPECT_EQ(s3_internal::is_region_refusal(status, body, names_region), refusal)
        << status << " " << body << " " << names_region;
  }
}

// ---------------------------------------------------------------- errors and XML

TEST(S3ErrorTest, TellsAnErrorDocumentInA200) {
  EXPECT_TRUE(s3_internal::is_error_document("<Error><Code>InternalError</Code></Error>"));
  EXPECT_TRUE(s3_internal::is_error_document(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\n<Error><Code>X</Code></Error>"));
  EXPECT_TRUE(s3_internal::is_error_document("  \n<Error xmlns=\"x\"><Code>X</Code></Error>"));
  EXPECT_FALSE(s3_internal::is_error_document(""));
  EXPECT_FALSE(s3_internal::is_error_document(
      "<?xml version=\"1.0\"?><CompleteMultipartUploadResult><ETag>\"e-2\"</ETag>"
      "</CompleteMultipartUploadResult>"));
  EXPECT_FALSE(s3_internal::is_error_document("<Errors/>"));
  EXPECT_FALSE(s3_internal::is_error_document("<Result><Error>in a value</Error></Result>"));
}

TEST(S3ErrorTest, TellsAMultipartETag) {
  EXPECT_TRUE(s3_internal::is_multipart_etag("\"3858f62230ac3c915f300c664312c11f-3\"", 3));
  EXPECT_TRUE(s3_internal::is_multipart_etag("3858f62230ac3c915f300c664312c11f-12", 12));
  EXPECT_FALSE(s3_internal::is_multipart_etag("\"3858f62230ac3c915f300c664312c11f-13\"", 3));
  EXPECT_FALSE(s3_internal::is_multipart_etag("\"3858f62230ac3c915f300c664312c11f-3\"", 13));
  EXPECT_FALSE(s3_internal::is_multipart_etag("\"9b2cf535f27731c974343645a3985328\"", 1));
  EXPECT_FALSE(s3_internal::is_multipart_etag("\"-3\"", 3));
  EXPECT_FALSE(s3_internal::is_multipart_etag("", 0));
}

TEST(S3ErrorTest, MapsS3CodesToStatusCodes) {
  const auto error_doc = [](std::string code) {
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code +
           "</Code><Message>m &amp; m</Message><RequestId>1</RequestId></Error>";
  };
  const std::vector<std::tuple<int, std::string, Code>> cases = {
      {404, error_doc("NoSuchKey"), Code::kNotFound},
      {404, "", Code::kNotFound},  // a HEAD's answer has no body
      {404, error_doc("NoSuchUpload"), Code::kNotFound},
      {403, error_doc("AccessDenied"), Code::kPermissionDenied},
      {403, "", Code::kPermissionDenied},
      {403, error_doc("SignatureDoesNotMatch"), Code::kUnauthenticated},
      {403, error_doc("InvalidAccessKeyId"), Code::kUnauthenticated},
      {400, error_doc("ExpiredToken"), Code::kUnauthenticated},
      {503, error_doc("SlowDown"), Code::kUnavailable},
      {500, error_doc("InternalError"), Code::kUnavailable},
      {503, "", Code::kUnavailable},
      {400, error_doc("RequestTimeout"), Code::kUnavailable},
      {409, error_doc("BucketAlreadyExists"), Code::kAlreadyExists},
      {412, error_doc("PreconditionFailed"), Code::kFailedPrecondition},
      {416, error_doc("InvalidRange"), Code::kInvalidArgument},
      {400, error_doc("EntityTooSmall"), Code::kInvalidArgument},
      {301, error_doc("PermanentRedirect"), Code::kInvalidArgument},
      {501, error_doc("NotImplemented"), Code::kInternal},
  };
  for (const auto& [http_status, body, code] : cases) {
    const Status s = s3_error_status(http_status, body, "s3 GET s3://b/k", "b");
    EXPECT_EQ(s.code(), code) << http_status << " " << body << ": " << s.to_string();
    EXPECT_THAT(s.message(), HasSubstr("s3 GET s3://b/k"));
    EXPECT_THAT(s.message(), HasSubstr("HTTP " + std::to_string(http_status)));
  }
  const Status bucket = s3_error_status(404, error_doc("NoSuchBucket"), "s3 GET s3://b/k", "b");
  EXPECT_EQ(bucket.code(), Code::kUnavailable);
  EXPECT_THAT(bucket.message(), HasSubstr("bucket 'b' does not exist"));
  EXPECT_THAT(s3_error_status(404, error_doc("NoSuchKey"), "w", "b").message(),
              HasSubstr("NoSuchKey: m & m"));
}

TEST(S3ErrorTest, NamesAwsRequestIdFromTheHeaderElseTheDocument) {
  const std::string doc =
      "<Error><Code>AccessDenied</Code><Message>Access Denied</Message>"
      "<RequestId>FROMBODY</RequestId></Error>";
  EXPECT_THAT(s3_error_status(403, doc, "w", "b", "FROMHEADER").message(),
              HasSubstr("AccessDenied: Access Denied (HTTP 403, AWS request ID FROMHEADER)"));
  EXPECT_THAT(s3_error_status(403, doc, "w", "b").message(),
              HasSubstr("(HTTP 403, AWS request ID FROMBODY)"));
  // A HEAD's answer has no document: the header is all there is.
  EXPECT_THAT(s3_error_status(404, "", "w", "b", "H1").message(),
              HasSubstr("no error code (HTTP 404, AWS request ID H1)"));
  EXPECT_THAT(s3_error_status(404, "", "w", "b").message(), HasSubstr("(HTTP 404)"));
  const std::string bucket = "<Error><Code>NoSuchBucket</Code><RequestId>R2</RequestId></Error>";
  EXPECT_THAT(s3_error_status(404, bucket, "w", "b").message(),
              HasSubstr("(NoSuchBucket, HTTP 404, AWS request ID R2)"));
}

TEST(S3ErrorTest, KeepsControlCharactersAndLongTextOutOfMessages) {
  const std::string body =
      "<Error><Code>X</Code><Message>line\nbreak" + std::string(1000, 'y') + "</Message></Error>";
  const Status s = s3_error_status(400, body, "w", "b");
  EXPECT_THAT(s.message(), Not(HasSubstr("\n")));
  EXPECT_LT(s.message().size(), 400u);
}

TEST(S3XmlTest, ExtractsElementsAndDecodesReferences) {
  const std::string xml =
      "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Bucket>b</Bucket><Key>a&lt;b&gt;&amp;&quot;&apos;&#65;&#x42;&#xe9;</Key>"
      "<UploadId>VXBsb2FkIElE</UploadId><Empty></Empty></InitiateMultipartUploadResult>";
  EXPECT_EQ(xml_element(xml, "UploadId"), "VXBsb2FkIElE");
  EXPECT_EQ(xml_element(xml, "Key"), "a<b>&\"'AB\xc3\xa9");
  EXPECT_EQ(xml_element(xml, "Empty"), "");
  EXPECT_EQ(xml_element(xml, "Missing"), std::nullopt);
  EXPECT_EQ(xml_element("<ETag>&quot;x&quot;</ETag>", "ETag"), "\"x\"");
  EXPECT_EQ(xml_element("<A>unterminated", "A"), std::nullopt);
  EXPECT_EQ(xml_element("<A>a & b &#0; &bogus;</A>", "A"), "a & b &#0; &bogus;");
}

// ---------------------------------------------------------------- options

TEST(S3ClientOptionsTest, RefusesBadOptionsBeforeSendingAnything) {
  const auto open_with = [](const std::function<void(S3ClientOptions&)>& change) {
    S3ClientOptions o;
    o.bucket = "abc";
    o.region = "us-east-1";
    o.endpoint = "http://127.0.0.1:9";
    o.credentials = nullptr;
    change(o);
    return S3Client::open(std::move(o)).status();
  };
  EXPECT_THAT(open_with([](auto& o) { o.bucket = "A"; }).message(), HasSubstr("bucket"));
  EXPECT_THAT(open_with([](auto& o) { o.region = ""; }).message(), HasSubstr("region"));
  EXPECT_THAT(open_with([](auto& o) { o.part_size_bytes = 1 << 20; }).message(),
              HasSubstr("part_size_bytes"));
  EXPECT_THAT(open_with([](auto& o) { o.endpoint = "http://10.0.0.1:9000"; }).message(),
              HasSubstr("loopback"));
  EXPECT_THAT(open_with([](auto& o) { o.endpoint = "s3.example.com"; }).message(),
              HasSubstr("endpoint"));
  EXPECT_THAT(open_with([](auto& o) {
                o.part_size_bytes = 100;
                o.allow_small_parts = true;
              }).message(),
              HasSubstr("part_size_bytes"));
}

class FixedCredentials final : public CredentialsSource {
 public:
  explicit FixedCredentials(Credentials c) : c_(std::move(c)) {}
  Result<Credentials> get() override { return c_; }

 private:
  Credentials c_;
};

std::unique_ptr<S3Client> open_client(std::string bucket, std::string endpoint) {
  S3ClientOptions o;
  o.bucket = std::move(bucket);
  o.region = "us-east-1";
  o.endpoint = std::move(endpoint);
  o.credentials =
      std::make_shared<FixedCredentials>(Credentials{kS3ExampleKeyId, kS3ExampleSecret, ""});
  auto client = S3Client::open(std::move(o));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::move(client).value() : nullptr;
}

TEST(S3ClientPresignTest, AddressesAwsVirtualHostedAndOthersPathStyle) {
  auto aws = open_client("examplebucket", "");
  ASSERT_NE(aws, nullptr);
  auto url = aws->presign_get("dir/a b+c.txt", std::chrono::seconds(86400), may_24_2013());
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  EXPECT_THAT(*url, ::testing::StartsWith(
                        "https://examplebucket.s3.us-east-1.amazonaws.com/dir/a%20b%2Bc.txt?"
                        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%"
                        "2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&"
                        "X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature="));

  // A "." in the name is not covered by S3's wildcard certificate.
  auto dotted = open_client("example.bucket", "");
  ASSERT_NE(dotted, nullptr);
  EXPECT_THAT(*dotted->presign_get("k", std::chrono::seconds(60), may_24_2013()),
              ::testing::StartsWith("https://s3.us-east-1.amazonaws.com/example.bucket/k?"));

  auto local = open_client("abc", "http://127.0.0.1:9000/");
  ASSERT_NE(local, nullptr);
  EXPECT_THAT(*local->presign_get("k", std::chrono::seconds(60), may_24_2013()),
              ::testing::StartsWith("http://127.0.0.1:9000/abc/k?X-Amz-Algorithm="));
  EXPECT_EQ(local->presign_get("k", std::chrono::seconds(0), may_24_2013()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(local->presign_get("/k", std::chrono::seconds(60), may_24_2013()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(local->presign_get("a/../k", std::chrono::seconds(60), may_24_2013()).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::aws
