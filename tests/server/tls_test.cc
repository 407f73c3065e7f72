// HTTPS: a self-signed certificate made in the test (self_signed.h), TLS
// 1.2 and later only, Strict-Transport-Security on every response, the
// handshake under header_timeout, and certificate files that cannot be used
// refused with an error that names them and quotes nothing of them.
#include <openssl/ssl.h>

#include <filesystem>
#include <fstream>

#include "self_signed.h"
#include "server_fixture.h"
#include "testing/temp_dir.h"

namespace leasehold::server::testing {
namespace {

class TlsTest : public ServerFixture {
 protected:
  void SetUp() override {
    pair_ = make_self_signed();
    cert_file_ = write("cert.pem", pair_.cert_pem);
    key_file_ = write("key.pem", pair_.key_pem);
  }

  std::string write(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

  ServerOptions tls_options(ServerLimits limits = test_limits()) {
    ServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.limits = limits;
    options.tls_cert_file = cert_file_;
    options.tls_key_file = key_file_;
    return options;
  }

  Status start_status(const std::string& cert_file, const std::string& key_file) {
    ServerOptions options = tls_options();
    options.tls_cert_file = cert_file;
    options.tls_key_file = key_file;
    return Server::start(options, router_, hooks()).status();
  }

  const leasehold::testing::TempDir tmp_{"leasehold-tls-"};
  const std::string dir_ = tmp_.string();
  std::string cert_file_, key_file_;
  SelfSigned pair_;
};

TEST_F(TlsTest, ServesHttpsWithStrictTransportSecurity) {
  router_.add(
      "GET", "/hello",
      [](Request& r) {
        return Response{.status = 200, .headers = {}, .body = r.tls ? "tls" : "plain"};
      },
      kInline);
  start_with(tls_options());
  Client client(port(), pair_.cert_pem);
  ASSERT_TRUE(client.tls_ok());
  for (int i = 0; i < 2; ++i) {  // and keeps the connection alive
    auto response = client.get("/hello");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "tls");
    EXPECT_EQ(response->header("strict-transport-security"), "max-age=31536000");
    EXPECT_EQ(response->header("x-frame-options"), "DENY");
  }
  auto missing = client.get("/missing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->header("strict-transport-security"), "max-age=31536000");
}

TEST_F(TlsTest, RefusesTls11) {
  start_with(tls_options());
  Client old(port(), pair_.cert_pem, TLS1_1_VERSION);
  EXPECT_FALSE(old.tls_ok());
  Client tls12(port(), pair_.cert_pem, TLS1_2_VERSION);
  EXPECT_TRUE(tls12.tls_ok());
}

TEST_F(TlsTest, AClientThatNeverCompletesTheHandshakeIsCutOffAtHeaderTimeout) {
  ServerLimits limits = test_limits();
  limits.header_timeout = std::chrono::milliseconds(200);
  start_with(tls_options(limits));
  Client silent(port());  // plain TCP: no ClientHello
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(silent.wait_closed());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
  Client plain_http(port());  // HTTP to the HTTPS port: no HTTP answer
  ASSERT_TRUE(plain_http.send(get_request("/")));
  EXPECT_TRUE(plain_http.wait_closed());
  EXPECT_EQ(plain_http.received().find("HTTP/1.1"), std::string::npos);
}

TEST_F(TlsTest, FilesThatCannotBeUsedAreNamedNotQuoted) {
  const std::string missing = dir_ + "/missing.pem";
  Status status = start_status(missing, key_file_);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find(missing), std::string::npos) << status.message();

  const std::string garbage =
      write("garbage.pem",
            "-----BEGIN CERTIFICATE-----\nU0VDUkVUU0VDUkVU c2VjcmV0 SECRETSECRET\n"
            "-----END CERTIFICATE-----\n");
  for (auto [cert, key] : {std::pair{garbage, key_file_}, std::pair{cert_file_, garbage}}) {
    status = start_status(cert, key);
    EXPECT_EQ(status.code(), Code::kInvalidArgument);
    EXPECT_NE(status.message().find(garbage), std::string::npos) << status.message();
    EXPECT_EQ(status.message().find("SECRET"), std::string::npos) << status.message();
    EXPECT_EQ(status.message().find("U0VD"), std::string::npos) << status.message();
  }
  // The key and the certificate swapped, and a key of another certificate.
  EXPECT_EQ(start_status(key_file_, cert_file_).code(), Code::kInvalidArgument);
  const std::string other_key = write("other-key.pem", make_self_signed().key_pem);
  status = start_status(cert_file_, other_key);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find(other_key), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("mismatch"), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find("PRIVATE KEY"), std::string::npos) << status.message();
  // One file without the other.
  EXPECT_EQ(start_status(cert_file_, "").code(), Code::kInvalidArgument);
}

// The streamed bodies over TLS: an upload into a file, and a range of a
// file back.
TEST_F(TlsTest, UploadsAndFileRangesWorkOverTls) {
  std::filesystem::create_directory(dir_ + "/uploads");
  std::string data(300'000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 7 + i / 300) & 0xff);
  router_.add("POST", "/upload",
              [this](Request& r) {
                std::filesystem::rename(r.body_file, dir_ + "/kept");
                return Response{.status = 204, .headers = {}, .body = {}};
              },
              {.access = Access::kPublic,
               .body_bytes_max = 1024 * 1024,
               .blocking = false,
               .upload_dir = dir_ + "/uploads"});
  router_.add(
      "GET", "/kept",
      [this](Request&) {
        Response response;
        response.file_path = dir_ + "/kept";
        return response;
      },
      kInline);
  start_with(tls_options());
  Client client(port(), pair_.cert_pem);
  ASSERT_TRUE(client.tls_ok());
  ASSERT_TRUE(client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          std::to_string(data.size()) + "\r\n\r\n" + data));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 204);
  response = client.get("/kept", "Range: bytes=100000-\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 206);
  EXPECT_EQ(response->header("content-range"), "bytes 100000-299999/300000");
  EXPECT_TRUE(response->body == data.substr(100'000));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ + "/uploads"), {}), 0);
}

}  // namespace
}  // namespace leasehold::server::testing
