// The protobuf wire format, read strictly and written plainly: enough for
// Chakra's .et files without libprotobuf.
//
// A message is a sequence of fields; each field is a tag varint (field
// number << 3 | wire type) and a value whose shape the wire type gives:
// varint (0), 8 little-endian bytes (1), a varint length and that many bytes
// (2: strings, bytes, sub-messages, packed repeated scalars), 4 little-endian
// bytes (5). Wire types 3 and 4 (proto2 groups) are not accepted; 6 and 7 do
// not exist. Reference: https://protobuf.dev/programming-guides/encoding/
//
// WireReader views bytes it does not own (the caller keeps them alive) and
// throws WireError on anything malformed: a varint longer than 10 bytes or
// past the end, a length past the end of its message, field number 0, a bad
// wire type, sub-messages nested deeper than kMaxDepth. Offsets in errors are
// from the start of the outermost buffer.
//
// WireWriter appends to a string it owns. Proto3 writers leave out scalar
// fields that hold their default (0, "", false); the callers here do the
// same, so a reader must treat an absent field as its default.
#ifndef STACKSIM_SIM_CHAKRA_PROTOWIRE_H_
#define STACKSIM_SIM_CHAKRA_PROTOWIRE_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace stacksim::chakra {

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };
const char* WireTypeName(WireType type);

class WireError : public std::runtime_error {
 public:
  WireError(size_t offset, const std::string& message)
      : std::runtime_error(message + " (at byte " + std::to_string(offset) + ")"), message_(message), offset_(offset) {}
  const std::string& message() const { return message_; }  // without the offset
  size_t offset() const { return offset_; }

 private:
  std::string message_;
  size_t offset_;
};

// Deeper sub-messages than this are an error (Chakra's schema nests 3 deep;
// libprotobuf's default limit is 100).
constexpr int kMaxDepth = 32;
// A length-delimited value longer than this is an error whatever the buffer
// holds (protobuf's own limit on a message: 2 GiB - 1).
constexpr uint64_t kMaxLength = (uint64_t{1} << 31) - 1;

struct WireTag {
  uint32_t field = 0;
  WireType type = WireType::kVarint;
};

class WireReader {
 public:
  // base: the offset of data[0] in the outermost buffer (for error messages).
  explicit WireReader(std::string_view data, size_t base = 0, int depth = 0)
      : data_(data), base_(base), depth_(depth) {}

  bool AtEnd() const { return pos_ == data_.size(); }
  size_t offset() const { return base_ + pos_; }  // of the next byte to read
  int depth() const { return depth_; }

  // REQUIRES: !AtEnd().
  WireTag ReadTag();
  uint64_t ReadVarint();
  int64_t ReadSint64();  // zigzag
  int32_t ReadSint32();  // zigzag; a value outside int32 is an error
  uint32_t ReadFixed32();
  uint64_t ReadFixed64();
  double ReadDouble() { return std::bit_cast<double>(ReadFixed64()); }
  float ReadFloat() { return std::bit_cast<float>(ReadFixed32()); }
  // A length-delimited value: the bytes (a view into the buffer).
  std::string_view ReadBytes();
  // A length-delimited sub-message, one level deeper.
  WireReader ReadMessage();
  // Skips a value of the given wire type (an unknown field).
  void Skip(WireType type);

  // A packed (length-delimited) or single value of a repeated varint field:
  // appends to out.
  void ReadRepeatedVarint(WireType type, std::vector<uint64_t>& out);

  [[noreturn]] void Fail(const std::string& message) const { throw WireError(offset(), message); }

 private:
  void Need(uint64_t n) const;

  std::string_view data_;
  size_t pos_ = 0;
  size_t base_;
  int depth_;
};

// Splits a stream of varint-length-prefixed messages (protobuf's "delimited"
// form: what Chakra's .et files are). Returns false at the clean end of data.
bool NextDelimited(WireReader& stream, std::string_view& message, size_t& message_offset);

class WireWriter {
 public:
  void Tag(uint32_t field, WireType type) { Varint((uint64_t{field} << 3) | static_cast<uint8_t>(type)); }
  void Varint(uint64_t v);
  void Fixed32(uint32_t v);
  void Fixed64(uint64_t v);

  void VarintField(uint32_t field, uint64_t v);
  void Int64Field(uint32_t field, int64_t v) { VarintField(field, static_cast<uint64_t>(v)); }
  void Sint64Field(uint32_t field, int64_t v);
  void BoolField(uint32_t field, bool v) { VarintField(field, v ? 1 : 0); }
  void DoubleField(uint32_t field, double v);
  void FloatField(uint32_t field, float v);
  void BytesField(uint32_t field, std::string_view bytes);
  // Repeated varints, packed (proto3's default for repeated scalars).
  void PackedVarintField(uint32_t field, const std::vector<uint64_t>& values);

  const std::string& bytes() const { return out_; }
  std::string Release() { return std::move(out_); }

 private:
  std::string out_;
};

// Appends message to out as a delimited record (varint length, then bytes).
void AppendDelimited(std::string& out, std::string_view message);

inline uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_PROTOWIRE_H_
