// Router: parameters, precedence of literal over parameter over rest, 404
// versus 405 with Allow, HEAD answered by GET routes.
#include "server/router.h"

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

Handler named(std::string name) {
  return [name](Request&) { return Response{.status = 200, .headers = {}, .body = name}; };
}

// The body the matched route's handler answers with, or "404" / "405 <Allow>".
std::string route_of(const Router& router, std::string_view method, std::string_view path) {
  Router::Match match = router.match(method, path);
  if (match.route == nullptr) return match.allow.empty() ? "404" : "405 " + match.allow;
  Request request;
  return match.route->handler(request).body;
}

TEST(RouterTest, MatchesLiteralPathsByMethod) {
  Router router;
  router.add("GET", "/healthz", named("health"));
  router.add("GET", "/", named("root"));
  router.add("POST", "/api/sign-in", named("sign-in"));
  EXPECT_EQ(route_of(router, "GET", "/healthz"), "health");
  EXPECT_EQ(route_of(router, "GET", "/"), "root");
  EXPECT_EQ(route_of(router, "POST", "/api/sign-in"), "sign-in");
  EXPECT_EQ(route_of(router, "GET", "/healthz/"), "404");
  EXPECT_EQ(route_of(router, "GET", "/health"), "404");
  EXPECT_EQ(route_of(router, "GET", "/api"), "404");
  EXPECT_EQ(route_of(router, "GET", ""), "404");
}

TEST(RouterTest, FillsParametersFromOneNonEmptySegment) {
  Router router;
  router.add("GET", "/api/movies/{id}/frames/{frame}", named("frame"));
  Router::Match match = router.match("GET", "/api/movies/7/frames/12");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->pattern, "/api/movies/{id}/frames/{frame}");
  EXPECT_EQ(match.params.at("id"), "7");
  EXPECT_EQ(match.params.at("frame"), "12");
  EXPECT_EQ(route_of(router, "GET", "/api/movies//frames/12"), "404");
  EXPECT_EQ(route_of(router, "GET", "/api/movies/7/frames"), "404");
  EXPECT_EQ(route_of(router, "GET", "/api/movies/7/frames/12/x"), "404");
}

TEST(RouterTest, ALiteralSegmentWinsOverAParameterWhicheverWasAddedFirst) {
  Router router;
  router.add("GET", "/api/movies/{id}", named("movie"));
  router.add("GET", "/api/movies/new", named("new"));
  router.add("GET", "/api/{kind}/recent", named("recent"));
  router.add("GET", "/api/movies/{id}/{rest...}", named("rest"));
  router.add("GET", "/api/movies/{id}/edit", named("edit"));
  EXPECT_EQ(route_of(router, "GET", "/api/movies/new"), "new");
  EXPECT_EQ(route_of(router, "GET", "/api/movies/newer"), "movie");
  EXPECT_EQ(route_of(router, "GET", "/api/movies/recent"), "movie");
  EXPECT_EQ(route_of(router, "GET", "/api/movies/7/edit"), "edit");
  EXPECT_EQ(route_of(router, "GET", "/api/movies/7/view"), "rest");
}

TEST(RouterTest, ARestParameterTakesTheRemainingSegments) {
  Router router;
  router.add("GET", "/static/{file...}", named("static"));
  Router::Match match = router.match("GET", "/static/css/site.css");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.at("file"), "css/site.css");
  EXPECT_EQ(router.match("GET", "/static/app.js").params.at("file"), "app.js");
  EXPECT_EQ(route_of(router, "GET", "/static"), "404");
  EXPECT_EQ(route_of(router, "GET", "/static/"), "404");
  EXPECT_EQ(route_of(router, "GET", "/static/css//site.css"), "404");
  EXPECT_EQ(route_of(router, "GET", "/static/css/"), "404");
}

TEST(RouterTest, APathKnownUnderOtherMethodsIs405WithAllow) {
  Router router;
  router.add("GET", "/api/movies/{id}", named("get"));
  router.add("DELETE", "/api/movies/{id}", named("delete"));
  router.add("POST", "/api/movies", named("create"));
  Router::Match match = router.match("PUT", "/api/movies/7");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_EQ(match.allow, "DELETE, GET, HEAD");
  EXPECT_EQ(route_of(router, "GET", "/api/movies"), "405 POST");
  EXPECT_EQ(route_of(router, "GET", "/api/films"), "404");
}

