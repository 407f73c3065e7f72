// The credentials chain (aws/credentials.h) against endpoints on loopback
// that speak each source's documented protocol: STS's query API with XML
// replies, EC2's IMDSv2 (token, role, credentials), the container endpoint
// with its token file; credential_process as a script; and the order in
// which the chain takes them. Every environment here disables EC2's metadata
// service or points it at a FakeEndpoint, so that no test sends a packet
// off this machine.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "aws/credentials.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"
#include "tests/aws/fake_endpoint.h"

namespace leasehold::aws {
namespace {

using std::chrono::minutes;
using testing::FakeEndpoint;
using testing::FakeReply;
using testing::FakeRequest;
using Vars = std::map<std::string, std::string>;

constexpr int64_t kStartMs = 1'800'000'000'000;

// An environment with nothing of the real one: no HOME (so no ~/.aws), and
// EC2's metadata service disabled unless the test names an endpoint for it.
EnvLookup env_of(Vars vars) {
  if (!vars.contains("AWS_EC2_METADATA_SERVICE_ENDPOINT")) {
    vars.emplace("AWS_EC2_METADATA_DISABLED", "true");
  }
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

std::string iso8601(WallTime t) {
  const time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

std::string credentials_json(const std::string& key, WallTime expires) {
  return R"({"Code":"Success","AccessKeyId":")" + key + R"(","SecretAccessKey":"SECRET-)" + key +
         R"(","Token":"TOKEN-)" + key + R"(","Expiration":")" + iso8601(expires) + R"("})";
}

std::string sts_xml(const std::string& action, const std::string& key, WallTime expires) {
  return "<" + action + "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><" + action +
         "Result><Credentials><AccessKeyId>" + key + "</AccessKeyId><SecretAccessKey>SECRET-" +
         key + "</SecretAccessKey><SessionToken>TOKEN-" + key + "</SessionToken><Expiration>" +
         iso8601(expires).substr(0, 19) + ".123Z</Expiration></Credentials></" + action +
         "Result></" + action + "Response>";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

struct Fixture {
  std::shared_ptr<SimulatedClock> clock = std::make_shared<SimulatedClock>(kStartMs);
  testing::TempDir dir{"leasehold-creds-"};

  CredentialsOptions options() const {
    CredentialsOptions o;
    o.clock = clock;
    o.container_attempts = 1;
    o.container_retry_pause = Duration::zero();
    return o;
  }
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = dir.file(name);
    write_file(path, text);
    return path;
  }
};

// ---------------------------------------------------------------- EC2 (IMDSv2)

FakeReply imds_answer(const FakeRequest& r, const std::string& key, WallTime expires) {
  if (r.method == "PUT" && r.target == "/latest/api/token")
    return {200, "IMDS-TOKEN", "text/plain"};
  if (r.header("x-aws-ec2-metadata-token") != "IMDS-TOKEN") return {401, ""};
  if (r.target == "/latest/meta-data/iam/security-credentials/") return {200, "web-role\n"};
  if (r.target == "/latest/meta-data/iam/security-credentials/web-role") {
    return {200, credentials_json(key, expires)};
  }
  return {404, ""};
}

TEST(CredentialsChain, Imdsv2TokenThenRoleThenCredentials) {
  Fixture f;
  const WallTime expires = f.clock->wall_now() + std::chrono::hours(6);
  FakeEndpoint imds([&](const FakeRequest& r) { return imds_answer(r, "AKIMDS", expires); });
  auto source =
      default_credentials(env_of({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url()}}), f.options());
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto c = (*source)->get();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->access_key_id, "AKIMDS");
  EXPECT_EQ(c->secret_access_key, "SECRET-AKIMDS");
  EXPECT_EQ(c->session_token, "TOKEN-AKIMDS");
  const auto requests = imds.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[0].header("x-aws-ec2-metadata-token-ttl-seconds"), "21600");
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].target, "/latest/meta-data/iam/security-credentials/");
  EXPECT_EQ(requests[2].target, "/latest/meta-data/iam/security-credentials/web-role");
  EXPECT_EQ(requests[2].header("x-aws-ec2-metadata-token"), "IMDS-TOKEN");
}

