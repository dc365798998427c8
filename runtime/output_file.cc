#include "runtime/output_file.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tnbc {

std::string write_output_file(const std::string& dir, const std::string& name, const std::string& text) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return "cannot create the directory '" + dir + "': " + std::strerror(errno);
  const std::string path = dir + "/" + name, tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  std::size_t off = 0;
  while (ok && off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = false;
    else off += static_cast<std::size_t>(w);
  }
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
  if (ok) return {};
  const std::string why = std::strerror(errno);
  ::unlink(tmp.c_str());
  return "cannot write " + path + ": " + why;
}

}  // namespace tnbc
