#include "sim/chakra/protowire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace stacksim::chakra {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

std::string Varint(uint64_t v) {
  WireWriter w;
  w.Varint(v);
  return w.bytes();
}

// Expected bytes from the encoding guide (protobuf.dev/programming-guides/encoding):
// 7 bits per byte, low group first, high bit set on all but the last.
TEST(ProtoWire, VarintsEncodeSevenBitsPerByteLowFirst) {
  EXPECT_EQ(Varint(0), Bytes({0x00}));
  EXPECT_EQ(Varint(1), Bytes({0x01}));
  EXPECT_EQ(Varint(127), Bytes({0x7f}));
  EXPECT_EQ(Varint(128), Bytes({0x80, 0x01}));
  EXPECT_EQ(Varint(150), Bytes({0x96, 0x01}));  // the guide's example
  EXPECT_EQ(Varint(300), Bytes({0xac, 0x02}));
  EXPECT_EQ(Varint(std::numeric_limits<uint64_t>::max()),
            Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  for (uint64_t v : {uint64_t{0}, uint64_t{150}, uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()}) {
    std::string b = Varint(v);
    WireReader r(b);
    EXPECT_EQ(r.ReadVarint(), v);
    EXPECT_TRUE(r.AtEnd());
  }
}

TEST(ProtoWire, ZigZagMapsSmallMagnitudesToSmallNumbers) {
  EXPECT_EQ(ZigZag(0), 0u);
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  EXPECT_EQ(ZigZag(-2), 3u);
  EXPECT_EQ(ZigZag(std::numeric_limits<int64_t>::max()), std::numeric_limits<uint64_t>::max() - 1);
  EXPECT_EQ(ZigZag(std::numeric_limits<int64_t>::min()), std::numeric_limits<uint64_t>::max());
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{63}, int64_t{-64}, std::numeric_limits<int64_t>::min()}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  }
  WireWriter w;
  w.Sint64Field(17, -2);  // tag 17 << 3 | 0 = 136 = 0x88 0x01; zigzag(-2) = 3
  EXPECT_EQ(w.bytes(), Bytes({0x88, 0x01, 0x03}));
  WireReader r(w.bytes());
  WireTag tag = r.ReadTag();
  EXPECT_EQ(tag.field, 17u);
  EXPECT_EQ(tag.type, WireType::kVarint);
  EXPECT_EQ(r.ReadSint64(), -2);
}

TEST(ProtoWire, FixedWidthValuesAreLittleEndian) {
  WireWriter w;
  w.DoubleField(3, 1.0);   // tag 0x19; 1.0 = 0x3ff0000000000000
  w.FloatField(5, -2.0f);  // tag 0x2d; -2.0f = 0xc0000000
  w.Tag(19, WireType::kFixed32);
  w.Fixed32(0x01020304);
  EXPECT_EQ(w.bytes(), Bytes({0x19, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x2d, 0, 0, 0, 0xc0, 0x9d, 0x01, 4, 3, 2, 1}));
  WireReader r(w.bytes());
  EXPECT_EQ(r.ReadTag().type, WireType::kFixed64);
  EXPECT_EQ(r.ReadDouble(), 1.0);
  EXPECT_EQ(r.ReadTag().type, WireType::kFixed32);
  EXPECT_EQ(r.ReadFloat(), -2.0f);
  WireTag t = r.ReadTag();
  EXPECT_EQ(t.field, 19u);
  EXPECT_EQ(r.ReadFixed32(), 0x01020304u);
  EXPECT_TRUE(r.AtEnd());
}

TEST(ProtoWire, LengthDelimitedAndPackedFields) {
  WireWriter w;
  w.BytesField(2, "x");                   // 0x12 0x01 'x'
  w.PackedVarintField(5, {1, 300});       // 0x2a 0x03 0x01 0xac 0x02
  w.PackedVarintField(4, {});             // nothing at all
  EXPECT_EQ(w.bytes(), Bytes({0x12, 0x01, 'x', 0x2a, 0x03, 0x01, 0xac, 0x02}));
  WireReader r(w.bytes());
  EXPECT_EQ(r.ReadTag().field, 2u);
  EXPECT_EQ(r.ReadBytes(), "x");
  WireTag t = r.ReadTag();
  std::vector<uint64_t> values;
  r.ReadRepeatedVarint(t.type, values);
  // The same field unpacked (one varint per tag) appends too.
  std::string unpacked = Bytes({0x28, 0x07});
  WireReader u(unpacked);
  u.ReadRepeatedVarint(u.ReadTag().type, values);
  EXPECT_EQ(values, (std::vector<uint64_t>{1, 300, 7}));
}

TEST(ProtoWire, SkipsUnknownFieldsOfEveryWireType) {
  WireWriter w;
  w.VarintField(100, 1ull << 40);
  w.DoubleField(101, 2.5);
  w.BytesField(102, "skipped");
  w.FloatField(103, 1.5f);
  w.VarintField(1, 42);
  WireReader r(w.bytes());
  uint64_t found = 0;
  while (!r.AtEnd()) {
    WireTag t = r.ReadTag();
    if (t.field == 1) found = r.ReadVarint();
    else r.Skip(t.type);
  }
  EXPECT_EQ(found, 42u);
}

