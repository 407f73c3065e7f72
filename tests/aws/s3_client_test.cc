// S3Client against fauxqs: buckets, small and multipart uploads, ranged and
// whole-file downloads, removal, missing keys, presigned URLs, and a server
// that stops answering in the middle of a download. fauxqs checks no
// signature (src/aws/s3_test.cc checks them against AWS's examples) and
// keeps everything in memory; every test uses a bucket of its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>

#include "aws/s3.h"
#include "leasehold/random.h"
#include "net/endpoint.h"
#include "net/http_client.h"
#include "testing/temp_dir.h"
#include "tests/aws/fauxqs_fixture.h"

namespace leasehold::testing {
namespace {

using aws::S3Client;
using aws::S3ClientOptions;
using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

class FixedCredentials final : public aws::CredentialsSource {
 public:
  Result<aws::Credentials> get() override { return aws::Credentials{"test", "test", ""}; }
};

// `n` bytes that never repeat a block: a part uploaded or fetched in the
// wrong place changes the bytes compared.
std::string random_bytes(size_t n, uint64_t seed) {
  std::string out(n, '\0');
  SeededRandom random(seed);
  random.fill(std::as_writable_bytes(std::span<char>(out.data(), out.size())));
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The query parameters of a URL, undecoded.
std::map<std::string, std::string> query_of(const std::string& url) {
  std::map<std::string, std::string> out;
  const size_t question = url.find('?');
  if (question == std::string::npos) return out;
  std::string_view query = std::string_view(url).substr(question + 1);
  while (!query.empty()) {
    const size_t amp = std::min(query.find('&'), query.size());
    const std::string_view part = query.substr(0, amp);
    const size_t eq = part.find('=');
    out[std::string(part.substr(0, eq))] =
        eq == std::string_view::npos ? "" : std::string(part.substr(eq + 1));
    query.remove_prefix(std::min(amp + 1, query.size()));
  }
  return out;
}

class S3ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fauxqs_ = shared_fauxqs();
    ASSERT_NE(fauxqs_, nullptr);
    bucket_ = unique_aws_name("s3");
    std::transform(bucket_.begin(), bucket_.end(), bucket_.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    client_ = open_client();
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(client_->create_bucket().ok());
  }

  std::unique_ptr<S3Client> open_client(
      const std::function<void(S3ClientOptions&)>& change = nullptr) {
    S3ClientOptions options;
    options.bucket = bucket_;
    options.region = "us-east-1";
    options.endpoint = fauxqs_->endpoint();
    options.credentials = std::make_shared<FixedCredentials>();
    options.request_timeout = std::chrono::seconds(10);
    if (change) change(options);
    Result<std::unique_ptr<S3Client>> client = S3Client::open(std::move(options));
    EXPECT_TRUE(client.ok()) << client.status().to_string();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // A plain GET of `target` on fauxqs, unsigned: what a browser does.
  Result<net::HttpResponse> plain_get(const std::string& target) {
    LEASEHOLD_ASSIGN_OR_RETURN(net::HttpEndpoint endpoint,
                               net::parse_http_endpoint(fauxqs_->endpoint()));
    net::HttpClientOptions http_options;
    http_options.endpoint = std::move(endpoint);
    LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> http,
                               net::HttpClient::open(std::move(http_options)));
    net::HttpRequest get;
    get.method = "GET";
    get.target = target;
    return http->send(get, std::chrono::seconds(10));
  }

  Fauxqs* fauxqs_ = nullptr;
  std::string bucket_;
  std::unique_ptr<S3Client> client_;
  TempDir dir_{"leasehold-s3-test-"};
};

TEST_F(S3ClientTest, CreatingTheBucketAgainSucceeds) {
  EXPECT_TRUE(client_->create_bucket().ok());
  EXPECT_TRUE(client_->create_bucket().ok());
}

TEST_F(S3ClientTest, PutHeadGetAndRemoveRoundTrip) {
  const std::string key = "dir/a b+c.txt";  // encoded once on the wire: a%20b%2Bc.txt
  ASSERT_TRUE(client_->put(key, "hello world", "text/plain").ok());
  Result<net::HttpResponse> listed = plain_get("/" + bucket_ + "?list-type=2");
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  EXPECT_THAT(listed->body, HasSubstr("<Key>dir/a b+c.txt</Key>"));

  Result<aws::S3ObjectInfo> info = client_->head(key);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->size, 11u);
  EXPECT_EQ(info->content_type, "text/plain");
  EXPECT_THAT(info->etag, ::testing::MatchesRegex("\"[0-9a-f]{32}\""));

