#include "cli/user_commands.h"

#include <termios.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <iostream>

namespace leasehold::cli {
namespace {

// The cost and the limits of the CLI's accounts: the library's defaults,
// which `serve` uses too.
accounts::AccountsOptions options() { return {}; }

Status no_password_arguments(const UserArgs& args) {
  if (!args.password_argument) return Status::ok_status();
  return invalid_argument(
      "--password is not accepted: a password on the command line shows in the process list "
      "and the shell's history; give it on stdin with --password-stdin");
}

// Turns the terminal's echo off for as long as it lives.
class EchoOff {
 public:
  EchoOff() {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios quiet = saved_;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    active_ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
  }
  ~EchoOff() {
    if (active_) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
  }
  EchoOff(const EchoOff&) = delete;
  EchoOff& operator=(const EchoOff&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

accounts::Accounts accounts_of(Context& ctx) {
  return accounts::Accounts(ctx.store(), ctx.clock(), ctx.runtime->random(), options());
}

// As report(), but a user that does not exist is bad input (exit 2), not a
// store failure.
int report_user(const Status& status) {
  if (status.code() == Code::kNotFound) {
    std::cerr << "leasehold: " << status.message() << "\n";
    return kExitUsage;
  }
  return report(status);
}

}  // namespace

TableSpec user_table_spec() { return accounts::Accounts::table_spec(options().table); }

Result<std::string> read_password(std::istream& in, bool terminal) {
  std::optional<EchoOff> echo_off;
  if (terminal) {
    std::cerr << "Password: " << std::flush;
    echo_off.emplace();
  }
  std::string password;
  bool too_long = false;
  for (char c; in.get(c) && c != '\n';) {
    // Read to the end of the line anyway, but keep no more than is allowed.
    if (password.size() < options().password_bytes_max + 1) password.push_back(c);
    too_long = password.size() > options().password_bytes_max;
  }
  if (terminal) std::cerr << "\n";
  if (password.empty()) return invalid_argument("--password-stdin: no password on stdin");
  if (too_long) {
    return invalid_argument("--password-stdin: the password is longer than " +
                            std::to_string(options().password_bytes_max) + " bytes");
  }
  LEASEHOLD_RETURN_IF_ERROR(
      accounts::check_password(password, options()).with_context("--password-stdin"));
  return password;
}

Result<accounts::NewUser> make_user_add(const UserArgs& args, std::istream& in, bool terminal) {
  LEASEHOLD_RETURN_IF_ERROR(no_password_arguments(args));
  LEASEHOLD_RETURN_IF_ERROR(accounts::check_user_name(args.name));
  LEASEHOLD_RETURN_IF_ERROR(
      accounts::check_display_name(args.display_name).with_context("--display-name"));
  accounts::NewUser user{args.name, args.display_name, args.admin, std::nullopt};
  if (args.password_stdin) {
    LEASEHOLD_ASSIGN_OR_RETURN(user.password, read_password(in, terminal));
  }
  return user;
}

Result<PasswdRequest> make_user_passwd(const UserArgs& args, std::istream& in, bool terminal) {
  LEASEHOLD_RETURN_IF_ERROR(no_password_arguments(args));
  LEASEHOLD_RETURN_IF_ERROR(accounts::check_user_name(args.name));
  if (!args.password_stdin) {
    return invalid_argument("user passwd needs --password-stdin: the password is read from stdin");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(std::string password, read_password(in, terminal));
  return PasswdRequest{args.name, std::move(password)};
}

Result<std::string> make_user_name(const UserArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(accounts::check_user_name(args.name));
  return args.name;
}

int run_user_add(Context& ctx, const accounts::NewUser& user) {
  auto added = accounts_of(ctx).add_user(user);
  if (!added.ok()) return report_user(added.status());
  print_line(boost::json::serialize(boost::json::object{{"name", added->user.name},
                                                        {"display_name", added->user.display_name},
                                                        {"admin", added->user.admin},
                                                        {"token", added->token}}));
  return kExitOk;
}

int run_user_token(Context& ctx, const std::string& name) {
  auto token = accounts_of(ctx).new_token(name);
  if (!token.ok()) return report_user(token.status());
  print_line(boost::json::serialize(boost::json::object{{"name", name}, {"token", *token}}));
  return kExitOk;
}

int run_user_passwd(Context& ctx, const PasswdRequest& request) {
  const Status set = accounts_of(ctx).set_password(request.name, request.password);
  return set.ok() ? kExitOk : report_user(set);
}

int run_user_list(Context& ctx) {
  auto users = accounts_of(ctx).list_users();
  if (!users.ok()) return report(users.status().with_context("cannot list users"));
  for (const accounts::User& user : *users) {
    print_line(boost::json::serialize(boost::json::object{{"name", user.name},
                                                          {"display_name", user.display_name},
                                                          {"admin", user.admin},
                                                          {"has_password", user.has_password}}));
  }
  return kExitOk;
}

int run_user_rm(Context& ctx, const std::string& name) {
  const Status removed = accounts_of(ctx).remove_user(name);
  return removed.ok() ? kExitOk : report_user(removed);
}

}  // namespace leasehold::cli
