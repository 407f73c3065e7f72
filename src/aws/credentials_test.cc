// The parts of the credentials chain that need no network: the shared files,
// the wire formats of STS and credential_process, the region, STS's
// endpoint, and the refreshing cache on a simulated clock. The sources
// against endpoints are in tests/aws/credentials_chain_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <thread>

#include "aws/credentials_internal.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"

namespace leasehold::aws::credentials_internal {
namespace {

using std::chrono::minutes;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(CredentialsFiles, ConfigSectionsAreProfilesOnlyWithTheirPrefix) {
  const std::string text =
      "# comment\n[default]\nregion = eu-west-1\n"
      "[profile dev]\nRole_Arn = arn:aws:iam::1:role/dev\n; comment\n"
      "s3 =\n  addressing_style = path\nsource_profile: base\n"
      "[sso-session corp]\nsso_region = us-east-1\n[plain]\nkey = v\n";
  auto config = parse_profiles(text, /*config_file=*/true);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->size(), 2u);
  EXPECT_EQ(config->at("default").at("region"), "eu-west-1");
  EXPECT_EQ(config->at("dev").at("role_arn"), "arn:aws:iam::1:role/dev");
  EXPECT_EQ(config->at("dev").at("source_profile"), "base");
  EXPECT_FALSE(config->at("dev").contains("addressing_style"));
  auto credentials = parse_profiles(text, /*config_file=*/false);
  ASSERT_TRUE(credentials.ok());
  EXPECT_TRUE(credentials->contains("profile dev"));
  EXPECT_TRUE(credentials->contains("plain"));
  EXPECT_EQ(parse_profiles("[a]\nnot a setting\n", true).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(parse_profiles("key = before any section\n", true).status().code(),
            Code::kInvalidArgument);
}

TEST(CredentialsFiles, TheCredentialsFileWinsKeyByKey) {
  const testing::TempDir dir("leasehold-config-");
  std::ofstream(dir.file("config")) << "[profile p]\nregion = eu-west-1\naws_access_key_id = A\n";
  std::ofstream(dir.file("credentials")) << "[p]\naws_access_key_id = B\n";
  auto config = load_shared_config(env_of({{"AWS_CONFIG_FILE", dir.file("config")},
                                           {"AWS_SHARED_CREDENTIALS_FILE", dir.file("credentials")},
                                           {"AWS_PROFILE", "p"}}));
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->profile, "p");
  EXPECT_EQ(config->find("p")->at("aws_access_key_id"), "B");
  EXPECT_EQ(config->find("p")->at("region"), "eu-west-1");
  auto home = load_shared_config(env_of({{"HOME", dir.string()}}));
  ASSERT_TRUE(home.ok());
  EXPECT_EQ(home->config_path, dir.string() + "/.aws/config");
  EXPECT_TRUE(home->profiles.empty()) << "missing files are empty";
}

TEST(CredentialsRegion, EnvironmentThenProfileAndUnsetIsAnError) {
  const testing::TempDir dir("leasehold-region-");
  std::ofstream(dir.file("config"))
      << "[default]\nregion = ap-south-1\n[profile x]\nregion = Bad!\n";
  const std::string config = dir.file("config");
  EXPECT_EQ(*resolve_region(env_of({{"AWS_REGION", "eu-north-1"},
                                    {"AWS_DEFAULT_REGION", "us-west-2"},
                                    {"AWS_CONFIG_FILE", config}})),
            "eu-north-1");
  EXPECT_EQ(*resolve_region(env_of({{"AWS_DEFAULT_REGION", "us-west-2"}})), "us-west-2");
  EXPECT_EQ(*resolve_region(env_of({{"AWS_CONFIG_FILE", config}})), "ap-south-1");
  auto unset = resolve_region(env_of({{"HOME", dir.string()}}));
  EXPECT_EQ(unset.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(unset.status().message().find("AWS_REGION"), std::string::npos);
  EXPECT_EQ(
      resolve_region(env_of({{"AWS_CONFIG_FILE", config}, {"AWS_PROFILE", "x"}})).status().code(),
      Code::kInvalidArgument);
}

TEST(CredentialsWire, Iso8601WithFractionsAndOffsets) {
  const WallTime t = *parse_iso8601_utc("2026-11-29T21:00:00Z");
  EXPECT_EQ(to_unix_ms(t), 1'795'986'000'000);
  EXPECT_EQ(to_unix_ms(*parse_iso8601_utc("2026-11-29T21:00:00.250Z")), 1'795'986'000'250);
  EXPECT_EQ(parse_iso8601_utc("2026-11-29T21:00:00+00:00"), t);
  for (const char* bad : {"", "2026-11-29 21:00:00Z", "2026-11-29T21:00:00",
                          "2026-11-29T21:00:00.Z", "2026-11-29T21:00:00+01:00"}) {
    EXPECT_FALSE(parse_iso8601_utc(bad).has_value()) << bad;
  }
}

// Found by fuzzing (fuzz/credentials_answers_fuzz.cc): sscanf took signs and
// blanks, timegm() carried a field out of its range into the next, and a
// year far from 1970 overflowed WallTime's nanoseconds.
TEST(CredentialsWire, Iso8601RefusesFieldsOutOfRange) {
  EXPECT_EQ(to_unix_ms(*parse_iso8601_utc("2024-02-29T23:59:59Z")), 1'709'251'199'000);
  for (const char* bad : {"2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
                          "2026-11-29T24:00:00Z", "2026-11-29T21:60:00Z", "+026-11-29T21:00:00Z",
                          "2026-1-029T21:00:00Z", " 2026-11-29T21:00:00Z", "1013-11-29T21:00:00Z",
                          "9999-12-31T23:59:59Z"}) {
    EXPECT_FALSE(parse_iso8601_utc(bad).has_value()) << bad;
  }
}

TEST(CredentialsWire, CommandsSplitAsShlexDoes) {
  EXPECT_EQ(*split_command("/bin/tool  --profile 'a b' \"c \\\"d\\\"\" e\\ f"),
            (std::vector<std::string>{"/bin/tool", "--profile", "a b", "c \"d\"", "e f"}));
  EXPECT_EQ(*split_command("x ''"), (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(split_command("x 'open").status().code(), Code::kInvalidArgument);
}

TEST(CredentialsWire, ProcessOutputVersionOneOnly) {
  auto ok = parse_process_output(
      R"({"Version":1,"AccessKeyId":"AK","SecretAccessKey":"S","SessionToken":"T",)"
      R"("Expiration":"2026-11-29T21:00:00Z"})");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->credentials.session_token, "T");
  EXPECT_EQ(to_unix_ms(*ok->expires), 1'795'986'000'000);
  auto lasting = parse_process_output(R"({"Version":1,"AccessKeyId":"AK","SecretAccessKey":"S"})");
  ASSERT_TRUE(lasting.ok());
  EXPECT_FALSE(lasting->expires.has_value());
  for (const char* bad : {R"({"Version":2,"AccessKeyId":"AK","SecretAccessKey":"HUSH"})",
                          R"({"AccessKeyId":"AK","SecretAccessKey":"HUSH"})",
                          R"({"Version":1,"SecretAccessKey":"HUSH"})", "HUSH"}) {
    auto refused = parse_process_output(bad);
    EXPECT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().message().find("HUSH"), std::string::npos);
  }
}

TEST(CredentialsWire, StsRepliesAndErrors) {
  auto ok = parse_sts_reply(
      200,
      "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA1</AccessKeyId>"
      "<SecretAccessKey>S&amp;1</SecretAccessKey><SessionToken>T1</SessionToken>"
      "<Expiration>2026-11-29T21:00:00.123Z</Expiration></Credentials></AssumeRoleResult>"
      "</AssumeRoleResponse>",
      "AssumeRole");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->credentials.secret_access_key, "S&1");
  EXPECT_EQ(to_unix_ms(*ok->expires), 1'795'986'000'123);
  const auto error = [](int status, const char* code) {
    return parse_sts_reply(status,
                           std::string("<ErrorResponse><Error><Code>") + code +
                               "</Code><Message>why</Message></Error></ErrorResponse>",
                           "AssumeRole")
        .status();
  };
  EXPECT_EQ(error(403, "AccessDenied").code(), Code::kUnauthenticated);
  EXPECT_NE(error(403, "AccessDenied").message().find("AccessDenied: why"), std::string::npos);
  EXPECT_EQ(error(400, "InvalidIdentityToken").code(), Code::kUnauthenticated);
  EXPECT_EQ(error(400, "Throttling").code(), Code::kUnavailable);
  EXPECT_EQ(error(503, "ServiceUnavailable").code(), Code::kUnavailable);
  EXPECT_EQ(parse_sts_reply(200, "<x/>", "AssumeRole").status().code(), Code::kUnavailable);
}

TEST(CredentialsWire, StsEndpointOrder) {
  EXPECT_EQ(sts_endpoint(env_of({}), "eu-west-1").url, "https://sts.eu-west-1.amazonaws.com");
  EXPECT_EQ(sts_endpoint(env_of({}), "cn-north-1").url, "https://sts.cn-north-1.amazonaws.com.cn");
  const StsEndpoint global = sts_endpoint(env_of({}), "");
  EXPECT_EQ(global.url, "https://sts.amazonaws.com");
  EXPECT_EQ(global.region, "us-east-1");
  EXPECT_EQ(sts_endpoint(env_of({{"AWS_ENDPOINT_URL", "http://127.0.0.1:1"},
                                 {"AWS_ENDPOINT_URL_STS", "http://127.0.0.1:2"}}),
                         "eu-west-1")
                .url,
            "http://127.0.0.1:2");
  EXPECT_EQ(sts_endpoint(env_of({{"AWS_ENDPOINT_URL", "http://127.0.0.1:1"}}), "eu-west-1").url,
            "http://127.0.0.1:1");
  EXPECT_EQ(sts_endpoint(env_of({{"AWS_ENDPOINT_URL", "http://127.0.0.1:1"},
                                 {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "TRUE"}}),
                         "eu-west-1")
                .url,
            "https://sts.eu-west-1.amazonaws.com");
}

TEST(ConfiguredEndpointTest, TheServicesOwnVariableComesFirstThenTheSharedOne) {
  const EnvLookup env = env_of({{"AWS_ENDPOINT_URL", "http://127.0.0.1:1"},
                                {"AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:2"}});
  EXPECT_EQ(configured_endpoint(env, "DYNAMODB"), "http://127.0.0.1:2");
  EXPECT_EQ(configured_endpoint(env, "SQS"), "http://127.0.0.1:1");
  EXPECT_EQ(configured_endpoint(env_of({{"AWS_ENDPOINT_URL_S3", ""}}), "S3"), std::nullopt);
  EXPECT_EQ(configured_endpoint(env_of({}), "S3"), std::nullopt);
  EXPECT_EQ(configured_endpoint(env_of({{"AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:3"},
                                        {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"}}),
                                "SQS"),
            std::nullopt);
}

// A fetch that hands out numbered keys expiring an hour after the clock.
struct CountingFetch {
  std::shared_ptr<SimulatedClock> clock = std::make_shared<SimulatedClock>();
  std::atomic<int> calls{0};
  std::atomic<bool> fail{false};
  Duration lifetime = std::chrono::hours(1);

  CredentialsFetch fetch() {
    return [this]() -> Result<ExpiringCredentials> {
      const int n = ++calls;
      if (fail) return unavailable("endpoint down");
      return ExpiringCredentials{{"AK" + std::to_string(n), "S", "T"},
                                 clock->wall_now() + lifetime};
    };
  }
  CredentialsOptions options() const {
    CredentialsOptions o;
    o.clock = clock;
    return o;
  }
};

TEST(CredentialsRefresh, FirstGetWaitsThenWindowsDecide) {
  CountingFetch f;
  auto source = refreshing_source("test", f.fetch(), f.options());
  EXPECT_EQ(f.calls, 0) << "nothing is fetched before the first get()";
  EXPECT_EQ(source->get()->access_key_id, "AK1");
  f.clock->advance(minutes(44));  // 16 minutes left
  EXPECT_EQ(source->get()->access_key_id, "AK1");
  EXPECT_EQ(f.calls, 1);
  f.clock->advance(minutes(2));  // 14 minutes left: advisory, in the background
  EXPECT_EQ(source->get()->access_key_id, "AK1");
  // The background fetch lands soon; then its credentials serve.
  EXPECT_TRUE(testing::eventually([&] { return source->get()->access_key_id == "AK2"; },
                                  std::chrono::seconds(10)));
  f.clock->advance(minutes(5));  // 9 minutes left of AK1, 55 of AK2
  EXPECT_EQ(source->get()->access_key_id, "AK2");
  EXPECT_EQ(f.calls, 2);
}

TEST(CredentialsRefresh, FailuresBackOffAndExpiredCredentialsAreNotServed) {
  CountingFetch f;
  CredentialsOptions o = f.options();
  o.retry_after_failure = std::chrono::seconds(30);
  auto source = refreshing_source("test", f.fetch(), o);
  ASSERT_TRUE(source->get().ok());
  f.fail = true;
  f.clock->advance(minutes(55));  // mandatory window: waits for one failed fetch
  EXPECT_EQ(source->get()->access_key_id, "AK1");
  EXPECT_EQ(source->get()->access_key_id, "AK1");
  EXPECT_EQ(f.calls, 2) << "no second fetch within retry_after_failure";
  f.clock->advance(std::chrono::seconds(31));
  EXPECT_EQ(source->get()->access_key_id, "AK1");
  EXPECT_EQ(f.calls, 3);
  f.clock->advance(minutes(5));  // expired
  auto expired = source->get();
  EXPECT_EQ(expired.status().code(), Code::kUnavailable);
  EXPECT_NE(expired.status().message().find("endpoint down"), std::string::npos);
}

TEST(CredentialsRefresh, ShortLivedCredentialsAreNotFetchedAgainAtOnce) {
  CountingFetch f;
  f.lifetime = minutes(15);  // shorter than the advisory window
  auto source = refreshing_source("test", f.fetch(), f.options());
  ASSERT_TRUE(source->get().ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(source->get().ok());
  EXPECT_EQ(f.calls, 1);
  f.clock->advance(minutes(12));  // 3 minutes left: inside a quarter of the lifetime
  EXPECT_EQ(source->get()->access_key_id, "AK2");
}

TEST(CredentialsRefresh, CredentialsThatNeverExpireAreFetchedOnce) {
  CountingFetch f;
  auto source = refreshing_source(
      "test",
      [&]() -> Result<ExpiringCredentials> {
        ++f.calls;
        return ExpiringCredentials{{"AKSTATIC", "S", ""}, std::nullopt};
      },
      f.options());
  ASSERT_TRUE(source->get().ok());
  f.clock->advance(std::chrono::hours(1000));
  EXPECT_EQ(source->get()->access_key_id, "AKSTATIC");
  EXPECT_EQ(f.calls, 1);
}

}  // namespace
}  // namespace leasehold::aws::credentials_internal
