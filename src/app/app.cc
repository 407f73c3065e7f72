#include "app/app.h"

#include <boost/json.hpp>
#include <cassert>
#include <chrono>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>

#include "app/request_parsing.h"
#include "base/mutex.h"
#include "base/text.h"
#include "server/errors.h"
#include "server/json.h"
#include "web/assets.h"

namespace leasehold::app {

using server::Access;
using server::Caller;
using server::error_response;
using server::json_response;
using server::kJsonBodyBytesMax;
using server::read_json_object;
using server::Request;
using server::Response;
using server::Route;
using server::RouteOptions;
using server::Router;
using server::ServerHooks;

namespace {

namespace json = boost::json;
using std::chrono::duration;
using std::chrono::nanoseconds;

// The most (route, method, status) combinations whose series App::Impl
// keeps at hand; past that (only a flood of unmatched requests with odd
// methods could get there) they are looked up in the registry each time.
constexpr size_t kAnswerSeriesMax = 1'000;
// Room for GET /api/me's object on the stack (the longest name and display
// name fit; a bigger one would spill to the heap).
constexpr size_t kMeJsonBytes = 1024;

// ---------------------------------------------------------------- helpers

json::object user_json(const Caller& caller, json::storage_ptr storage = {}) {
  return json::object(
      {{"name", caller.name}, {"display_name", caller.display_name}, {"admin", caller.admin}},
      std::move(storage));
}

Caller caller_of(const accounts::User& user) { return {user.name, user.display_name, user.admin}; }
Caller caller_of(accounts::User&& user) {
  return {std::move(user.name), std::move(user.display_name), user.admin};
}

bool is_safe_method(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

// A file of the web shell. Its name is not versioned, so browsers keep it
// but ask again every time (no-cache), and get 304 while it is unchanged.
Response static_file(const web::Asset& asset, const Request& request) {
  Response r;
  r.set_header("ETag", std::string(asset.etag));
  r.set_header("Cache-Control", "no-cache");
  if (const auto tag = request.header("if-none-match");
      tag && server::etag_matches(*tag, asset.etag)) {
    r.status = 304;
    return r;
  }
  r.set_header("Content-Type", std::string(asset.content_type));
  r.body = std::string(asset.body);
  return r;
}

}  // namespace

// ---------------------------------------------------------------- the app

class App::Impl {
 public:
  Impl(runtime::Runtime& runtime, accounts::Accounts& accounts, metrics::Registry& registry,
       Logger& log, AppOptions options)
      : runtime_(runtime),
        accounts_(accounts),
        registry_(registry),
        log_(log),
        options_(options),
        local_reads_(runtime.store().reads_are_local()),
        requests_(registry.counter("leasehold_http_requests_total",
                                   "HTTP requests answered, by route, method and status.",
                                   {"route", "method", "status"})),
        latency_(registry.histogram("leasehold_http_request_duration_seconds",
                                    "Time from a request's first byte to its answer.",
                                    {"route", "method"})),
        in_flight_(registry
                       .gauge("leasehold_http_requests_in_flight",
                              "HTTP requests from their first byte until their answer is "
                              "written or the connection drops them.")
                       .with({})),
        sign_ins_(registry.counter("leasehold_sign_ins_total", "Sign-in attempts, by outcome.",
                                   {"outcome"})) {
    add_routes();
  }

  Router& router() { return router_; }

  ServerHooks hooks() {
    ServerHooks hooks;
    hooks.admit = [this](Request& request, const Route& route) { return admit(request, route); };
    hooks.admit_blocks = [this](const Request& request, const Route&) {
      return admit_blocks(request);
    };
    hooks.started = [this](const Request&) { in_flight_.add(1); };
    hooks.answered = [this](const Request& request, const Response& response, nanoseconds took) {
      answered(request, response, took);
    };
    hooks.submit_blocking = [this](std::function<void()> job) {
      return runtime_.blocking_pool().submit(std::move(job));
    };
    return hooks;
  }

 private:
  void add_routes();
  std::optional<Response> admit(Request& request, const Route& route);
  bool admit_blocks(const Request& request) const;
  std::optional<Response> check_origin(const Request& request) const;
  void answered(const Request& request, const Response& response, nanoseconds took);
  // The series an answer of `status` to `method` on `route` is counted in.
  struct AnswerSeries {
    metrics::Counter* requests;
    metrics::Histogram* latency;
  };
  AnswerSeries answer_series(std::string_view route, std::string_view method, int status)
      EXCLUDES(series_mu_);

