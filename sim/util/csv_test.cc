#include "sim/util/csv.h"

#include <gtest/gtest.h>

#include "tests/input_error.h"

namespace stacksim {
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
  EXPECT_TRUE(Mentions(ErrorFrom([] { CsvTable::Read("/nonexistent/x.csv"); }), "no such file"));
}

TEST(CsvTable, NonNegativeNumberAcceptsZeroAndNamesANegativeCell) {
  CsvTable t = CsvTable::Parse("us\n0\n-2\n", "l.csv");
  EXPECT_EQ(t.NonNegativeNumber(0, "us"), 0);
  InputError e = ErrorFrom([&] { t.NonNegativeNumber(1, "us"); });
  EXPECT_EQ(std::string(e.what()), "l.csv: us: line 3: '-2' must not be negative");
}

TEST(CsvTable, HeaderMapsColumnsByNameInAnyOrder) {
  CsvTable t = CsvTable::Parse("b,a\n2,1\n", "o.csv");
  EXPECT_EQ(t.header(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(t.Text(0, "a"), "1");
  EXPECT_EQ(t.Text(0, "b"), "2");
  InputError twice = ErrorFrom([] { CsvTable::Parse("a,b,a\n", "d.csv"); });
  EXPECT_EQ(twice.key_path(), "a");
  EXPECT_TRUE(Mentions(twice, "names this column twice")) << twice.what();
  EXPECT_TRUE(Mentions(ErrorFrom([] { CsvTable::Parse("\na,,c\n", "n.csv"); }), "line 2: column 2 has no name"));
}

TEST(SplitCsv, CountsLinesInsideQuotedCellsAndSkipsCommentsOnlyWhenAsked) {
  const std::string text = "# jobs\nid,note\n  # indented comment\na,\"two\nlines\"\nb, x \n";
  std::vector<CsvRecord> r = SplitCsv(text, "c.csv", {.comments = true});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].cells, (std::vector<std::string>{"id", "note"}));
  EXPECT_EQ(r[0].line, 2);
  EXPECT_EQ(r[1].cells, (std::vector<std::string>{"a", "two\nlines"}));
  EXPECT_EQ(r[1].line, 4);
  EXPECT_EQ(r[2].cells, (std::vector<std::string>{"b", "x"}));
  EXPECT_EQ(r[2].line, 6);  // the quoted line break counts
  std::vector<CsvRecord> plain = SplitCsv("#a,b\n1,2\n", "p.csv");
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0].cells[0], "#a");
  InputError open = ErrorFrom([] { SplitCsv("a\n\"b,c\n", "q.csv"); });
  EXPECT_EQ(std::string(open.what()), "q.csv: line 2: a quoted cell is never closed");
}

TEST(CsvLine, QuotesOnlyWhatAReaderWouldOtherwiseSplitOrTrim) {
  EXPECT_EQ(CsvLine({"plain", "", "1.5"}), "plain,,1.5\n");
  EXPECT_EQ(CsvLine({"a,b", "say \"hi\"", "two\nlines", " padded"}),
            "\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\" padded\"\n");
  const std::vector<std::string> cells = {"x, y", "\"q\"", "tab\t", "multi\r\nline", "  "};
  std::vector<CsvRecord> back = SplitCsv(CsvLine(cells), "w.csv");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].cells, cells);
}

}  // namespace
}  // namespace stacksim
