// Streamed bodies through real sockets: uploads into files (byte-exact,
// over the limit, refused before a byte is written, a client that leaves,
// the transfer timeouts) and file responses (whole, ranges, 416, several
// ranges, HEAD, a file that vanished, a client that stops reading).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/errors.h"
#include "server_fixture.h"
#include "testing/temp_dir.h"

namespace leasehold::server::testing {
namespace {

namespace fs = std::filesystem;

// Bytes that differ from their neighbours, so that a shifted or repeated
// part shows.
std::string patterned(size_t size) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
  return data;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string upload_header(size_t content_length, std::string_view extra = "") {
  return "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(content_length) +
         "\r\n" + std::string(extra) + "\r\n";
}

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}

class TransferTest : public ServerFixture {
 protected:
  TransferTest() { fs::create_directory(upload_dir()); }
  ~TransferTest() override { server_.reset(); }  // before the files go

  fs::path upload_dir() const { return root_ / "uploads"; }
  size_t uploads_left() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(upload_dir()), {}));
  }
  // The size of the one file being uploaded, or -1 if there is none.
  int64_t upload_size() const {
    for (const auto& entry : fs::directory_iterator(upload_dir())) {
      return static_cast<int64_t>(entry.file_size());
    }
    return -1;
  }

  RouteOptions upload_route(size_t body_bytes_max) const {
    return {.access = Access::kPublic,
            .body_bytes_max = body_bytes_max,
            .blocking = true,
            .upload_dir = upload_dir().string()};
  }

  // POST /upload: keeps the body file as root_/kept (renamed away), and
  // answers with its size.
  void add_keeping_upload_route(size_t body_bytes_max) {
    router_.add(
        "POST", "/upload",
        [this](Request& r) {
          ++handled_;
          struct stat st {};
          if (!r.body.empty() || fs::path(r.body_file).parent_path() != upload_dir() ||
              ::stat(r.body_file.c_str(), &st) != 0 || (st.st_mode & 0777) != 0600) {
            return Response{.status = 500, .headers = {}, .body = "bad body file"};
          }
          fs::rename(r.body_file, root_ / "kept");
          return Response{.status = 200, .headers = {}, .body = std::to_string(st.st_size)};
        },
        upload_route(body_bytes_max));
  }

  // Admits a request only with an Authorization header, noting how many
  // upload files exist when it runs.
  void require_authorization() {
    admit_ = [this](Request& r, const Route&) -> std::optional<Response> {
      files_at_admit_ = static_cast<int>(uploads_left());
      ++admitted_;
      if (!r.header("authorization")) return error_response(401, "sign in");
      return std::nullopt;
    };
  }

  // GET /file: the file at root_/file (whatever is there when asked).
  void add_file_route() {
    router_.add(
        "GET", "/file",
        [this](Request&) {
          Response response{.status = 200, .headers = {}, .body = {}};
          response.file_path = (root_ / "file").string();
          response.set_header("Content-Type", "video/mp4");
          return response;
        },
        kInline);
  }

  void write_file(const std::string& data) {
    std::ofstream(root_ / "file", std::ios::binary) << data;
  }

  // GET /stream: a body made of `parts` by a BodyStream, each call noting
  // its thread; past the parts, `fail` (if set) is what it returns, else it
  // ends the body. At part `gate_at` (if not -1) the call waits at gate_.
  void add_stream_route(std::vector<std::string> parts, std::optional<Status> fail = {},
                        int gate_at = -1) {
    router_.add(
        "GET", "/stream",
        [this, parts, fail, gate_at](Request&) {
          Response response{.status = 200, .headers = {}, .body = "ignored"};
          auto next = std::make_shared<size_t>(0);
          response.body_stream = [this, parts, fail, gate_at,
                                  next](std::string& part) -> Result<bool> {
            {
              std::lock_guard lock(stream_mu_);
              stream_threads_.push_back(std::this_thread::get_id());
            }
            const size_t i = (*next)++;
            if (static_cast<int>(i) == gate_at) gate_.pass();
            if (i < parts.size()) {
              part = parts[i];
              return fail || i + 1 < parts.size();
            }
            if (fail) return *fail;
            return false;
          };
          return response;
        },
        kInline);
  }
  std::vector<std::thread::id> stream_threads() {
    std::lock_guard lock(stream_mu_);
    return stream_threads_;
  }

  const leasehold::testing::TempDir tmp_{"leasehold-transfer-"};
  const fs::path root_ = tmp_.path();
  std::mutex stream_mu_;
  std::vector<std::thread::id> stream_threads_;  // by stream_mu_
  std::atomic<int> handled_ = 0;
  std::atomic<int> admitted_ = 0;
  std::atomic<int> files_at_admit_ = -1;
};

