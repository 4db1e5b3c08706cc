#include "sim/base/gzip_stream.hpp"

#include <zlib.h>

#include <array>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <streambuf>

#include "sim/base/input_error.hpp"

namespace simtrain {

namespace {

constexpr int kGzipWindowBits = 15 + 16;  // zlib's largest window, with gzip's header and trailer
constexpr size_t kChunkBytes = 64 << 10;

// A stream buffer that deflates what is written to it into `sink`.
class DeflateBuffer : public std::streambuf {
public:
  explicit DeflateBuffer(std::ostream& sink) : sink_(sink) {
    if (deflateInit2(&stream_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error("zlib: cannot start compressing");
    setp(input_.data(), input_.data() + input_.size());
  }
  DeflateBuffer(const DeflateBuffer&) = delete;
  DeflateBuffer& operator=(const DeflateBuffer&) = delete;
  ~DeflateBuffer() override { deflateEnd(&stream_); }

  void finish() { deflate_pending(Z_FINISH); }

protected:
  int_type overflow(int_type c) override {
    deflate_pending(Z_NO_FLUSH);
    if (!traits_type::eq_int_type(c, traits_type::eof())) sputc(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }

private:
  // Compresses what was written since the last call; Z_FINISH ends the stream.
  void deflate_pending(int flush) {
    stream_.next_in = reinterpret_cast<Bytef*>(pbase());
    stream_.avail_in = static_cast<uInt>(pptr() - pbase());
    int result = Z_OK;
    do {
      stream_.next_out = output_.data();
      stream_.avail_out = static_cast<uInt>(output_.size());
      result = deflate(&stream_, flush);
      if (result == Z_STREAM_ERROR) throw std::runtime_error("zlib: compression failed");
      sink_.write(reinterpret_cast<const char*>(output_.data()), std::streamsize(output_.size() - stream_.avail_out));
    } while (stream_.avail_out == 0 || (flush == Z_FINISH && result != Z_STREAM_END));
    setp(input_.data(), input_.data() + input_.size());
  }

  std::ostream& sink_;
  z_stream stream_{};
  std::array<char, kChunkBytes> input_{};
  std::array<Bytef, kChunkBytes> output_{};
};

}  // namespace

bool is_gzip_path(const std::string& path) { return path.size() > 3 && path.ends_with(".gz"); }

ContentWriter gzip_compressed(ContentWriter content) {
  return [content = std::move(content)](std::ostream& out) {
    DeflateBuffer buffer(out);
    std::ostream compressed(&buffer);
    content(compressed);
    compressed.flush();
    buffer.finish();
  };
}

std::string read_maybe_gzipped(std::istream& in, const std::string& source) {
  std::string raw(std::istreambuf_iterator<char>(in), {});
  if (raw.size() < 2 || static_cast<unsigned char>(raw[0]) != 0x1f || static_cast<unsigned char>(raw[1]) != 0x8b)
    return raw;
  if (raw.size() > UINT32_MAX) throw InputError(source, "", "a gzip file over 4 GiB: decompress it first (gunzip)");
  z_stream stream{};
  if (inflateInit2(&stream, kGzipWindowBits) != Z_OK) throw std::runtime_error("zlib: cannot start decompressing");
  stream.next_in = reinterpret_cast<Bytef*>(raw.data());
  stream.avail_in = static_cast<uInt>(raw.size());
  std::string text;
  std::array<char, kChunkBytes> chunk;
  int result = Z_OK;
  while (result == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
    stream.avail_out = static_cast<uInt>(chunk.size());
    result = inflate(&stream, Z_NO_FLUSH);
    text.append(chunk.data(), chunk.size() - stream.avail_out);
  }
  const std::string why = stream.msg ? stream.msg : "the data ends before the gzip stream does";
  inflateEnd(&stream);
  if (result != Z_STREAM_END) throw InputError(source, "", "corrupt gzip data: " + why);
  return text;
}

}  // namespace simtrain
