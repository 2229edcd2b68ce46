#include "sim/chakra/protowire.h"

namespace stacksim::chakra {

const char* WireTypeName(WireType type) {
  switch (type) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLen: return "length-delimited";
    case WireType::kFixed32: return "fixed32";
  }
  return "?";
}

void WireReader::Need(uint64_t n) const {
  if (n > data_.size() - pos_) {
    Fail("length " + std::to_string(n) + " runs past the end (" + std::to_string(data_.size() - pos_) +
         " bytes left)");
  }
}

uint64_t WireReader::ReadVarint() {
  const size_t start = pos_;
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ == data_.size()) throw WireError(base_ + start, "truncated varint");
    const uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
    // The tenth byte holds bit 63 alone.
    if (shift == 63 && byte > 1) throw WireError(base_ + start, "varint longer than 64 bits");
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return v;
  }
  throw WireError(base_ + start, "varint longer than 10 bytes");
}

WireTag WireReader::ReadTag() {
  const size_t start = offset();
  const uint64_t v = ReadVarint();
  const uint64_t field = v >> 3;
  const int type = static_cast<int>(v & 7);
  if (field == 0) throw WireError(start, "field number 0");
  if (field > (uint64_t{1} << 29) - 1) throw WireError(start, "field number " + std::to_string(field) + " too large");
  if (type == 3 || type == 4) {
    throw WireError(start, "field " + std::to_string(field) + ": group wire type (" + std::to_string(type) +
                               ") is not supported");
  }
  if (type > 5) throw WireError(start, "field " + std::to_string(field) + ": invalid wire type " + std::to_string(type));
  return {static_cast<uint32_t>(field), static_cast<WireType>(type)};
}

int64_t WireReader::ReadSint64() { return UnZigZag(ReadVarint()); }

int32_t WireReader::ReadSint32() {
  const size_t start = offset();
  const uint64_t v = ReadVarint();
  if (v > 0xffffffffu) throw WireError(start, "sint32 value out of range");
  return static_cast<int32_t>(UnZigZag(v));
}

uint32_t WireReader::ReadFixed32() {
  Need(4);
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(data_[pos_ + i]);
  pos_ += 4;
  return v;
}

uint64_t WireReader::ReadFixed64() {
  Need(8);
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(data_[pos_ + i]);
  pos_ += 8;
  return v;
}

std::string_view WireReader::ReadBytes() {
  const size_t start = offset();
  const uint64_t n = ReadVarint();
  if (n > kMaxLength) throw WireError(start, "length " + std::to_string(n) + " is absurd (over 2 GiB)");
  Need(n);
  std::string_view out = data_.substr(pos_, n);
  pos_ += n;
  return out;
}

WireReader WireReader::ReadMessage() {
  if (depth_ + 1 > kMaxDepth) Fail("messages nested deeper than " + std::to_string(kMaxDepth));
  std::string_view bytes = ReadBytes();
  return WireReader(bytes, offset() - bytes.size(), depth_ + 1);
}

void WireReader::Skip(WireType type) {
  switch (type) {
    case WireType::kVarint: ReadVarint(); return;
    case WireType::kFixed64: Need(8); pos_ += 8; return;
    case WireType::kLen: ReadBytes(); return;
    case WireType::kFixed32: Need(4); pos_ += 4; return;
  }
  Fail("cannot skip wire type " + std::to_string(static_cast<int>(type)));
}

void WireReader::ReadRepeatedVarint(WireType type, std::vector<uint64_t>& out) {
  if (type == WireType::kVarint) {
    out.push_back(ReadVarint());
    return;
  }
  if (type != WireType::kLen) Fail(std::string("expected a varint or packed varints, got ") + WireTypeName(type));
  std::string_view packed = ReadBytes();
  WireReader r(packed, offset() - packed.size(), depth_);
  while (!r.AtEnd()) out.push_back(r.ReadVarint());
}

bool NextDelimited(WireReader& stream, std::string_view& message, size_t& message_offset) {
  if (stream.AtEnd()) return false;
  message = stream.ReadBytes();
  message_offset = stream.offset() - message.size();
  return true;
}

void WireWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void WireWriter::Fixed32(uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void WireWriter::Fixed64(uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void WireWriter::VarintField(uint32_t field, uint64_t v) {
  Tag(field, WireType::kVarint);
  Varint(v);
}

void WireWriter::Sint64Field(uint32_t field, int64_t v) { VarintField(field, ZigZag(v)); }

void WireWriter::DoubleField(uint32_t field, double v) {
  Tag(field, WireType::kFixed64);
  Fixed64(std::bit_cast<uint64_t>(v));
}

void WireWriter::FloatField(uint32_t field, float v) {
  Tag(field, WireType::kFixed32);
  Fixed32(std::bit_cast<uint32_t>(v));
}

void WireWriter::BytesField(uint32_t field, std::string_view bytes) {
  Tag(field, WireType::kLen);
  Varint(bytes.size());
  out_.append(bytes);
}

void WireWriter::PackedVarintField(uint32_t field, const std::vector<uint64_t>& values) {
  if (values.empty()) return;
  WireWriter packed;
  for (uint64_t v : values) packed.Varint(v);
  BytesField(field, packed.bytes());
}

void AppendDelimited(std::string& out, std::string_view message) {
  WireWriter w;
  w.Varint(message.size());
  out += w.bytes();
  out.append(message);
}

}  // namespace stacksim::chakra