TEST(RouterTest, AMethodPicksAmongItsOwnRoutesBeforeA405) {
  Router router;
  router.add("POST", "/api/movies/new", named("create"));
  router.add("GET", "/api/movies/{id}", named("get"));
  EXPECT_EQ(route_of(router, "GET", "/api/movies/new"), "get");
  EXPECT_EQ(route_of(router, "POST", "/api/movies/7"), "405 GET, HEAD");
}

TEST(RouterTest, HeadIsAnsweredByTheGetRouteUnlessItHasItsOwn) {
  Router router;
  router.add("GET", "/a", named("get a"));
  router.add("GET", "/b", named("get b"));
  router.add("HEAD", "/b", named("head b"));
  router.add("POST", "/c", named("post c"));
  Router::Match match = router.match("HEAD", "/a");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->method, "GET");
  EXPECT_EQ(route_of(router, "HEAD", "/b"), "head b");
  EXPECT_EQ(route_of(router, "HEAD", "/c"), "405 POST");
  // A HEAD route of its own wins over the GET route, even a more specific one.
  router.add("GET", "/d/e", named("get d/e"));
  router.add("HEAD", "/d/{x}", named("head d/x"));
  EXPECT_EQ(route_of(router, "HEAD", "/d/e"), "head d/x");
  EXPECT_EQ(route_of(router, "GET", "/d/e"), "get d/e");
}

// Routes without parameters are found by their path; those with parameters
// still match the paths they cover, and a path under another method is 405.
TEST(RouterTest, LiteralAndParameterRoutesMixed) {
  Router router;
  router.add("GET", "/api/me", named("me"));
  router.add("GET", "/api/{thing}", named("thing"));
  router.add("POST", "/api/me", named("post me"));
  router.add("GET", "/", named("root"));
  EXPECT_EQ(route_of(router, "GET", "/api/me"), "me");
  EXPECT_EQ(route_of(router, "POST", "/api/me"), "post me");
  EXPECT_EQ(route_of(router, "GET", "/api/you"), "thing");
  EXPECT_EQ(route_of(router, "DELETE", "/api/me"), "405 GET, HEAD, POST");
  EXPECT_EQ(route_of(router, "GET", "/"), "root");
  EXPECT_EQ(route_of(router, "GET", "/api/me/"), "404");
  EXPECT_TRUE(router.match("GET", "/api/me").params.empty());
}

TEST(RouterTest, KeepsEachRoutesOptions) {
  Router router;
  router.add("POST", "/api/sign-in", named("sign-in"),
             {.access = Access::kPublic, .body_bytes_max = kJsonBodyBytesMax, .blocking = true});
  router.add("GET", "/api/me", named("me"));
  const Route* sign_in = router.match("POST", "/api/sign-in").route;
  ASSERT_NE(sign_in, nullptr);
  EXPECT_EQ(sign_in->options.access, Access::kPublic);
  EXPECT_EQ(sign_in->options.body_bytes_max, kJsonBodyBytesMax);
  const Route* me = router.match("GET", "/api/me").route;
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(me->options.access, Access::kUser);
  EXPECT_EQ(me->options.body_bytes_max, 0u);
  EXPECT_TRUE(me->options.blocking);
}

#ifndef NDEBUG
TEST(RouterDeathTest, RefusesADuplicateRouteEvenUnderOtherParameterNames) {
  Router router;
  router.add("GET", "/api/movies/{id}", named("a"));
  router.add("POST", "/api/movies/{id}", named("post"));  // another method: fine
  EXPECT_DEATH(router.add("GET", "/api/movies/{movie}", named("b")), "added before");
  EXPECT_DEATH(router.add("GET", "/api/movies/{id}", named("c")), "added before");
}

TEST(RouterDeathTest, RefusesMalformedPatterns) {
  Router router;
  EXPECT_DEATH(router.add("GET", "/a/{id}/{id}", named("x")), "twice");
  EXPECT_DEATH(router.add("GET", "/a/{Id}", named("x")), "named");
  EXPECT_DEATH(router.add("GET", "/a/{rest...}/b", named("x")), "last");
}
#endif

}  // namespace
}  // namespace leasehold::server