TEST_F(TransferTest, AnUploadArrivesByteExactInAFileTheHandlerMayKeep) {
  add_keeping_upload_route(8 * 1024 * 1024);
  start();
  const std::string body = patterned(4 * 1024 * 1024 + 7);
  Client client(port());
  ASSERT_TRUE(client.send(upload_header(body.size()) + body));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(response->body, std::to_string(body.size()));
  EXPECT_TRUE(read_file(root_ / "kept") == body);
  ASSERT_TRUE(wait_answered(1));
  EXPECT_EQ(uploads_left(), 0u);

  // Chunked, on the same connection.
  const std::string second = patterned(1024 * 1024 + 3).substr(5);
  std::string chunked = "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (size_t at = 0; at < second.size(); at += 50'000) chunked += chunk(second.substr(at, 50'000));
  chunked += "0\r\n\r\n";
  ASSERT_TRUE(client.send(chunked));
  response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_TRUE(read_file(root_ / "kept") == second);
  EXPECT_EQ(handled_, 2);
}

TEST_F(TransferTest, AnUploadTheHandlerDoesNotKeepIsRemovedOnceAnswered) {
  std::string seen;
  router_.add(
      "POST", "/upload",
      [&seen](Request& r) {
        seen = read_file(r.body_file);
        return Response{.status = 204, .headers = {}, .body = {}};
      },
      upload_route(1024 * 1024));
  start();
  const std::string body = patterned(300'000);
  Client client(port());
  ASSERT_TRUE(client.send(upload_header(body.size()) + body));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 204);
  ASSERT_TRUE(wait_answered(1));
  EXPECT_TRUE(seen == body);
  EXPECT_EQ(uploads_left(), 0u);
}

// The Content-Length alone refuses it: no admission, no file.
TEST_F(TransferTest, AContentLengthOverTheLimitIs413AndNoFileIsMade) {
  add_keeping_upload_route(1024 * 1024);
  require_authorization();
  start();
  Client client(port());
  ASSERT_TRUE(client.send(upload_header(1024 * 1024 + 1, "Authorization: Bearer t\r\n")));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(admitted_, 0);
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(uploads_left(), 0u);
}

