// eventually(): a wait in real time for what no event announces (a thread's
// progress, a file another process writes, a port that refuses), bounded by
// a deadline: the condition is polled until it holds or the deadline passes.
// Tests wait this way rather than sleep for a guessed time.
// A plain function; safe from any thread (the condition decides for itself).
#pragma once

#include <chrono>
#include <functional>

namespace leasehold::testing {

// Calls `condition` until it returns true (then true), every `poll_every`,
// or until `deadline` has passed since the call and the condition still
// fails (then false). The condition is called at least once.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds deadline,
                std::chrono::milliseconds poll_every = std::chrono::milliseconds(10));

}  // namespace leasehold::testing
