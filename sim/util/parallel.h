// The parallel loop every multi-threaded question uses (search and
// serve-search, simulate --stragglers, run-campaign).
//
// ParallelFor(n, threads, fn) runs fn(i, worker) once for each i in [0, n)
// on up to Workers(threads) threads, the calling thread included. Indices are
// handed out in increasing order, one at a time. Results are the caller's:
// fn writes what index i computes into slot i of storage it owns, so the
// output does not depend on the thread count or on which thread ran what.
//
// Errors: when calls throw, no further indices are handed out, every running
// call finishes, and the exception of the lowest index that threw is rethrown
// to the caller. That is the exception a plain loop would have thrown: every
// index below one that was handed out was handed out before it, so it ran.
// The same input fails with the same error at any thread count.
#ifndef STACKSIM_SIM_UTIL_PARALLEL_H_
#define STACKSIM_SIM_UTIL_PARALLEL_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace stacksim {

// The threads a loop runs on: `threads` when positive, else one per hardware
// thread of the machine (at least 1).
int Workers(int threads);

// worker, in [0, min(Workers(threads), n)), names the thread that runs the
// call (0: the caller's), for per-thread state such as a scratch engine.
// REQUIRES: fn may run concurrently with itself for different i.
void ParallelFor(int64_t n, int threads, const std::function<void(int64_t i, int worker)>& fn);

// ParallelFor for calls of very different weight, each with an estimate of
// the memory it needs (`bytes[i]`, any unit, the same as `budget`): calls
// start heaviest first (ties by index), and a worker starts the heaviest
// waiting call whose estimate fits beside those running, so that running
// estimates stay within `budget`; a call over the budget runs alone. The
// order of calls is not the index order, so fn must write only slot i of its
// output (then the output does not depend on the thread count). Errors: every
// call runs, then the exception of the lowest index that threw is rethrown
// (the one a plain loop would have thrown first).
// REQUIRES: fn may run concurrently with itself for different i.
void ParallelForWithinBudget(const std::vector<double>& bytes, double budget, int threads,
                             const std::function<void(int64_t i)>& fn);

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_PARALLEL_H_
