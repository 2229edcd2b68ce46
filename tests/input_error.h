// Test helper: run code that must reject its input and return the InputError.
#ifndef STACKSIM_TESTS_INPUT_ERROR_H_
#define STACKSIM_TESTS_INPUT_ERROR_H_

#include <gtest/gtest.h>

#include <functional>

#include "sim/util/error.h"

namespace stacksim::testing {

// Runs f, which must throw InputError, and returns the error (an empty one,
// with a test failure recorded, if f returns normally).
inline InputError ErrorFrom(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError("", "", "");
}

}  // namespace stacksim::testing

#endif  // STACKSIM_TESTS_INPUT_ERROR_H_