TEST(ProtoWire, DelimitedStreamSplitsRecords) {
  std::string stream;
  AppendDelimited(stream, "ab");
  AppendDelimited(stream, "");
  AppendDelimited(stream, std::string(200, 'z'));  // length 200 = 0xc8 0x01
  EXPECT_EQ(stream.substr(0, 3), Bytes({0x02, 'a', 'b'}));
  EXPECT_EQ(stream.substr(3, 3), Bytes({0x00, 0xc8, 0x01}));
  WireReader r(stream);
  std::string_view m;
  size_t at = 0;
  ASSERT_TRUE(NextDelimited(r, m, at));
  EXPECT_EQ(m, "ab");
  EXPECT_EQ(at, 1u);
  ASSERT_TRUE(NextDelimited(r, m, at));
  EXPECT_EQ(m, "");
  ASSERT_TRUE(NextDelimited(r, m, at));
  EXPECT_EQ(m.size(), 200u);
  EXPECT_EQ(at, 6u);
  EXPECT_FALSE(NextDelimited(r, m, at));
}

// Runs f on a reader of bytes and returns the WireError's text ("" if none).
std::string ErrorOf(const std::string& bytes, const std::function<void(WireReader&)>& f) {
  try {
    WireReader r(bytes);
    f(r);
  } catch (const WireError& e) {
    return e.what();
  }
  return "";
}

void ExpectError(const std::string& bytes, const std::function<void(WireReader&)>& f, const std::string& part) {
  std::string error = ErrorOf(bytes, f);
  EXPECT_NE(error.find(part), std::string::npos) << "error: '" << error << "', expected '" << part << "'";
}

TEST(ProtoWire, RejectsMalformedInput) {
  auto varint = [](WireReader& r) { r.ReadVarint(); };
  auto tag = [](WireReader& r) { r.ReadTag(); };
  auto bytes = [](WireReader& r) { r.ReadBytes(); };
  ExpectError("", varint, "truncated varint (at byte 0)");
  ExpectError(Bytes({0x96}), varint, "truncated varint");
  ExpectError(Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}), varint, "longer than 64 bits");
  ExpectError(Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00}), varint,
              "longer than 64 bits");
  ExpectError(Bytes({0x00}), tag, "field number 0");
  ExpectError(Bytes({0x0b}), tag, "group wire type (3)");   // field 1, start group
  ExpectError(Bytes({0x0c}), tag, "group wire type (4)");   // field 1, end group
  ExpectError(Bytes({0x0e}), tag, "invalid wire type 6");
  ExpectError(Bytes({0x0f}), tag, "invalid wire type 7");
  ExpectError(Bytes({0x05, 'a', 'b'}), bytes, "length 5 runs past the end (2 bytes left)");
  // A length of 2^62: absurd, whatever follows.
  ExpectError(Bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40}), bytes, "absurd");
  ExpectError(Bytes({1, 2, 3}), [](WireReader& r) { r.ReadFixed32(); }, "runs past the end");
  ExpectError(Bytes({1, 2, 3, 4, 5, 6, 7}), [](WireReader& r) { r.ReadFixed64(); }, "runs past the end");
  ExpectError(Bytes({0xff, 0xff, 0xff, 0xff, 0x1f}), [](WireReader& r) { r.ReadSint32(); }, "out of range");
  ExpectError(Bytes({0x0a, 0x01}), [](WireReader& r) { r.Skip(r.ReadTag().type); }, "runs past the end");
  ExpectError(Bytes({0x01, 0x02, 0x02}), [](WireReader& r) {
    std::string_view m;
    size_t at;
    NextDelimited(r, m, at);
    NextDelimited(r, m, at);
  }, "length 2 runs past the end (0 bytes left) (at byte 3)");
  // Error offsets count from the outermost buffer.
  ExpectError(Bytes({0x0a, 0x02, 0x08, 0x80}), [](WireReader& r) {
    r.ReadTag();
    WireReader sub = r.ReadMessage();
    sub.ReadTag();
    sub.ReadVarint();
  }, "truncated varint (at byte 3)");
}

// Field 1 holding a message holding field 1 ..., `levels` deep.
std::string Nested(int levels) {
  std::string m;
  for (int i = 0; i < levels; ++i) {
    WireWriter w;
    w.BytesField(1, m);
    m = w.bytes();
  }
  return m;
}

int Descend(WireReader r) {
  int depth = r.depth();
  while (!r.AtEnd()) {
    r.ReadTag();
    depth = std::max(depth, Descend(r.ReadMessage()));
  }
  return depth;
}

TEST(ProtoWire, RejectsMessagesNestedTooDeep) {
  EXPECT_EQ(Descend(WireReader(Nested(kMaxDepth))), kMaxDepth);
  ExpectError(Nested(kMaxDepth + 1), [](WireReader& r) { Descend(r); }, "nested deeper than 32");
}

}  // namespace
}  // namespace stacksim::chakra
