#include "atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <unistd.h>

#include "input_error.hpp"

namespace simtrain {

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", std::string("cannot be written: ") + std::strerror(errno));
    write(out);
    out.flush();
    if (!out) {
      std::filesystem::remove(temporary);
      throw InputError(path, "", "write failed (disk full?)");
    }
  }
  const int fd = ::open(temporary.c_str(), O_RDONLY);
  if (fd >= 0) ::fsync(fd), ::close(fd);
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::filesystem::remove(temporary);
    throw InputError(path, "", "cannot be written: " + reason);
  }
}

}  // namespace simtrain