TEST_F(TransferTest, AChunkedUploadPastTheLimitIs413AndItsFileIsRemoved) {
  constexpr size_t kLimit = 256 * 1024;
  add_keeping_upload_route(kLimit);
  start();
  Client client(port());
  std::string request = "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string piece = patterned(64 * 1024);
  for (size_t sent = 0; sent < kLimit; sent += piece.size()) request += chunk(piece);
  ASSERT_TRUE(client.send(request));
  // The body up to the limit is on disk...
  ASSERT_TRUE(eventually([&] { return upload_size() == static_cast<int64_t>(kLimit); }, kWaitMax));
  // ...and one more chunk passes it.
  ASSERT_TRUE(client.send("400\r\n" + piece.substr(0, 1024) + "\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_TRUE(client.wait_closed());
  ASSERT_TRUE(wait_answered(1));
  EXPECT_EQ(uploads_left(), 0u);
  EXPECT_EQ(handled_, 0);
}

TEST_F(TransferTest, AnUnauthenticatedUploadIsRefusedBeforeAByteIsWritten) {
  add_keeping_upload_route(8 * 1024 * 1024);
  require_authorization();
  start();
  // A client that waits for 100 Continue gets the 401 instead.
  Client waiting(port());
  ASSERT_TRUE(waiting.send(upload_header(1024 * 1024, "Expect: 100-continue\r\n")));
  auto response = waiting.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 401);
  EXPECT_TRUE(waiting.wait_closed());

  // One that sends its body at once: none of it is written.
  Client eager(port());
  ASSERT_TRUE(eager.send(upload_header(1024 * 1024) + patterned(64 * 1024)));
  response = eager.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 401);
  EXPECT_TRUE(eager.wait_closed());
  ASSERT_TRUE(wait_answered(2));
  EXPECT_EQ(admitted_, 2);
  EXPECT_EQ(files_at_admit_, 0);
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(uploads_left(), 0u);

  // With credentials, after 100 Continue, it goes through.
  const std::string body = patterned(100'000);
  Client signed_in(port());
  ASSERT_TRUE(signed_in.send(
      upload_header(body.size(), "Authorization: Bearer t\r\nExpect: 100-continue\r\n")));
  response = signed_in.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 100);
  ASSERT_TRUE(signed_in.send(body));
  response = signed_in.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(files_at_admit_, 0);
  EXPECT_TRUE(read_file(root_ / "kept") == body);
}

// Admission that may block runs on the pool, still before the body.
TEST_F(TransferTest, AnAdmissionOnTheBlockingPoolAlsoPrecedesTheBody) {
  add_keeping_upload_route(8 * 1024 * 1024);
  require_authorization();
  admit_blocks_ = [](const Request&, const Route&) { return true; };
  start();
  Client eager(port());
  ASSERT_TRUE(eager.send(upload_header(1024 * 1024) + patterned(64 * 1024)));
  auto response = eager.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 401);
  EXPECT_EQ(files_at_admit_, 0);
  ASSERT_TRUE(wait_answered(1));
  EXPECT_EQ(uploads_left(), 0u);

  const std::string body = patterned(200'000);
  Client signed_in(port());
  ASSERT_TRUE(signed_in.send(upload_header(body.size(), "Authorization: Bearer t\r\n") + body));
  response = signed_in.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_TRUE(read_file(root_ / "kept") == body);
  EXPECT_EQ(admitted_, 2);  // once per request: not again before the handler
}

TEST_F(TransferTest, AClientThatLeavesMidBodyLeavesNoFile) {
  add_keeping_upload_route(8 * 1024 * 1024);
  start();
  {
    Client client(port());
    ASSERT_TRUE(client.send(upload_header(1024 * 1024) + patterned(128 * 1024)));
    ASSERT_TRUE(eventually([&] { return upload_size() == 128 * 1024; }, kWaitMax));
  }  // closes the connection
  ASSERT_TRUE(wait_answered(1));
  EXPECT_EQ(answered()[0].status, kStatusDropped);
  EXPECT_EQ(uploads_left(), 0u);
  EXPECT_EQ(handled_, 0);
}

// request_timeout is short; the upload takes longer, but each part it sends
// earns time at transfer_rate_min_bytes_per_s.
TEST_F(TransferTest, ASlowButMovingUploadOutlastsRequestTimeout) {
  ServerLimits limits = test_limits();
  limits.request_timeout = 300ms;
  limits.transfer_rate_min_bytes_per_s = 64 * 1024;  // 16 KiB earns 250 ms
  limits.transfer_idle_timeout = 5s;
  add_keeping_upload_route(1024 * 1024);
  start(limits);
  const std::string part = patterned(16 * 1024);
  constexpr int kParts = 8;
  Client client(port());
  ASSERT_TRUE(client.send(upload_header(part.size() * kParts)));
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < kParts; ++i) {
    ASSERT_TRUE(client.send(part));
    // The client's pace, not a wait for the server: 100 ms a part, slower
    // than request_timeout allows for the whole body.
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GT(std::chrono::steady_clock::now() - began, limits.request_timeout);
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(response->body, std::to_string(part.size() * kParts));
}

