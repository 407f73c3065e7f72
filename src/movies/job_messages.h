// The bodies of the movie service's queue messages, as it writes and reads
// them: a trace job, {"movie_id", "job_id"} (Movies::start_trace sends it,
// a TraceWorker runs it), and a probe or a removal job, {"movie_id"} or
// {"movie_id", "job": "remove"} (enqueue_probe and enqueue_remove send
// them, a ProbeWorker runs them). A queue delivers whatever was sent to it,
// by this service or not, so a body is read as outside input. Pure
// functions, kept apart from the workers so that they can be checked on
// their own (fuzz/movies_stored_fuzz.cc).
//
// Private to movies/: include it only from its files, their tests and the
// fuzz target. Safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "leasehold/status.h"

namespace leasehold::movies::internal {

// The longest movie ID a job may name.
inline constexpr size_t kJobMovieIdBytesMax = 64;

struct TraceJob {
  std::string movie_id;
  std::string job_id;  // the tracing lease's token
};

// The message of `job`, as JSON.
std::string trace_job_body(const TraceJob& job);
// The trace job in `body`: a JSON object whose movie_id is a string of 1 to
// kJobMovieIdBytesMax bytes and whose job_id is a token (random_token()'s
// form), other fields ignored; kInvalidArgument for anything else.
Result<TraceJob> parse_trace_job(std::string_view body);

struct MovieJob {
  std::string movie_id;  // empty if the body is not a job
  bool remove = false;   // a removal's end, else a probe
};

// The message of `job`, as JSON.
std::string movie_job_body(const MovieJob& job);
// The probe or removal job in `body`: a JSON object whose movie_id is a
// string of 1 to kJobMovieIdBytesMax bytes, with no "job" field (a probe) or
// "job": "remove"; other fields ignored. A MovieJob with an empty movie_id
// for anything else.
MovieJob parse_movie_job(std::string_view body);

}  // namespace leasehold::movies::internal
