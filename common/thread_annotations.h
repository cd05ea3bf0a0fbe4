#pragma once
// Clang's thread-safety attributes (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html),
// after LevelDB's port/thread_annotations.h: a class that owns a mutex says
// which members it guards and which functions need it held, and a clang
// build with -Wthread-safety checks every access at compile time. The
// macros expand to nothing for other compilers.
//
//   GUARDED_BY(mu)      a member read only with mu held (shared or exclusive),
//                       written only with mu held exclusively;
//   PT_GUARDED_BY(mu)   the same for what a pointer member points to;
//   REQUIRES(mu)        the caller holds mu exclusively (REQUIRES_SHARED: at
//                       least shared);
//   EXCLUDES(mu)        the caller does not hold mu (the function takes it);
//   ACQUIRE / RELEASE   on lock types: the function takes / lets go of it.

#if defined(__clang__)
#define APOLLO11_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define APOLLO11_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) APOLLO11_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY APOLLO11_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) APOLLO11_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) APOLLO11_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) APOLLO11_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) APOLLO11_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) APOLLO11_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) APOLLO11_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) APOLLO11_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) APOLLO11_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) APOLLO11_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) APOLLO11_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) APOLLO11_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) APOLLO11_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) APOLLO11_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) APOLLO11_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) APOLLO11_THREAD_ANNOTATION(assert_shared_capability(x))
#define RETURN_CAPABILITY(x) APOLLO11_THREAD_ANNOTATION(lock_returned(x))
// Turns the analysis off for one function; say next to it why it is safe.
#define NO_THREAD_SAFETY_ANALYSIS APOLLO11_THREAD_ANNOTATION(no_thread_safety_analysis)
