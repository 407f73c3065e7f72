// `leasehold user ...` as separate processes see it: add, token, passwd,
// list and rm, what they print, their exit codes, passwords on stdin, and
// what reaches the database file.
#include <fstream>

#include "accounts/accounts.h"
#include "leasehold/store.h"
#include "process_util.h"

namespace leasehold::process_test {
namespace {

namespace fs = std::filesystem;

const std::string kPassword = "correct horse battery";

class UserCommandsTest : public BackendTest {
 protected:
  // Runs `leasehold --store URI args...` with `input` on its stdin.
  RunResult lh_stdin(const std::vector<std::string>& args, const std::string& input) {
    const fs::path in = dir() / ("stdin" + std::to_string(inputs_++));
    std::ofstream(in, std::ios::binary) << input;
    std::vector<std::string> argv = {"sh", "-c", "exec \"$@\" < \"$0\"", in.string()};
    for (const std::string& a : cli(args)) argv.push_back(a);
    return run(argv);
  }

  // `user add NAME --display-name DISPLAY [--password-stdin]`, which must
  // succeed; its JSON.
  boost::json::object add(const std::string& name, const std::string& display,
                          const std::optional<std::string>& password = std::nullopt) {
    const RunResult r =
        password ? lh_stdin({"user", "add", name, "--display-name", display, "--password-stdin"},
                            *password + "\n")
                 : lh({"user", "add", name, "--display-name", display});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return parse_object(r.out);
  }