  Response sign_in(Request& request);
  Response sign_out(Request& request);
  Response readyz(Request& request);
  Response list_users(Request& request);
  bool browser_used_https(const Request& request) const;
  std::string session_cookie(const Request& request, std::string_view value,
                             std::chrono::seconds max_age) const;

  runtime::Runtime& runtime_;
  accounts::Accounts& accounts_;
  metrics::Registry& registry_;
  Logger& log_;
  const AppOptions options_;
  const bool local_reads_;  // the store's reads_are_local()
  Router router_;
  metrics::Family<metrics::Counter>& requests_;
  metrics::Family<metrics::Histogram>& latency_;
  metrics::Gauge& in_flight_;
  metrics::Family<metrics::Counter>& sign_ins_;
  // The registry's with() builds its label values and searches its family
  // under the family's lock, twice an answer; this finds both series in one
  // search of a small map.
  Mutex series_mu_;
  using AnswerKey = std::tuple<std::string, std::string, int>;
  using AnswerKeyView = std::tuple<std::string_view, std::string_view, int>;
  // Orders owned keys and views of them alike, so that a lookup builds no strings.
  struct AnswerKeyLess {
    using is_transparent = void;
    static AnswerKeyView view(const AnswerKey& key) {
      return {std::get<0>(key), std::get<1>(key), std::get<2>(key)};
    }
    static const AnswerKeyView& view(const AnswerKeyView& key) { return key; }
    bool operator()(const auto& a, const auto& b) const { return view(a) < view(b); }
  };
  std::map<AnswerKey, AnswerSeries, AnswerKeyLess> answer_series_ GUARDED_BY(series_mu_);
};

void App::Impl::add_routes() {
  const RouteOptions json_write{.access = Access::kPublic, .body_bytes_max = kJsonBodyBytesMax};
  router_.add(
      "POST", "/api/session", [this](Request& r) { return sign_in(r); }, json_write);
  router_.add("DELETE", "/api/session", [this](Request& r) { return sign_out(r); },
              {.access = Access::kUser});
  router_.add("GET", "/api/me",
              [](Request& r) {
                // On the stack: this answers for every client that checks its token.
                unsigned char buffer[kMeJsonBytes];
                json::monotonic_resource storage(buffer, sizeof buffer);
                return json_response(200, user_json(*r.caller, &storage));
              },
              {.access = Access::kUser, .blocking = false});
  router_.add("GET", "/api/users", [this](Request& r) { return list_users(r); },
              {.access = Access::kAdmin});

  const RouteOptions open_inline{.access = Access::kPublic, .blocking = false};
  router_.add(
      "GET", "/healthz",
      [](Request&) {
        return json_response(200, json::object{{"status", "ok"}});
      },
      open_inline);
  router_.add("GET", "/readyz", [this](Request& r) { return readyz(r); },
              {.access = Access::kPublic});
  router_.add(
      "GET", "/metrics",
      [this](Request&) {
        Response r;
        r.body = registry_.render();
        r.set_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        return r;
      },
      open_inline);

  for (const web::Asset& asset : web::all_assets()) {
    router_.add(
        "GET", std::string(asset.path), [&asset](Request& r) { return static_file(asset, r); },
        open_inline);
  }
  for (std::string_view page : web::page_paths()) {
    const web::Asset* asset = web::find_asset(page);
    assert(asset != nullptr && "every page of the shell is embedded");
    router_.add(
        "GET", std::string(page), [asset](Request& r) { return static_file(*asset, r); },
        open_inline);
  }
  // A movie's Analyze page: the shell, which reads the ID from the URL and
  // asks the API for the movie (an unknown one is its "not found" state).
  const web::Asset* shell = web::find_asset("/");
  router_.add(
      "GET", "/movies/{id}", [shell](Request& r) { return static_file(*shell, r); },
      open_inline);
}

// Credentials come from a bearer token or else the session cookie. A bad
// bearer token is refused even on a public route (the caller meant to be
// someone); a stale cookie on a public route is ignored (a browser keeps
// sending it after its session ends, and the sign-in page must still load).
std::optional<Response> App::Impl::admit(Request& request, const Route& route) {
  // A request that only reads may rest on a check made a few seconds ago
  // (accounts::AccountsOptions::recent_check_for); one that writes may not.
  const accounts::Recency recency =
      is_safe_method(request.method) ? accounts::Recency::kRecent : accounts::Recency::kExact;
  if (const auto token = bearer_token(request)) {
    Result<accounts::User> user = accounts_.authenticate_token(*token, recency);
    if (!user.ok()) return error_response(user.status(), request.request_id);
    request.caller = caller_of(std::move(*user));
  } else if (const auto session = cookie_value(request, kSessionCookie)) {
    Result<accounts::User> user = accounts_.authenticate_session(*session, recency);
    if (user.ok()) {
      request.caller = caller_of(std::move(*user));
      request.by_cookie = true;
    } else if (route.options.access != Access::kPublic ||
               user.status().code() != Code::kUnauthenticated) {
      return error_response(user.status(), request.request_id);
    }
  }
  if (route.options.access != Access::kPublic && !request.caller) {
    return error_response(unauthenticated("sign in, or send Authorization: Bearer TOKEN"),
                          request.request_id);
  }
  if (route.options.access == Access::kAdmin && !request.caller->admin) {
    return error_response(permission_denied("only an admin may do this"), request.request_id);
  }
  // A browser sends the cookie with any request, a forged cross-site one
  // too; its Origin header says where the request came from. Sign-in is
  // checked as well, so that no other site can sign a browser in.
  if (!is_safe_method(request.method) && (request.by_cookie || route.pattern == "/api/session")) {
    return check_origin(request);
  }
  return std::nullopt;
}

// Whether admit() may wait on the store for this request. A token check only
// reads, which waits on nothing when the store's reads are local; a session
// check may write (its expiry slides, an expired session is removed), which
// may wait for the store's write lock; no credentials, no store call.
bool App::Impl::admit_blocks(const Request& request) const {
  if (bearer_token(request)) return !local_reads_;
  return cookie_value(request, kSessionCookie).has_value();
}

// Whether the browser reached this server over HTTPS: it serves TLS itself,
// or it speaks plain HTTP behind a TLS proxy that says the browser used
// HTTPS (X-Forwarded-Proto: https, as AWS's load balancers and the nginx
// recipe of docs/server.md send). Believing the header lets no other site
// in: a page cannot add it to a cross-site request without a CORS
// preflight, which this server never grants; and what it changes is only
// the scheme the Origin must have and whether the cookie is Secure.
bool App::Impl::browser_used_https(const Request& request) const {
  if (options_.tls) return true;
  const auto proto = request.header("x-forwarded-proto");
  return proto && equal_ignoring_case(*proto, "https");
}

// The origin this server is reached at, from the Host and the scheme the
// browser used.
std::optional<Response> App::Impl::check_origin(const Request& request) const {
  const auto origin = request.header("origin");
  const auto host = request.header("host");
  if (!origin) {
    // Browsers always send Origin on these requests; other clients use tokens.
    if (!request.by_cookie) return std::nullopt;
    return error_response(permission_denied("a cookie-authenticated write needs an Origin header"),
                          request.request_id);
  }
  const std::string expected = std::string(browser_used_https(request) ? "https://" : "http://") +
                               std::string(host ? *host : std::string_view());
  if (!host || *origin != expected) {
    return error_response(permission_denied("cross-origin request refused"), request.request_id);
  }
  return std::nullopt;
}

// Every request ends here once, answered or dropped. A dropped one (the
// client left, a timeout, stop()) was answered nothing, so it is not counted
// as a request answered; it is logged (with status 0) at debug level only,
// since a port scanner or a client that gives up would otherwise fill the log.
void App::Impl::answered(const Request& request, const Response& response, nanoseconds took) {
  in_flight_.add(-1);
  const std::string_view route =
      request.route.empty() ? std::string_view("unmatched") : std::string_view(request.route);
  const bool dropped = response.status == server::kStatusDropped;
  if (!dropped) {
    const AnswerSeries series = answer_series(route, request.method, response.status);
    series.requests->inc();
    series.latency->observe(duration<double>(took).count());
  }
  const LogLevel level = dropped                  ? LogLevel::kDebug
                         : response.status >= 500 ? LogLevel::kError
                                                  : LogLevel::kInfo;
  if (!log_.enabled(level)) return;
  const LogField fields[] = {
      {"request_id", std::string_view(request.request_id)},
      {"method", std::string_view(request.method)},
      {"route", std::string_view(route)},
      {"status", int64_t{response.status}},
      {"duration_us", std::chrono::duration_cast<std::chrono::microseconds>(took).count()},
      {"client", std::string_view(request.client_address)},
      {"user", std::string_view(request.caller ? request.caller->name : "")},
  };
  log_.log_fields(level, dropped ? "request dropped" : "request", fields);
}

App::Impl::AnswerSeries App::Impl::answer_series(std::string_view route, std::string_view method,
                                                 int status) {
  const AnswerKeyView key{route, method, status};
  {
    MutexLock lock(series_mu_);
    if (const auto it = answer_series_.find(key); it != answer_series_.end()) return it->second;
  }
  const std::string route_label(route), method_label(method);
  const AnswerSeries series{&requests_.with({route_label, method_label, std::to_string(status)}),
                            &latency_.with({route_label, method_label})};
  MutexLock lock(series_mu_);
  if (answer_series_.size() < kAnswerSeriesMax) {
    answer_series_.try_emplace(std::make_tuple(route_label, method_label, status), series);
  }
  return series;
}

std::string App::Impl::session_cookie(const Request& request, std::string_view value,
                                      std::chrono::seconds max_age) const {
  std::string cookie =
      std::string(kSessionCookie) + "=" + std::string(value) +
      "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + std::to_string(max_age.count());
  if (browser_used_https(request)) cookie += "; Secure";
  return cookie;
}

Response App::Impl::sign_in(Request& request) {
  json::object body;
  if (auto refused = read_json_object(request, body)) return *refused;
  const json::string* name = body.if_contains("name") ? body.at("name").if_string() : nullptr;
  const json::string* password =
      body.if_contains("password") ? body.at("password").if_string() : nullptr;
  if (name == nullptr || password == nullptr) {
    return error_response(invalid_argument("expected {\"name\": \"...\", \"password\": \"...\"}"),
                          request.request_id);
  }
  accounts::SignIn result = accounts_.sign_in(*name, *password, request.client_address);
  const Code code = result.status.code();
  sign_ins_
      .with({code == Code::kOk                  ? "ok"
             : code == Code::kUnauthenticated   ? "refused"
             : code == Code::kResourceExhausted ? "limited"
                                                : "error"})
      .inc();
  if (!result.status.ok()) {
    Response r = error_response(result.status, request.request_id);
    if (code == Code::kResourceExhausted) {
      const auto seconds = std::chrono::ceil<std::chrono::seconds>(result.retry_after).count();
      r.set_header("Retry-After", std::to_string(std::max<int64_t>(seconds, 1)));
    }
    return r;
  }
  const accounts::Session& session = *result.session;
  Response r = json_response(200, user_json(caller_of(session.user)));
  const auto max_age = std::chrono::duration_cast<std::chrono::seconds>(
      session.expires_at - runtime_.clock().wall_now());
  r.set_header("Set-Cookie",
               session_cookie(request, session.id, std::max(max_age, std::chrono::seconds(1))));
  return r;
}

Response App::Impl::sign_out(Request& request) {
  if (request.by_cookie) {
    const Status ended = accounts_.sign_out(*cookie_value(request, kSessionCookie));
    if (!ended.ok()) return error_response(ended, request.request_id);
  }
  Response r;
  r.status = 204;
  r.set_header("Set-Cookie", session_cookie(request, "", std::chrono::seconds(0)));
  return r;
}

// Ready when the store answers a read: a key that never exists is enough.
Response App::Impl::readyz(Request& request) {
  const Result<Item> read =
      runtime_.store().get(options_.accounts_table, {"READYZ#probe", ""}, true);
  if (read.ok() || read.status().code() == Code::kNotFound) {
    return json_response(200, json::object{{"status", "ready"}});
  }
  log_.log(LogLevel::kWarn, "readyz: the store did not answer: " + read.status().message());
  return error_response(unavailable("the store does not answer"), request.request_id);
}

Response App::Impl::list_users(Request& request) {
  Result<std::vector<accounts::User>> users = accounts_.list_users();
  if (!users.ok()) return error_response(users.status(), request.request_id);
  json::array out;
  for (const accounts::User& user : *users) {
    json::object o = user_json(caller_of(user));
    o["has_password"] = user.has_password;
    out.push_back(std::move(o));
  }
  return json_response(200, json::object{{"users", std::move(out)}});
}

App::App(runtime::Runtime& runtime, accounts::Accounts& accounts, metrics::Registry& registry,
         Logger& log, AppOptions options)
    : impl_(std::make_unique<Impl>(runtime, accounts, registry, log, options)) {}
App::~App() = default;
Router& App::router() { return impl_->router(); }
ServerHooks App::hooks() { return impl_->hooks(); }

}  // namespace leasehold::app