TEST_F(TransferTest, AStalledUploadIsCutOffAndItsFileRemoved) {
  ServerLimits limits = test_limits();
  limits.request_timeout = 200ms;
  limits.transfer_rate_min_bytes_per_s = 64 * 1024;
  limits.transfer_idle_timeout = 5s;  // the rate's deadline comes first
  add_keeping_upload_route(1024 * 1024);
  start(limits);
  Client client(port());
  ASSERT_TRUE(client.send(upload_header(1024 * 1024) + patterned(16 * 1024)));
  EXPECT_TRUE(client.wait_closed());
  ASSERT_TRUE(wait_answered(1));
  EXPECT_EQ(answered()[0].status, kStatusDropped);
  EXPECT_EQ(uploads_left(), 0u);

  // An idle timeout shorter than the rate's deadline cuts it off too.
  limits.request_timeout = 5s;
  limits.transfer_idle_timeout = 200ms;
  server_.reset();
  start(limits);
  Client idle(port());
  ASSERT_TRUE(idle.send(upload_header(1024 * 1024) + patterned(16 * 1024)));
  EXPECT_TRUE(idle.wait_closed(4s));  // well before request_timeout
  ASSERT_TRUE(wait_answered(2));
  EXPECT_EQ(uploads_left(), 0u);
}

// A client that stops reading a download: once the socket's buffers are
// full, nothing moves, and transfer_idle_timeout closes the connection
// long before the file is sent (or request_timeout passes).
TEST_F(TransferTest, ADownloadThatStopsMovingIsCutOff) {
  ServerLimits limits = test_limits();
  limits.request_timeout = 10s;
  limits.transfer_idle_timeout = 300ms;
  add_file_route();
  const std::string data = patterned(64 * 1024 * 1024);
  write_file(data);
  start(limits);
  Client client(port());
  ASSERT_TRUE(client.send(get_request("/file")));
  ASSERT_TRUE(wait_answered(1));  // the write failed: the exchange is over
  EXPECT_LT(answered()[0].elapsed, limits.request_timeout);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_LT(client.received().size(), data.size());
}

TEST_F(TransferTest, TransferLimitsOfZeroAreRefused) {
  for (int i = 0; i < 2; ++i) {
    ServerOptions options;
    options.port = 0;
    options.limits = test_limits();
    if (i == 0) options.limits.transfer_rate_min_bytes_per_s = 0;
    if (i == 1) options.limits.transfer_idle_timeout = 0ms;
    auto server = Server::start(std::move(options), router_, hooks());
    ASSERT_FALSE(server.ok());
    EXPECT_EQ(server.status().code(), Code::kInvalidArgument);
  }
}

TEST_F(TransferTest, AFileIsSentWholeWithAcceptRanges) {
  add_file_route();
  const std::string data = patterned(3 * 1024 * 1024 + 123);
  write_file(data);
  start();
  Client client(port());
  auto response = client.get("/file");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("accept-ranges"), "bytes");
  EXPECT_EQ(response->header("content-type"), "video/mp4");
  EXPECT_EQ(response->header("content-length"), std::to_string(data.size()));
  EXPECT_TRUE(response->body == data);
  // The connection stays usable.
  response = client.get("/file");
  ASSERT_TRUE(response);
  EXPECT_TRUE(response->body == data);
}

