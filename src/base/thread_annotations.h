// Clang's thread-safety annotations
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), after Abseil's
// thread_annotations.h: with Clang and -Wthread-safety, the compiler checks
// that a member marked GUARDED_BY(mu_) is touched only with mu_ held, and that
// a function marked REQUIRES(mu_) is called only with it held. Other
// compilers see nothing. The capabilities are base/mutex.h's Mutex and
// MutexLock (libstdc++'s std::mutex carries no annotations).
//
// The names are unprefixed, as in Clang's documentation; these headers are
// not installed, and a header that defined one of the names differently
// would fail the build (a macro redefined is a warning, and warnings are
// errors).
#pragma once

#if defined(__clang__)
#define LEASEHOLD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define LEASEHOLD_THREAD_ANNOTATION(x)
#endif

// On a data member: reading or writing it requires holding `mu`.
#define GUARDED_BY(mu) LEASEHOLD_THREAD_ANNOTATION(guarded_by(mu))

// On a function: the caller must hold the capabilities; the function neither
// acquires nor releases them.
#define REQUIRES(...) LEASEHOLD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))

// On a function: the caller must not hold the capabilities (the function
// acquires them itself).
#define EXCLUDES(...) LEASEHOLD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On a function: it acquires, or releases, the capabilities (with none
// named: `this`).
#define ACQUIRE(...) LEASEHOLD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) LEASEHOLD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

// On a function: it acquires the capabilities when it returns `result`.
#define TRY_ACQUIRE(...) LEASEHOLD_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))

// On a class: its objects are capabilities (a mutex), or an RAII object that
// holds one for its scope (a lock).
#define CAPABILITY(name) LEASEHOLD_THREAD_ANNOTATION(capability(name))
#define SCOPED_CAPABILITY LEASEHOLD_THREAD_ANNOTATION(scoped_lockable)
