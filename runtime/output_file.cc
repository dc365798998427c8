#include "runtime/output_file.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tnbc {

namespace {

// mkdir -p: creates `dir` and any missing parent.
Status make_directory(const std::string& dir) {
  for (std::size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string part = dir.substr(0, at);
    if (!part.empty() && ::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST)
      return Status::error("cannot create the directory '" + part + "': " + std::strerror(errno));
    if (at == std::string::npos) break;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return Status::error("cannot use the directory '" + dir + "': " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return Status::error("'" + dir + "' exists and is not a directory");
  return {};
}

}  // namespace

Status write_output_file(const std::string& dir, const std::string& name, const std::string& text) {
  if (Status st = make_directory(dir); !st.ok()) return st;
  const std::string path = dir + "/" + name, tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error("cannot create " + tmp + ": " + std::strerror(errno));
  int error = 0;
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error = w < 0 ? errno : ENOSPC;  // a zero-byte write: the device took nothing
      break;
    }
    off += static_cast<std::size_t>(w);
  }
  // close() reports write-back errors of some file systems (NFS, quotas).
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error == 0) return {};
  ::unlink(tmp.c_str());
  return Status::error("cannot write " + path + ": " + std::strerror(error));
}

std::string world_output_dir(const std::string& dir, std::uint64_t world_id, bool spawned) {
  if (!spawned) return dir;
  char name[40];
  std::snprintf(name, sizeof name, "/spawned-%016llx", static_cast<unsigned long long>(world_id));
  return dir + name;
}

}  // namespace tnbc