  // `user list`, which must succeed: one object per line.
  std::vector<boost::json::object> list() {
    const RunResult r = lh({"user", "list"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<boost::json::object> users;
    for (const std::string& line : lines_of(r.out)) users.push_back(parse_object(line));
    return users;
  }

  // What signing in with `password` says, through the library on the same
  // store, as `leasehold serve` would.
  Code sign_in(const std::string& name, const std::string& password) {
    auto store = open_store(store_uri());
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    if (!store.ok()) return Code::kInternal;
    RealClock clock;
    SystemRandom random;
    accounts::Accounts accounts(**store, clock, random);
    return accounts.sign_in(name, password, "127.0.0.1").status.code();
  }

 private:
  int inputs_ = 0;
};

TEST_P(UserCommandsTest, AddListTokenPasswdRmRoundTrip) {
  const RunResult added =
      lh_stdin({"user", "add", "ann", "--display-name", "Ann Smith", "--admin", "--password-stdin"},
               kPassword + "\n");
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const auto ann = parse_object(added.out);
  EXPECT_EQ(ann.size(), 4u) << added.out;
  EXPECT_EQ(str(ann, "name"), "ann");
  EXPECT_EQ(str(ann, "display_name"), "Ann Smith");
  EXPECT_EQ(ann.at("admin"), true);
  EXPECT_EQ(str(ann, "token").size(), 64u);
  EXPECT_EQ(added.err, "");
  const auto bob = add("bob", "Bob");
  EXPECT_EQ(bob.at("admin"), false);

  auto users = list();
  ASSERT_EQ(users.size(), 2u);
  EXPECT_EQ(users[0], (boost::json::object{{"name", "ann"},
                                           {"display_name", "Ann Smith"},
                                           {"admin", true},
                                           {"has_password", true}}));
  EXPECT_EQ(
      users[1],
      (boost::json::object{
          {"name", "bob"}, {"display_name", "Bob"}, {"admin", false}, {"has_password", false}}));

  const RunResult token = lh({"user", "token", "ann"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  const auto new_token = parse_object(token.out);
  EXPECT_EQ(new_token.size(), 2u);
  EXPECT_EQ(str(new_token, "name"), "ann");
  EXPECT_EQ(str(new_token, "token").size(), 64u);
  EXPECT_NE(str(new_token, "token"), str(ann, "token"));

  const RunResult passwd =
      lh_stdin({"user", "passwd", "bob", "--password-stdin"}, "bob's passphrase\n");
  ASSERT_EQ(passwd.exit_code, 0) << passwd.err;
  EXPECT_EQ(passwd.out, "");
  EXPECT_EQ(list()[1].at("has_password"), true);
  EXPECT_EQ(sign_in("bob", "bob's passphrase"), Code::kOk);

  const RunResult rm = lh({"user", "rm", "ann"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "");
  users = list();
  ASSERT_EQ(users.size(), 1u);
  EXPECT_EQ(str(users[0], "name"), "bob");
  const RunResult gone = lh({"user", "token", "ann"});
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_NE(gone.err.find("no user named 'ann'"), std::string::npos) << gone.err;
}

TEST_P(UserCommandsTest, TheTokensPrintedAreTheUsersTokens) {
  const auto ann = add("ann", "Ann");
  const std::string second = str(parse_object(lh({"user", "token", "ann"}).out), "token");
  auto store = open_store(store_uri());
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  RealClock clock;
  SystemRandom random;
  accounts::Accounts accounts(**store, clock, random);
  for (const std::string& token : {str(ann, "token"), second}) {
    auto user = accounts.authenticate_token(token);
    ASSERT_TRUE(user.ok()) << user.status().to_string();
    EXPECT_EQ(user->name, "ann");
  }
  ASSERT_EQ(lh({"user", "rm", "ann"}).exit_code, 0);
  EXPECT_EQ(accounts.authenticate_token(second).status().code(), Code::kUnauthenticated);
}

TEST_P(UserCommandsTest, ATakenNameExitsThreeAndChangesNothing) {
  const auto ann = add("ann", "Ann", kPassword);
  const auto before = list();
  const RunResult again =
      lh_stdin({"user", "add", "ann", "--display-name", "Other Ann", "--admin", "--password-stdin"},
               "another password\n");
  EXPECT_EQ(again.exit_code, 3);
  EXPECT_EQ(again.out, "");
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  EXPECT_EQ(list(), before);
  EXPECT_EQ(sign_in("ann", kPassword), Code::kOk);
  EXPECT_EQ(sign_in("ann", "another password"), Code::kUnauthenticated);
}

TEST_P(UserCommandsTest, NamingAUserThatDoesNotExistExitsTwo) {
  add("ann", "Ann");
  for (const auto& args : std::vector<std::vector<std::string>>{{"user", "rm", "nobody"},
                                                                {"user", "token", "nobody"}}) {
    const RunResult r = lh(args);
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("no user named 'nobody'"), std::string::npos) << r.err;
  }
  const RunResult r = lh_stdin({"user", "passwd", "nobody", "--password-stdin"}, kPassword);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no user named 'nobody'"), std::string::npos) << r.err;
  EXPECT_EQ(list().size(), 1u);
}

TEST_P(UserCommandsTest, ThePasswordIsOneLineOfStdinWithoutItsNewline) {
  add("ann", "Ann", "  spaces inside and out  ");
  EXPECT_EQ(sign_in("ann", "  spaces inside and out  "), Code::kOk);
  EXPECT_EQ(sign_in("ann", "  spaces inside and out  \n"), Code::kUnauthenticated);
  // Without a newline at the end, and with more lines after the first.
  ASSERT_EQ(lh_stdin({"user", "passwd", "ann", "--password-stdin"}, "no newline").exit_code, 0);
  EXPECT_EQ(sign_in("ann", "no newline"), Code::kOk);
  ASSERT_EQ(lh_stdin({"user", "passwd", "ann", "--password-stdin"}, "first line\nsecond line\n")
                .exit_code,
            0);
  EXPECT_EQ(sign_in("ann", "first line"), Code::kOk);
  const std::string unicode = "pässwörd ✓";
  ASSERT_EQ(lh_stdin({"user", "passwd", "ann", "--password-stdin"}, unicode + "\n").exit_code, 0);
  EXPECT_EQ(sign_in("ann", unicode), Code::kOk);
}

TEST_P(UserCommandsTest, ABadPasswordOnStdinExitsTwoAndChangesNothing) {
  add("ann", "Ann", kPassword);
  std::string too_long(1025, 'p');
  too_long += '\n';
  for (const std::string& input : std::vector<std::string>{"", "\n", "short\n", too_long}) {
    const RunResult r = lh_stdin({"user", "passwd", "ann", "--password-stdin"}, input);
    EXPECT_EQ(r.exit_code, 2) << input.size() << " bytes";
    EXPECT_NE(r.err.find("--password-stdin"), std::string::npos) << r.err;
    if (input.size() > 1) {
      EXPECT_EQ(r.err.find(input.substr(0, input.size() - 1)), std::string::npos) << r.err;
    }
  }
  EXPECT_EQ(sign_in("ann", kPassword), Code::kOk);
}

INSTANTIATE_TEST_SUITE_P(Backends, UserCommandsTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb), backend_name);

// ---------------------------------------------------------------- SQLite only

struct BadUserCase {
  std::string name;
  std::vector<std::string> args;  // after `leasehold --store sqlite:DIR/leases.db`
  std::string stdin_text;
};

void PrintTo(const BadUserCase& c, std::ostream* os) { *os << c.name; }

class BadUserInputTest : public ProcessTest, public ::testing::WithParamInterface<BadUserCase> {};

TEST_P(BadUserInputTest, ExitsTwoWritesNothingAndEchoesNoPassword) {
  const BadUserCase& c = GetParam();
  const fs::path in = dir() / "stdin";
  std::ofstream(in, std::ios::binary) << c.stdin_text;
  std::vector<std::string> argv = {"sh", "-c", "exec \"$@\" < \"$0\"", in.string()};
  for (const std::string& a : cli(c.args)) argv.push_back(a);
  const RunResult r = run(argv);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("leasehold: ") || r.err.find("--help") != std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("hunter22"), std::string::npos) << "a password was echoed: " << r.err;
  EXPECT_FALSE(fs::exists(db_path())) << "the store was opened";
}

std::vector<BadUserCase> bad_user_cases() {
  const std::vector<std::string> add = {"user", "add"};
  const auto with = [](std::vector<std::string> a, std::vector<std::string> more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  return {
      {"NoUserCommand", {"user"}, ""},
      {"AddUpperCase", with(add, {"Ann", "--display-name", "Ann"}), ""},
      {"AddEmptyName", with(add, {"", "--display-name", "Ann"}), ""},
      {"AddSpaceInName", with(add, {"a b", "--display-name", "Ann"}), ""},
      {"AddLeadingDash", with(add, {"--display-name", "Ann", "--", "-ann"}), ""},
      {"AddNameTooLong", with(add, {std::string(65, 'a'), "--display-name", "Ann"}), ""},
      {"AddNoDisplayName", with(add, {"ann"}), ""},
      {"AddEmptyDisplayName", with(add, {"ann", "--display-name", ""}), ""},
      {"AddDisplayNameTooLong", with(add, {"ann", "--display-name", std::string(101, 'x')}), ""},
      {"AddDisplayNameControl", with(add, {"ann", "--display-name", "A\x01nn"}), ""},
      {"AddDisplayNameNotUtf8", with(add, {"ann", "--display-name", "A\xffnn"}), ""},
      {"AddPasswordArgument", with(add, {"ann", "--display-name", "Ann", "--password", "hunter22"}),
       ""},
      {"AddPasswordArgumentEquals",
       with(add, {"ann", "--display-name", "Ann", "--password=hunter22"}), ""},
      {"AddEmptyStdin", with(add, {"ann", "--display-name", "Ann", "--password-stdin"}), ""},
      {"AddEmptyLine", with(add, {"ann", "--display-name", "Ann", "--password-stdin"}), "\n"},
      {"AddShortPassword", with(add, {"ann", "--display-name", "Ann", "--password-stdin"}),
       "hunter2\n"},
      {"PasswdWithoutStdinFlag", {"user", "passwd", "ann"}, "hunter22\n"},
      {"PasswdBadName", {"user", "passwd", "a/b", "--password-stdin"}, "hunter22\n"},
      {"PasswdArgument", {"user", "passwd", "ann", "--password", "hunter22"}, ""},
      {"TokenBadName", {"user", "token", "ANN"}, ""},
      {"TokenNoName", {"user", "token"}, ""},
      {"RmBadName", {"user", "rm", ".ann"}, ""},
      {"ListWithArgument", {"user", "list", "ann"}, ""},
  };
}

INSTANTIATE_TEST_SUITE_P(Cases, BadUserInputTest, ::testing::ValuesIn(bad_user_cases()),
                         [](const auto& info) { return info.param.name; });

TEST_F(ProcessTest, TokensAndPasswordsNeverReachTheDatabaseFile) {
  const std::string password = "a password to look for";
  const fs::path in = dir() / "stdin";
  std::ofstream(in, std::ios::binary) << password << "\n";
  std::vector<std::string> argv = {"sh", "-c", "exec \"$@\" < \"$0\"", in.string()};
  for (const std::string& a :
       cli({"user", "add", "ann", "--display-name", "Ann", "--password-stdin"})) {
    argv.push_back(a);
  }
  const RunResult added = run(argv);
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const RunResult token = lh({"user", "token", "ann"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  const std::vector<std::string> secrets = {password, str(parse_object(added.out), "token"),
                                            str(parse_object(token.out), "token")};
  std::string bytes;  // the database and its write-ahead log, if one is left
  for (const char* suffix : {"", "-wal"}) {
    const fs::path path = db_path().string() + suffix;
    if (fs::exists(path)) bytes += read_file(path);
  }
  for (const std::string& secret : secrets) {
    EXPECT_EQ(bytes.find(secret), std::string::npos) << "a secret is in the database";
  }
  // Text stored as given can be found this way: the user's key is there.
  EXPECT_NE(bytes.find("USER#ann"), std::string::npos);
}

TEST_F(ProcessTest, UserCommandsCreateTheAccountsTableOnSqlite) {
  const RunResult r = lh({"user", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace leasehold::process_test
