// The `leasehold user ...` commands: add, token, passwd, list and rm, on the
// accounts that `leasehold serve` authenticates against
// (accounts/accounts.h).
//
// As the lease commands do, each comes in two halves: make_*() checks the
// flags, and reads the password from stdin where one is asked for, before
// any store is opened (bad input exits 2 and writes nothing), and run_*()
// does the work on an open Context whose table is the accounts table.
// Passwords are read only from stdin, never taken as arguments, and never
// printed or logged; a token is printed once, by the command that made it.
//
// Exit codes (cli/common.h): 0 done, 1 the store failed, 2 bad input or a
// user that does not exist, 3 a name that is taken.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "accounts/accounts.h"
#include "cli/common.h"

namespace leasehold::cli {

// The flags of every `user` subcommand, as CLI11 parsed them.
struct UserArgs {
  std::string name;
  std::string display_name;
  bool admin = false;
  bool password_stdin = false;
  // A --password given anyway: refused with advice, never echoed.
  std::optional<std::string> password_argument;
};

struct PasswdRequest {
  std::string name;
  std::string password;
};

// The accounts table the `user` commands require (accounts::Accounts::table_spec()).
TableSpec user_table_spec();

// `in` is where --password-stdin reads from; `terminal` says it is the
// process's stdin and a terminal (read_password).
Result<accounts::NewUser> make_user_add(const UserArgs& args, std::istream& in,
                                        bool terminal = false);
Result<PasswdRequest> make_user_passwd(const UserArgs& args, std::istream& in,
                                       bool terminal = false);
// NAME alone (user token, user rm).
Result<std::string> make_user_name(const UserArgs& args);

// The password on one line of `in`, without its newline: kInvalidArgument
// if there is none, or it is shorter or longer than accounts allow. If
// `terminal`, asks for it on stderr with the terminal's echo turned off.
Result<std::string> read_password(std::istream& in, bool terminal);

// Prints {"name","display_name","admin","token"}; exit 3 if the name is taken.
int run_user_add(Context& ctx, const accounts::NewUser& user);
// Prints {"name","token"} for a new token.
int run_user_token(Context& ctx, const std::string& name);
// Prints nothing; the user's browser sessions end.
int run_user_passwd(Context& ctx, const PasswdRequest& request);
// Prints {"name","display_name","admin","has_password"} per user, by name.
int run_user_list(Context& ctx);
// Prints nothing; the user's tokens and sessions stop working.
int run_user_rm(Context& ctx, const std::string& name);

}  // namespace leasehold::cli