TEST(CredentialsChain, ImdsWithoutTokensFallsBackToV1UnlessV1IsDisabled) {
  Fixture f;
  const WallTime expires = f.clock->wall_now() + std::chrono::hours(6);
  FakeEndpoint imds([&](const FakeRequest& r) -> FakeReply {
    if (r.method == "PUT") return {403, ""};
    if (r.target.ends_with("/security-credentials/")) return {200, "v1-role"};
    return {200, credentials_json("AKV1", expires)};
  });
  auto v1 =
      default_credentials(env_of({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url()}}), f.options());
  ASSERT_TRUE(v1.ok()) << v1.status().to_string();
  EXPECT_EQ((*v1)->get()->access_key_id, "AKV1");
  EXPECT_TRUE(imds.requests()[1].header("x-aws-ec2-metadata-token").empty());
  auto refused = default_credentials(env_of({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url()},
                                             {"AWS_EC2_METADATA_V1_DISABLED", "true"}}),
                                     f.options());
  EXPECT_EQ(refused.status().code(), Code::kUnavailable);
}

TEST(CredentialsChain, OffEc2TheChainEndsWithinTheMetadataTimeout) {
  Fixture f;
  testing::Gate never;
  FakeEndpoint silent([&](const FakeRequest&) {
    never.wait();
    return FakeReply{};
  });
  const auto start = std::chrono::steady_clock::now();
  auto source = default_credentials(env_of({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", silent.url()}}),
                                    f.options());
  const auto took = std::chrono::steady_clock::now() - start;
  never.open();
  EXPECT_EQ(source.status().code(), Code::kUnavailable);
  EXPECT_NE(source.status().message().find("no AWS credentials"), std::string::npos);
  EXPECT_LT(took, std::chrono::seconds(5)) << "the metadata service's timeout is 1 s";
  auto disabled = default_credentials(env_of({}), f.options());
  EXPECT_EQ(disabled.status().code(), Code::kUnavailable);
  EXPECT_NE(disabled.status().message().find("AWS_EC2_METADATA_DISABLED"), std::string::npos);
}

// ---------------------------------------------------------------- container

TEST(CredentialsChain, ContainerTokenFileIsReadAtEachFetch) {
  Fixture f;
  std::string key = "AKC1";
  FakeEndpoint agent([&](const FakeRequest&) {
    return FakeReply{200, credentials_json(key, f.clock->wall_now() + std::chrono::hours(1))};
  });
  const std::string token_file = f.file("token", "token-one");
  auto source = default_credentials(
      env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", agent.url() + "/v1/credentials"},
              {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_file}}),
      f.options());
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  ASSERT_EQ((*source)->get()->access_key_id, "AKC1");
  write_file(token_file, "token-two\n");  // rotated by the agent
  key = "AKC2";
  f.clock->advance(minutes(50));  // past the advisory and mandatory windows
  ASSERT_EQ((*source)->get()->access_key_id, "AKC2");
  const auto requests = agent.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, "/v1/credentials");
  EXPECT_EQ(requests[0].header("authorization"), "token-one");
  EXPECT_EQ(requests[0].header("accept"), "application/json");
  EXPECT_EQ(requests[1].header("authorization"), "token-two");
}

