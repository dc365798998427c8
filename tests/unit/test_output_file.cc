// The atomic output-file writer (runtime/output_file.hh): written whole or not at all, the
// directory and its parents created, clear messages when the directory cannot be used. A full
// or read-only file system is tested under MPI (tests/mpi/output_dir.py), where it needs a mount.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/output_file.hh"
#include "temp_dir.hh"

namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("output file: written whole, no temporary left, parents created") {
  TempDir t;
  const fs::path dir = t.path / "a" / "b";
  CHECK(tnbc::write_output_file(dir.string(), "x.json", "{\"k\": 1}\n").ok());
  CHECK(slurp(dir / "x.json") == "{\"k\": 1}\n");
  CHECK_FALSE(fs::exists(dir / "x.json.tmp"));
  // Replaced atomically by a second write.
  CHECK(tnbc::write_output_file(dir.string(), "x.json", "2").ok());
  CHECK(slurp(dir / "x.json") == "2");
}

TEST_CASE("output file: a directory that cannot be used is named in the message") {
  TempDir t;
  const fs::path file = t.path / "plain";
  std::ofstream(file) << "not a directory";
  CHECK_THAT(tnbc::write_output_file(file.string(), "x.json", "1").message(),
             Catch::Equals("'" + file.string() + "' exists and is not a directory"));
  CHECK_THAT(tnbc::write_output_file((file / "sub").string(), "x.json", "1").message(),
             Catch::Contains("cannot create the directory '" + (file / "sub").string() + "'") &&
                 Catch::Contains("Not a directory"));
  CHECK_THAT(tnbc::write_output_file("/proc/tnbc-no-such-dir", "x.json", "1").message(),
             Catch::Contains("cannot create the directory '/proc/tnbc-no-such-dir'"));
  if (::geteuid() != 0) {  // root writes anywhere
    const fs::path ro = t.path / "ro";
    fs::create_directory(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THAT(tnbc::write_output_file(ro.string(), "x.json", "1").message(),
               Catch::Contains("cannot create " + (ro / "x.json.tmp").string()) && Catch::Contains("Permission denied"));
    fs::permissions(ro, fs::perms::owner_all);
  }
}