  Result<aws::S3Range> range = client_->get_range(key, 0, 4);
  ASSERT_TRUE(range.ok()) << range.status().to_string();
  EXPECT_EQ(range->bytes, "hello");
  EXPECT_EQ(range->object_size, 11u);
  range = client_->get_range(key, 6, 100);  // past the end: what there is
  ASSERT_TRUE(range.ok()) << range.status().to_string();
  EXPECT_EQ(range->bytes, "world");
  EXPECT_EQ(client_->get_range(key, 11, 20).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(client_->get_range(key, 5, 4).status().code(), Code::kInvalidArgument);

  const std::string path = dir_.file("copy.txt");
  ASSERT_TRUE(client_->get_to_file(key, path).ok());
  EXPECT_EQ(read_file(path), "hello world");
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));

  ASSERT_TRUE(client_->remove(key).ok());
  EXPECT_EQ(client_->head(key).status().code(), Code::kNotFound);
  EXPECT_TRUE(client_->remove(key).ok()) << "removing a missing key succeeds";
}

TEST_F(S3ClientTest, SmallFilesAndEmptyObjectsRoundTrip) {
  const std::string source = dir_.file("small.bin");
  const std::string bytes = random_bytes(100 * kKiB, 7);
  write_file(source, bytes);
  ASSERT_TRUE(client_->put_file("small.bin", source, "").ok());
  EXPECT_EQ(client_->head("small.bin")->content_type, "application/octet-stream");
  ASSERT_TRUE(client_->get_to_file("small.bin", dir_.file("small.out")).ok());
  EXPECT_EQ(read_file(dir_.file("small.out")), bytes);

  ASSERT_TRUE(client_->put("empty", "", "text/plain").ok());
  Result<aws::S3ObjectInfo> info = client_->head("empty");
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->size, 0u);
  write_file(dir_.file("empty.out"), "stale");
  ASSERT_TRUE(client_->get_to_file("empty", dir_.file("empty.out")).ok());
  EXPECT_EQ(read_file(dir_.file("empty.out")), "");
}

TEST_F(S3ClientTest, LargeFilesGoUpInPartsAndComeDownInRanges) {
  // fauxqs, like S3, refuses parts under 5 MiB but the last.
  std::unique_ptr<S3Client> client = open_client([](S3ClientOptions& o) {
    o.multipart_threshold_bytes = 1 * kMiB;
    o.part_size_bytes = 5 * kMiB;
  });
  ASSERT_NE(client, nullptr);
  const std::string source = dir_.file("movie.bin");
  const std::string bytes = random_bytes(11 * kMiB + 12345, 42);
  write_file(source, bytes);
  Status put = client->put_file("movies/movie.bin", source, "video/mp4");
  ASSERT_TRUE(put.ok()) << put.to_string();

  Result<aws::S3ObjectInfo> info = client->head("movies/movie.bin");
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->size, bytes.size());
  EXPECT_EQ(info->content_type, "video/mp4");
  EXPECT_THAT(info->etag, HasSubstr("-3\""));  // a multipart ETag names its parts

  std::vector<uint64_t> progress;
  const std::string copy = dir_.file("movie.out");
  Status got = client->get_to_file("movies/movie.bin", copy, [&](uint64_t done, uint64_t total) {
    EXPECT_EQ(total, bytes.size());
    progress.push_back(done);
  });
  ASSERT_TRUE(got.ok()) << got.to_string();
  EXPECT_EQ(progress, (std::vector<uint64_t>{5 * kMiB, 10 * kMiB, bytes.size()}));
  EXPECT_TRUE(read_file(copy) == bytes) << "the downloaded bytes differ";
}

TEST_F(S3ClientTest, AFailedMultipartUploadIsAbortedAndLeavesNoObject) {
  // Parts under S3's minimum: the completion fails, after every part went up.
  std::unique_ptr<S3Client> client = open_client([](S3ClientOptions& o) {
    o.multipart_threshold_bytes = 512 * kKiB;
    o.part_size_bytes = 256 * kKiB;
    o.allow_small_parts = true;
  });
  ASSERT_NE(client, nullptr);
  const std::string source = dir_.file("parts.bin");
  write_file(source, random_bytes(1 * kMiB, 3));
  Status put = client->put_file("parts.bin", source, "");
  EXPECT_EQ(put.code(), Code::kInvalidArgument) << put.to_string();
  EXPECT_THAT(put.message(), HasSubstr("EntityTooSmall"));
  EXPECT_THAT(put.message(), Not(HasSubstr("aborting")));  // the abort succeeded
  EXPECT_EQ(client->head("parts.bin").status().code(), Code::kNotFound);
}

