#pragma once
// gzip (RFC 1952) through zlib, for outputs and traces that run to hundreds
// of megabytes as text: OutputFiles writes every path ending ".gz"
// compressed, and the trace reader reads a file that starts with gzip's
// magic bytes decompressed. Compression is deterministic (no time stamp,
// no file name in the header), so equal content gives equal files.
#include <istream>
#include <string>

#include "sim/base/atomic_file.hpp"

namespace simtrain {

bool is_gzip_path(const std::string& path);  // ends with ".gz"

// A writer that writes `content`, compressed, to the stream it is given.
// Throws std::runtime_error if zlib fails (it does not for lack of input).
ContentWriter gzip_compressed(ContentWriter content);

// The rest of `in`: decompressed if it starts with gzip's magic bytes (1f 8b),
// as it is otherwise. Throws InputError naming `source` for corrupt or
// truncated gzip data.
std::string read_maybe_gzipped(std::istream& in, const std::string& source);

}  // namespace simtrain
