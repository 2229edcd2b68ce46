// The emission of one pipeline pass (a forward or backward chunk of one
// micro-batch) as a coroutine that can stop after each expert-parallel
// all-to-all. DualPipe interleaves two such passes: while one chunk's
// all-to-all runs, the other chunk's kernels are queued on the GPU. Used by
// the training-step generator (training_step.cc); owns its coroutine frame.
#ifndef STACKSIM_SIM_WORKLOAD_PASS_EMISSION_H_
#define STACKSIM_SIM_WORKLOAD_PASS_EMISSION_H_

#include <coroutine>
#include <exception>
#include <utility>

namespace stacksim::workload {

// A pass being emitted that can stop after each expert-parallel all-to-all,
// so that DualPipe can interleave a forward and a backward chunk: while one
// chunk's all-to-all runs, the other chunk's kernels are queued on the GPU.
class PassEmission {
 public:
  struct promise_type {
    std::exception_ptr error;
    PassEmission get_return_object() {
      return PassEmission(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(int) noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { error = std::current_exception(); }
  };

  explicit PassEmission(std::coroutine_handle<promise_type> h) : h_(h) {}
  PassEmission(PassEmission&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  PassEmission(const PassEmission&) = delete;
  PassEmission& operator=(const PassEmission&) = delete;
  ~PassEmission() {
    if (h_) h_.destroy();
  }
  // Emits up to the next stopping point; false once the pass is complete.
  bool Resume() {
    if (h_.done()) return false;
    h_.resume();
    if (h_.promise().error) std::rethrow_exception(h_.promise().error);
    return !h_.done();
  }
  void RunToEnd() {
    while (Resume()) {
    }
  }

 private:
  std::coroutine_handle<promise_type> h_;
};

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_PASS_EMISSION_H_