// A missing key is kNotFound; a missing bucket too for a HEAD, whose answer
// does not say which is missing, and kUnavailable for the rest.
TEST_F(S3ClientTest, MissingKeysAreNotFoundAndAMissingBucketUnavailable) {
  EXPECT_EQ(client_->head("nope").status().code(), Code::kNotFound);
  EXPECT_EQ(client_->get_range("nope", 0, 9).status().code(), Code::kNotFound);
  const std::string path = dir_.file("nope.out");
  EXPECT_EQ(client_->get_to_file("nope", path).code(), Code::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
  EXPECT_EQ(client_->put_file("x", dir_.file("no-such-file"), "").code(), Code::kNotFound);

  std::unique_ptr<S3Client> other =
      open_client([](S3ClientOptions& o) { o.bucket = unique_aws_name("s3-missing"); });
  ASSERT_NE(other, nullptr);
  const Status missing = other->head("k").status();
  EXPECT_EQ(missing.code(), Code::kNotFound);
  EXPECT_EQ(other->get_range("k", 0, 0).status().code(), Code::kUnavailable);
  const Status put = other->put("k", "v", "");
  EXPECT_EQ(put.code(), Code::kUnavailable);
  EXPECT_THAT(put.message(), HasSubstr("bucket '" + other->options().bucket + "' does not exist"));
  EXPECT_THAT(put.message(), HasSubstr("AWS request ID "));
}

TEST_F(S3ClientTest, APresignedUrlServesTheObjectToAPlainGet) {
  const std::string key = "shared/a b.txt";
  ASSERT_TRUE(client_->put(key, "presigned bytes", "text/plain").ok());
  Result<std::string> url =
      client_->presign_get(key, std::chrono::minutes(5), WallTime::clock::now());
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  const std::string prefix = fauxqs_->endpoint() + "/" + bucket_ + "/shared/a%20b.txt?";
  ASSERT_TRUE(url->starts_with(prefix)) << *url;

  const std::map<std::string, std::string> query = query_of(*url);
  EXPECT_EQ(query.at("X-Amz-Algorithm"), "AWS4-HMAC-SHA256");
  EXPECT_THAT(query.at("X-Amz-Credential"),
              ::testing::MatchesRegex("test%2F[0-9]{8}%2Fus-east-1%2Fs3%2Faws4_request"));
  EXPECT_THAT(query.at("X-Amz-Date"), ::testing::MatchesRegex("[0-9]{8}T[0-9]{6}Z"));
  EXPECT_EQ(query.at("X-Amz-Expires"), "300");
  EXPECT_EQ(query.at("X-Amz-SignedHeaders"), "host");
  EXPECT_THAT(query.at("X-Amz-Signature"), ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(query.count("X-Amz-Security-Token"), 0u);

  Result<net::HttpResponse> got = plain_get(url->substr(fauxqs_->endpoint().size()));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "presigned bytes");
}

// Resumes the server however the test ends.
class ResumeOnExit {
 public:
  explicit ResumeOnExit(Fauxqs& fauxqs) : fauxqs_(fauxqs) {}
  ~ResumeOnExit() {
    if (paused_) fauxqs_.resume();
  }
  void pause() {
    if (!paused_) fauxqs_.pause();
    paused_ = true;
  }
  void resume() {
    if (paused_) fauxqs_.resume();
    paused_ = false;
  }

 private:
  Fauxqs& fauxqs_;
  bool paused_ = false;
};

TEST_F(S3ClientTest, AServerThatStopsAnsweringFailsTheDownloadAndLeavesNoFile) {
  std::unique_ptr<S3Client> client = open_client([](S3ClientOptions& o) {
    o.part_size_bytes = 256 * kKiB;
    o.allow_small_parts = true;
    o.request_timeout = std::chrono::milliseconds(300);
    o.retry.attempts_max = 2;
    o.retry.base_delay = std::chrono::milliseconds(10);
  });
  ASSERT_NE(client, nullptr);
  const std::string bytes = random_bytes(1 * kMiB, 11);
  ASSERT_TRUE(client->put("big.bin", bytes, "").ok());

  const std::string path = dir_.file("big.out");
  ResumeOnExit server(*fauxqs_);
  int chunks = 0;
  // The server stops once the first of four chunks is on disk.
  const Status failed = client->get_to_file("big.bin", path, [&](uint64_t, uint64_t) {
    if (++chunks == 1) server.pause();
  });
  EXPECT_EQ(chunks, 1);
  EXPECT_THAT(failed.code(), AnyOf(Code::kUnavailable, Code::kUnknownOutcome))
      << failed.to_string();
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));

  server.resume();
  const Status again = client->get_to_file("big.bin", path);
  ASSERT_TRUE(again.ok()) << again.to_string();
  EXPECT_TRUE(read_file(path) == bytes);
}

}  // namespace
}  // namespace leasehold::testing