TEST(CredentialsChain, ContainerHostsAreThoseAwsDocuments) {
  for (const char* url : {"http://169.254.170.23/v1/credentials", "http://[fd00:ec2::23]/v1/c",
                          "http://localhost:1/x", "https://creds.example.com/x"}) {
    auto ok = container_credentials(env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", url}}));
    EXPECT_TRUE(ok.ok() && ok->has_value()) << url << ": " << ok.status().to_string();
  }
  auto relative =
      container_credentials(env_of({{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/creds"}}));
  EXPECT_TRUE(relative.ok() && relative->has_value()) << "on 169.254.170.2";
  auto foreign =
      container_credentials(env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/x"}}));
  EXPECT_EQ(foreign.status().code(), Code::kInvalidArgument);
  auto none = container_credentials(env_of({}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(CredentialsChain, ContainerIsAskedAgainAfterAFailure) {
  Fixture f;
  int answers = 0;
  FakeEndpoint agent([&](const FakeRequest&) {
    if (++answers < 3) return FakeReply{500, "{}"};
    return FakeReply{200, credentials_json("AKRETRY", f.clock->wall_now() + std::chrono::hours(1))};
  });
  CredentialsOptions o = f.options();
  o.container_attempts = 3;
  auto source = container_credentials(
      env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", agent.url() + "/c"}}), o);
  ASSERT_TRUE(source.ok() && source->has_value());
  auto c = (**source)->get();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->access_key_id, "AKRETRY");
  EXPECT_EQ(agent.request_count(), 3u);
}

// ---------------------------------------------------------------- refresh

// The endpoint stalls while one refresh is pending: callers in the advisory
// window are served the current credentials at once; callers in the
// mandatory window wait for that one fetch and get its result.
TEST(CredentialsChain, ARefreshInProgressBlocksNoCallerUntilTheMandatoryWindow) {
  Fixture f;
  testing::Gate gate;
  std::atomic<bool> stall{false};
  std::atomic<int> served{0};
  FakeEndpoint agent([&](const FakeRequest&) {
    if (stall) gate.wait();
    const int n = ++served;
    return FakeReply{200, credentials_json("AK" + std::to_string(n),
                                           f.clock->wall_now() + std::chrono::hours(1))};
  });
  CredentialsOptions o = f.options();
  o.container_timeout = std::chrono::seconds(60);  // the stall ends when the test says
  auto source = container_credentials(
      env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", agent.url() + "/c"}}), o);
  ASSERT_TRUE(source.ok() && source->has_value());
  CredentialsSource& creds = ***source;
  ASSERT_EQ(creds.get()->access_key_id, "AK1");

  stall = true;
  f.clock->advance(minutes(47));  // 13 minutes left: advisory window
  std::chrono::steady_clock::duration slowest{};
  for (int i = 0; i < 20; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto c = creds.get();
    slowest = std::max(slowest, std::chrono::steady_clock::now() - start);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->access_key_id, "AK1");
  }
  ASSERT_TRUE(agent.wait_for_requests(2)) << "the background refresh did not start";
  // The stall lasts as long as the 60 s timeout would let it; the callers
  // must not have noticed it.
  EXPECT_LT(slowest, std::chrono::seconds(2));
  EXPECT_EQ(agent.request_count(), 2u) << "one refresh for twenty callers";

  f.clock->advance(minutes(5));  // 8 minutes left: mandatory window
  std::vector<std::future<Result<Credentials>>> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(std::async(std::launch::async, [&] { return creds.get(); }));
  }
  gate.open();
  for (auto& w : waiting) {
    auto c = w.get();
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->access_key_id, "AK2");
  }
  EXPECT_EQ(agent.request_count(), 2u) << "the waiting callers shared the pending fetch";
}

TEST(CredentialsChain, AFailedRefreshServesTheOldCredentialsUntilTheyExpire) {
  Fixture f;
  std::atomic<int> status{200};
  FakeEndpoint agent([&](const FakeRequest&) {
    return FakeReply{status, credentials_json("AKOLD", f.clock->wall_now() + minutes(60))};
  });
  auto source = container_credentials(
      env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", agent.url() + "/c"}}), f.options());
  ASSERT_TRUE(source.ok() && source->has_value());
  ASSERT_TRUE((**source)->get().ok());
  status = 500;
  f.clock->advance(minutes(55));  // mandatory window: waits for a fetch, which fails
  auto stale = (**source)->get();
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->access_key_id, "AKOLD");
  f.clock->advance(minutes(6));  // past the expiry
  auto expired = (**source)->get();
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().code(), Code::kUnavailable);
  EXPECT_EQ(expired.status().message().find("SECRET"), std::string::npos);
}

// ---------------------------------------------------------------- STS

struct Sts {
  explicit Sts(Fixture& f)
      : endpoint([&f](const FakeRequest& r) {
          const std::string action = r.form()["Action"];
          const std::string key =
              action == "AssumeRole"
                  ? "AKROLE" + r.form()["RoleArn"].substr(r.form()["RoleArn"].size() - 1)
                  : "AKWEB";
          return FakeReply{200, sts_xml(action, key, f.clock->wall_now() + std::chrono::hours(1)),
                           "text/xml"};
        }) {}
  FakeEndpoint endpoint;
};

TEST(CredentialsChain, AssumeRoleThroughASourceProfileIsSignedWithItsKeys) {
  Fixture f;
  Sts sts(f);
  const std::string config = f.file(
      "config",
      "[profile app]\nrole_arn = arn:aws:iam::123456789012:role/app1\nsource_profile = base\n"
      "role_session_name = lh-test\nexternal_id = ext-7\nduration_seconds = 1800\n"
      "region = eu-west-1\n");
  const std::string credentials =
      f.file("credentials",
             "[base]\naws_access_key_id = AKBASE\naws_secret_access_key = SB\n"
             "aws_session_token = TBASE\n");
  auto source = default_credentials(env_of({{"AWS_CONFIG_FILE", config},
                                            {"AWS_SHARED_CREDENTIALS_FILE", credentials},
                                            {"AWS_PROFILE", "app"},
                                            {"AWS_ENDPOINT_URL_STS", sts.endpoint.url()}}),
                                    f.options());
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  EXPECT_EQ(sts.endpoint.request_count(), 0u) << "AssumeRole waits for the first get()";
  auto c = (*source)->get();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->access_key_id, "AKROLE1");
  EXPECT_EQ(c->session_token, "TOKEN-AKROLE1");
  const FakeRequest r = sts.endpoint.requests().at(0);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/");
  EXPECT_EQ(r.header("content-type"), "application/x-www-form-urlencoded; charset=utf-8");
  EXPECT_EQ(r.form(),
            (std::map<std::string, std::string>{{"Action", "AssumeRole"},
                                                {"Version", "2011-06-15"},
                                                {"RoleArn", "arn:aws:iam::123456789012:role/app1"},
                                                {"RoleSessionName", "lh-test"},
                                                {"ExternalId", "ext-7"},
                                                {"DurationSeconds", "1800"}}));
  EXPECT_TRUE(r.header("authorization").starts_with("AWS4-HMAC-SHA256 Credential=AKBASE/"));
  EXPECT_NE(r.header("authorization").find("/eu-west-1/sts/aws4_request"), std::string::npos);
  EXPECT_EQ(r.header("x-amz-security-token"), "TBASE");
}

TEST(CredentialsChain, RolesChainThroughProfilesAndACycleIsRefused) {
  Fixture f;
  Sts sts(f);
  const std::string config =
      f.file("config",
             "[profile top]\nrole_arn = arn:aws:iam::1:role/r2\nsource_profile = middle\n"
             "[profile middle]\nrole_arn = arn:aws:iam::1:role/r1\nsource_profile = base\n"
             "[profile base]\naws_access_key_id = AKBASE\naws_secret_access_key = SB\n"
             "[profile loop-a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = loop-b\n"
             "[profile loop-b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = loop-a\n"
             "[profile self]\nrole_arn = arn:aws:iam::1:role/s\nsource_profile = self\n"
             "aws_access_key_id = AKSELF\naws_secret_access_key = SS\n"
             "[profile missing]\nrole_arn = arn:aws:iam::1:role/m\nsource_profile = nowhere\n"
             "[profile both]\nrole_arn = arn:aws:iam::1:role/m\nsource_profile = base\n"
             "credential_source = Environment\n");
  const auto env_for = [&](const std::string& profile) {
    return env_of({{"AWS_CONFIG_FILE", config},
                   {"AWS_PROFILE", profile},
                   {"AWS_REGION", "us-west-2"},
                   {"AWS_ENDPOINT_URL", sts.endpoint.url()}});
  };
  auto top = default_credentials(env_for("top"), f.options());
  ASSERT_TRUE(top.ok()) << top.status().to_string();
  auto c = (*top)->get();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->access_key_id, "AKROLE2");
  const auto requests = sts.endpoint.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].form()["RoleArn"], "arn:aws:iam::1:role/r1");
  EXPECT_TRUE(requests[0].header("authorization").find("Credential=AKBASE/") != std::string::npos);
  EXPECT_EQ(requests[1].form()["RoleArn"], "arn:aws:iam::1:role/r2");
  EXPECT_TRUE(requests[1].header("authorization").find("Credential=AKROLE1/") != std::string::npos);
  EXPECT_TRUE(requests[1].form()["RoleSessionName"].starts_with("leasehold-session-"));

  auto self = default_credentials(env_for("self"), f.options());
  ASSERT_TRUE(self.ok()) << self.status().to_string();
  EXPECT_EQ((*self)->get()->access_key_id, "AKROLEs");

  for (const char* bad : {"loop-a", "missing", "both"}) {
    auto refused = default_credentials(env_for(bad), f.options());
    EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_NE(default_credentials(env_for("loop-a"), f.options()).status().message().find("cycle"),
            std::string::npos);
}

TEST(CredentialsChain, CredentialSourceTakesTheNamedProvider) {
  Fixture f;
  Sts sts(f);
  const WallTime expires = f.clock->wall_now() + std::chrono::hours(6);
  FakeEndpoint imds([&](const FakeRequest& r) { return imds_answer(r, "AKINSTANCE", expires); });
  FakeEndpoint agent([&](const FakeRequest&) {
    return FakeReply{200, credentials_json("AKTASK", expires)};
  });
  const std::string config = f.file("config",
                                    "[profile env]\nrole_arn = arn:aws:iam::1:role/e\n"
                                    "credential_source = Environment\n"
                                    "[profile ec2]\nrole_arn = arn:aws:iam::1:role/i\n"
                                    "credential_source = Ec2InstanceMetadata\n"
                                    "[profile ecs]\nrole_arn = arn:aws:iam::1:role/c\n"
                                    "credential_source = EcsContainer\n"
                                    "[profile odd]\nrole_arn = arn:aws:iam::1:role/o\n"
                                    "credential_source = Somewhere\n");
  struct Case {
    std::string profile;
    Vars vars;
    std::string signer;  // the source's key, which signs AssumeRole
    std::string role_key;
  };
  const std::vector<Case> cases = {
      {"ec2", {{"AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url()}}, "AKINSTANCE", "AKROLEi"},
      {"ecs", {{"AWS_CONTAINER_CREDENTIALS_FULL_URI", agent.url() + "/c"}}, "AKTASK", "AKROLEc"},
  };
  for (const Case& c : cases) {
    Vars vars = c.vars;
    vars.insert({{"AWS_CONFIG_FILE", config},
                 {"AWS_PROFILE", c.profile},
                 {"AWS_ENDPOINT_URL_STS", sts.endpoint.url()}});
    auto source = default_credentials(env_of(vars), f.options());
    ASSERT_TRUE(source.ok()) << c.profile << ": " << source.status().to_string();
    auto got = (*source)->get();
    ASSERT_TRUE(got.ok()) << c.profile << ": " << got.status().to_string();
    EXPECT_EQ(got->access_key_id, c.role_key);
    EXPECT_NE(sts.endpoint.requests().back().header("authorization").find(c.signer + "/"),
              std::string::npos)
        << c.profile;
  }
  auto odd = default_credentials(env_of({{"AWS_CONFIG_FILE", config}, {"AWS_PROFILE", "odd"}}),
                                 f.options());
  EXPECT_EQ(odd.status().code(), Code::kInvalidArgument);
}

TEST(CredentialsChain, WebIdentityIsUnsignedAndRereadsItsToken) {
  Fixture f;
  Sts sts(f);
  const std::string token = f.file("web-token", "eyJ.first");
  auto source = default_credentials(env_of({{"AWS_WEB_IDENTITY_TOKEN_FILE", token},
                                            {"AWS_ROLE_ARN", "arn:aws:iam::1:role/pod"},
                                            {"AWS_ROLE_SESSION_NAME", "pod-7"},
                                            {"AWS_REGION", "eu-central-1"},
                                            {"AWS_ENDPOINT_URL_STS", sts.endpoint.url()}}),
                                    f.options());
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto c = (*source)->get();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->access_key_id, "AKWEB");
  write_file(token, "eyJ.second");
  f.clock->advance(minutes(55));
  ASSERT_TRUE((*source)->get().ok());
  const auto requests = sts.endpoint.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].form(),
            (std::map<std::string, std::string>{{"Action", "AssumeRoleWithWebIdentity"},
                                                {"Version", "2011-06-15"},
                                                {"RoleArn", "arn:aws:iam::1:role/pod"},
                                                {"RoleSessionName", "pod-7"},
                                                {"WebIdentityToken", "eyJ.first"}}));
  EXPECT_TRUE(requests[0].header("authorization").empty());
  EXPECT_EQ(requests[1].form()["WebIdentityToken"], "eyJ.second");
}

TEST(CredentialsChain, StsRefusalIsUnauthenticatedAndNamesTheCode) {
  Fixture f;
  FakeEndpoint sts([](const FakeRequest&) {
    return FakeReply{403,
                     "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>"
                     "not authorized to perform sts:AssumeRole</Message></Error></ErrorResponse>",
                     "text/xml"};
  });
  const std::string config =
      f.file("config",
             "[default]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = keys\n"
             "[profile keys]\naws_access_key_id = AK\naws_secret_access_key = TOPSECRET\n");
  auto source = default_credentials(
      env_of({{"AWS_CONFIG_FILE", config}, {"AWS_ENDPOINT_URL_STS", sts.url()}}), f.options());
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto c = (*source)->get();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnauthenticated);
  EXPECT_NE(c.status().message().find("AccessDenied"), std::string::npos);
  EXPECT_EQ(c.status().message().find("TOPSECRET"), std::string::npos);
}

// ---------------------------------------------------------------- process and order

std::string script(Fixture& f, const std::string& name, const std::string& body) {
  const std::string path = f.file(name, "#!/bin/sh\n" + body);
  ::chmod(path.c_str(), 0700);
  return path;
}

TEST(CredentialsChain, CredentialProcessOutputIsParsedAndNeverQuoted) {
  Fixture f;
  const std::string good =
      script(f, "good.sh",
             "echo \"$1\" >> \"$(dirname \"$0\")/calls\"\n"
             "echo '{\"Version\": 1, \"AccessKeyId\": \"AKPROC\", \"SecretAccessKey\": \"SP\", "
             "\"SessionToken\": \"TP\", \"Expiration\": \"2027-01-16T08:00:00Z\"}'\n");
  const std::string bad =
      script(f, "bad.sh", "echo '{\"Version\": 2, \"SecretAccessKey\": \"LEAK\"}'\n");
  const std::string fails = script(f, "fails.sh", "echo LEAKED-SECRET; exit 3\n");
  const std::string config = f.file("config", "[default]\ncredential_process = " + good +
                                                  " 'an arg'\n"
                                                  "[profile bad]\ncredential_process = " +
                                                  bad +
                                                  "\n"
                                                  "[profile fails]\ncredential_process = " +
                                                  fails + "\n");
  auto source = default_credentials(env_of({{"AWS_CONFIG_FILE", config}}), f.options());
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto c = (*source)->get();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->access_key_id, "AKPROC");
  EXPECT_EQ(c->secret_access_key, "SP");
  EXPECT_EQ(c->session_token, "TP");
  std::ifstream calls(f.dir.file("calls"));
  std::string first_arg;
  std::getline(calls, first_arg);
  EXPECT_EQ(first_arg, "an arg");
  for (const char* profile : {"bad", "fails"}) {
    auto s = default_credentials(env_of({{"AWS_CONFIG_FILE", config}, {"AWS_PROFILE", profile}}),
                                 f.options());
    ASSERT_TRUE(s.ok());
    auto refused = (*s)->get();
    ASSERT_FALSE(refused.ok()) << profile;
    EXPECT_EQ(refused.status().message().find("LEAK"), std::string::npos) << profile;
    EXPECT_NE(refused.status().message().find("credential_process"), std::string::npos);
  }
}

TEST(CredentialsChain, TheOrderIsBotocores) {
  Fixture f;
  const std::string process = script(
      f, "p.sh",
      "echo '{\"Version\": 1, \"AccessKeyId\": \"AKPROCESS\", \"SecretAccessKey\": \"S\"}'\n");
  const std::string config =
      f.file("config", "[default]\ncredential_process = " + process +
                           "\naws_access_key_id = AKCONFIG\naws_secret_access_key = S\n"
                           "[profile keys-only]\naws_access_key_id = AKCONFIGONLY\n"
                           "aws_secret_access_key = S\n");
  const std::string credentials =
      f.file("credentials", "[default]\naws_access_key_id = AKFILE\naws_secret_access_key = S\n");
  const auto key = [&](Vars vars) {
    vars.emplace("AWS_CONFIG_FILE", config);
    auto source = default_credentials(env_of(vars), f.options());
    if (!source.ok()) return source.status().to_string();
    auto c = (*source)->get();
    return c.ok() ? c->access_key_id : c.status().to_string();
  };
  EXPECT_EQ(key({{"AWS_ACCESS_KEY_ID", "AKENV"},
                 {"AWS_SECRET_ACCESS_KEY", "S"},
                 {"AWS_SHARED_CREDENTIALS_FILE", credentials}}),
            "AKENV");
  EXPECT_EQ(key({{"AWS_SHARED_CREDENTIALS_FILE", credentials}}), "AKFILE");
  EXPECT_EQ(key({}), "AKPROCESS") << "credential_process before the config file's keys";
  EXPECT_EQ(key({{"AWS_PROFILE", "keys-only"}}), "AKCONFIGONLY");
  EXPECT_NE(key({{"AWS_PROFILE", "nobody"}}).find("InvalidArgument"), std::string::npos);
}

}  // namespace
}  // namespace leasehold::aws
