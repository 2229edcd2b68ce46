#include "calibrate/fit/csv.h"

#include <gtest/gtest.h>

#include "tests/input_error.h"

namespace stacksim::calibrate {
namespace {

using testing::ErrorFrom;

bool Mentions(const InputError& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

TEST(CsvTable, ReadsQuotedCellsAndCrlfLines) {
  CsvTable t = CsvTable::Parse("kernel,shape,median_us\r\nnorm,\"bf16 rows=4, cols=8\",1.5\r\n\r\n"
                               "rope,\"a \"\"b\"\"\",2e1\r\n",
                               "k.csv");
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.Text(0, "shape"), "bf16 rows=4, cols=8");
  EXPECT_EQ(t.Text(1, "shape"), "a \"b\"");
  EXPECT_DOUBLE_EQ(t.Number(0, "median_us"), 1.5);
  EXPECT_DOUBLE_EQ(t.Number(1, "median_us"), 20);
  EXPECT_EQ(t.line(1), 4);  // the blank line counts
  EXPECT_TRUE(t.HasColumn("kernel"));
  EXPECT_FALSE(t.HasColumn("bytes"));
}

TEST(CsvTable, MissingColumnNamesFileAndColumn) {
  CsvTable t = CsvTable::Parse("dtype,m\nbf16,3\n", "raw/gemm.csv");
  InputError e = ErrorFrom([&] { t.RequireColumns({"dtype", "m", "median_us"}); });
  EXPECT_EQ(e.file(), "raw/gemm.csv");
  EXPECT_EQ(e.key_path(), "median_us");
  EXPECT_TRUE(Mentions(e, "missing column 'median_us'")) << e.what();
}

TEST(CsvTable, NonNumericCellNamesFileColumnAndLine) {
  CsvTable t = CsvTable::Parse("dtype,m,median_us\nbf16,3,1.0\nbf16,4,fast\nbf16,5,\n", "raw/gemm.csv");
  InputError e = ErrorFrom([&] { t.Number(1, "median_us"); });
  EXPECT_EQ(e.file(), "raw/gemm.csv");
  EXPECT_EQ(e.key_path(), "median_us");
  EXPECT_TRUE(Mentions(e, "line 3")) << e.what();
  EXPECT_TRUE(Mentions(e, "'fast' is not a number")) << e.what();
  EXPECT_TRUE(Mentions(ErrorFrom([&] { t.Number(2, "median_us"); }), "'' is not a number"));
  EXPECT_TRUE(Mentions(ErrorFrom([&] { t.Number(0, "nan_column"); }), "missing column"));
}

TEST(CsvTable, RejectsImpossibleNumbersAndRaggedRows) {
  CsvTable t = CsvTable::Parse("m,us\n2.5,-1\n0,inf\n", "g.csv");
  EXPECT_TRUE(Mentions(ErrorFrom([&] { t.PositiveInt(0, "m"); }), "positive whole number"));
  EXPECT_TRUE(Mentions(ErrorFrom([&] { t.PositiveInt(1, "m"); }), "positive whole number"));
  EXPECT_TRUE(Mentions(ErrorFrom([&] { t.PositiveNumber(0, "us"); }), "must be positive"));
  EXPECT_TRUE(Mentions(ErrorFrom([&] { t.Number(1, "us"); }), "not a number"));
  InputError ragged = ErrorFrom([] { CsvTable::Parse("a,b\n1,2,3\n", "r.csv"); });
  EXPECT_EQ(ragged.file(), "r.csv");
  EXPECT_TRUE(Mentions(ragged, "line 2: 3 cells")) << ragged.what();
  EXPECT_TRUE(Mentions(ErrorFrom([] { CsvTable::Parse("", "e.csv"); }), "empty"));
  EXPECT_TRUE(Mentions(ErrorFrom([] { CsvTable::Read("/nonexistent/x.csv"); }), "cannot read"));
}

}  // namespace
}  // namespace stacksim::calibrate