TEST_F(TransferTest, RangesOfAFile) {
  add_file_route();
  const std::string data = patterned(200'000);
  const std::string size = std::to_string(data.size());
  write_file(data);
  start();
  Client client(port());  // all on one keep-alive connection
  auto response = client.get("/file", "Range: bytes=0-99\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 206);
  EXPECT_EQ(response->header("content-range"), "bytes 0-99/" + size);
  EXPECT_EQ(response->body, data.substr(0, 100));

  response = client.get("/file", "Range: bytes=-1000\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 206);
  EXPECT_EQ(response->header("content-range"), "bytes 199000-199999/" + size);
  EXPECT_EQ(response->body, data.substr(199'000));

  response = client.get("/file", "Range: bytes=70000-\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 206);
  EXPECT_EQ(response->header("content-range"), "bytes 70000-199999/" + size);
  EXPECT_TRUE(response->body == data.substr(70'000));

  response = client.get("/file", "Range: bytes=" + size + "-\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 416);
  EXPECT_EQ(response->header("content-range"), "bytes */" + size);
  EXPECT_NE(response->body.find("range_not_satisfiable"), std::string::npos);

  response = client.get("/file", "Range: bytes=0-1,5-6\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_FALSE(response->has_header("content-range"));
  EXPECT_TRUE(response->body == data);

  // A stale If-Range: the whole file.
  response = client.get("/file", "Range: bytes=0-99\r\nIf-Range: \"old\"\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body.size(), data.size());
}

TEST_F(TransferTest, HeadSendsAFilesHeadersOnly) {
  add_file_route();
  const std::string data = patterned(100'000);
  write_file(data);
  start();
  Client client(port());
  ASSERT_TRUE(client.send("HEAD /file HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto response = client.read_response(10s, /*head=*/true);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("content-length"), "100000");
  EXPECT_EQ(response->header("accept-ranges"), "bytes");
  ASSERT_TRUE(client.send("HEAD /file HTTP/1.1\r\nHost: x\r\nRange: bytes=10-19\r\n\r\n"));
  response = client.read_response(10s, /*head=*/true);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 206);
  EXPECT_EQ(response->header("content-length"), "10");
  EXPECT_EQ(response->header("content-range"), "bytes 10-19/100000");
  // No body followed either header: the next response is the next one read.
  response = client.get("/file", "Range: bytes=0-4\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 206);
  EXPECT_EQ(response->body, data.substr(0, 5));
}

TEST_F(TransferTest, AFileThatVanishedIs404) {
  add_file_route();  // and no file
  start();
  Client client(port());
  auto response = client.get("/file");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 404);
  EXPECT_NE(response->body.find("not_found"), std::string::npos);
  response = client.get("/file");  // the connection goes on
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 404);
}

// Every started request ends once, whatever became of it.
TEST_F(TransferTest, EveryStartedTransferIsAnsweredOnce) {
  add_file_route();
  add_keeping_upload_route(64 * 1024);
  write_file(patterned(50'000));
  start();
  {
    Client client(port());
    ASSERT_TRUE(client.get("/file", "Range: bytes=5-\r\n"));
    ASSERT_TRUE(client.get("/file", "Range: bytes=99999-\r\n"));
    ASSERT_TRUE(client.send(upload_header(1000) + patterned(1000)));
    ASSERT_TRUE(client.read_response());
  }
  {
    Client over(port());
    ASSERT_TRUE(over.send(upload_header(1024 * 1024)));
    ASSERT_TRUE(over.read_response());
  }
  {
    Client leaving(port());
    ASSERT_TRUE(leaving.send(upload_header(1000) + "abc"));
    ASSERT_TRUE(eventually([&] { return upload_size() == 3; }, kWaitMax));
  }
  ASSERT_TRUE(wait_answered(5));
  EXPECT_EQ(started().size(), 5u);
  // In any order: `answered` follows the write, which the client may see
  // finish before the server does.
  std::multiset<int> statuses;
  for (const Answered& a : answered()) statuses.insert(a.status);
  EXPECT_EQ(statuses, (std::multiset<int>{206, 416, 200, 413, kStatusDropped}));
}

TEST_F(TransferTest, AStreamedBodyArrivesWholeInChunksEachMadeOnThePool) {
  const std::vector<std::string> parts = {patterned(100'000), "", "tail", patterned(70'000)};
  add_stream_route(parts);
  start();
  Client client(port());
  ASSERT_TRUE(client.send(get_request("/stream")));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("transfer-encoding"), "chunked");
  EXPECT_FALSE(response->has_header("content-length"));
  EXPECT_EQ(response->header("content-type"), "application/octet-stream");
  EXPECT_TRUE(response->body == parts[0] + parts[2] + parts[3]) << "the handler's body is ignored";
  const auto threads = stream_threads();
  ASSERT_EQ(threads.size(), parts.size());
  for (std::thread::id id : threads) EXPECT_TRUE(on_pool_thread(id));

  // The connection goes on; HEAD says how the body would come, and sends none.
  ASSERT_TRUE(client.send("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  response = client.read_response(10s, /*head=*/true);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("transfer-encoding"), "chunked");
  response = client.get("/stream");
  ASSERT_TRUE(response);
  EXPECT_TRUE(response->body == parts[0] + parts[2] + parts[3]);
  EXPECT_EQ(stream_threads().size(), 2 * parts.size()) << "not called for HEAD";
  ASSERT_TRUE(wait_answered(3));
}

// Whatever the client has read looks broken, never whole: no last chunk.
TEST_F(TransferTest, AStreamedBodyThatFailsMidwayClosesTheConnectionWithoutItsLastChunk) {
  add_stream_route({"first part,", "second part"}, unavailable("the store went away"));
  start();
  Client client(port());
  ASSERT_TRUE(client.send(get_request("/stream")));
  ASSERT_TRUE(client.wait_closed());
  const std::string& received = client.received();
  EXPECT_NE(received.find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_NE(received.find("b\r\nfirst part,\r\nb\r\nsecond part\r\n"), std::string::npos)
      << received;
  EXPECT_FALSE(received.ends_with("0\r\n\r\n")) << received;
  ASSERT_TRUE(wait_answered(1));
  EXPECT_NE(logger_.find("the body broke off"), "");
  EXPECT_NE(logger_.find("the store went away"), "");

  Client reading(port());
  ASSERT_TRUE(reading.send(get_request("/stream")));
  EXPECT_FALSE(reading.read_response()) << "a chunked body cut short is no response";
}

TEST_F(TransferTest, AStreamedBodyWhosePartComesTooLateIsCutOff) {
  ServerLimits limits = test_limits();
  limits.transfer_idle_timeout = 300ms;
  add_stream_route({"first", "second"}, {}, /*gate_at=*/1);
  start(limits);
  Client client(port());
  ASSERT_TRUE(client.send(get_request("/stream")));
  ASSERT_TRUE(client.wait_closed());
  EXPECT_NE(client.received().find("5\r\nfirst\r\n"), std::string::npos);
  EXPECT_EQ(client.received().find("second"), std::string::npos);
  ASSERT_TRUE(wait_answered(1));
  EXPECT_NE(logger_.find("came too late"), "");
  gate_.open();  // the late part is dropped when it comes
  Client next(port());
  auto response = next.get("/stream");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "firstsecond");
}

TEST_F(TransferTest, AStreamedBodyToAnHttp10ClientEndsWithTheConnection) {
  add_stream_route({"one,", "two"});
  start();
  Client client(port());
  ASSERT_TRUE(client.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  ASSERT_TRUE(client.wait_closed());
  const std::string& received = client.received();
  EXPECT_EQ(received.find("Transfer-Encoding"), std::string::npos) << received;
  EXPECT_EQ(received.find("Content-Length"), std::string::npos) << received;
  EXPECT_NE(received.find("Connection: close\r\n"), std::string::npos) << received;
  EXPECT_TRUE(received.ends_with("\r\n\r\none,two")) << received;
}

}  // namespace
}  // namespace leasehold::server::testing
