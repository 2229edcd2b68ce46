#include "sim/util/token_count.h"

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "tests/input_error.h"

namespace stacksim {
namespace {

void ExpectError(const std::function<void()>& f, const std::string& origin, const std::string& text) {
  InputError e = testing::ErrorFrom(f);
  EXPECT_EQ(e.file(), origin) << e.what();
  EXPECT_EQ(e.key_path(), "") << e.what();
  EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
}

TEST(TokenCount, ParsesDecimalSuffixesAndRejectsTheRest) {
  EXPECT_EQ(ParseTokenCount("15T"), 15'000'000'000'000);
  EXPECT_EQ(ParseTokenCount("2.5T"), 2'500'000'000'000);
  EXPECT_EQ(ParseTokenCount("300B"), 300'000'000'000);
  EXPECT_EQ(ParseTokenCount("800M"), 800'000'000);
  EXPECT_EQ(ParseTokenCount("1e12"), 1'000'000'000'000);
  EXPECT_EQ(ParseTokenCount("12345"), 12345);
  for (const char* bad : {"", "T", "-5T", "abc", "1.5X", "0", "1e30"}) {
    ExpectError([&] { ParseTokenCount(bad); }, "--tokens", "token count");
  }
}

}  // namespace
}  // namespace stacksim
