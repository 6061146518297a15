// Files and folders: listing, mkdir -p, and files written whole (temporary + rename) so that a
// failed write leaves no half file and a symlink planted at the target is replaced, not followed.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cli.h"

namespace infera::cli {

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> list_dir(const std::string& d) {
  std::vector<std::string> r;
  DIR* dir = opendir(d.c_str());
  if (!dir) return r;
  while (dirent* e = readdir(dir)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") r.push_back(n);
  }
  closedir(dir);
  std::sort(r.begin(), r.end());
  return r;
}

std::string base_name(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string dir_name(const std::string& p) {
  size_t s = p.find_last_of('/');
  if (s == std::string::npos) return ".";
  return s == 0 ? "/" : p.substr(0, s);
}

Status make_dirs(const std::string& dir) {
  if (dir.empty()) return Status::ok();
  size_t pos = 0;
  while (true) {
    pos = dir.find('/', pos + 1);
    std::string part = dir.substr(0, pos);
    if (!part.empty() && mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error(StatusCode::kIo, part + ": cannot create folder: " + std::strerror(errno));
    if (pos == std::string::npos) break;
  }
  if (!is_dir(dir)) return Status::error(StatusCode::kIo, dir + ": exists and is not a folder");
  return Status::ok();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!tmp_.empty()) unlink(tmp_.c_str());
}

Status AtomicFile::open(const std::string& path) {
  path_ = path;
  if (is_dir(path)) return Status::error(StatusCode::kIo, path + ": is a folder");
  std::string t = dir_name(path) + "/." + base_name(path) + ".XXXXXX";
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  fd_ = mkstemp(buf.data());  // O_CREAT | O_EXCL: never opens an existing file or symlink
  if (fd_ < 0) return Status::error(StatusCode::kIo, path + ": cannot write: " + std::strerror(errno));
  tmp_ = buf.data();
  fchmod(fd_, 0644);
  return Status::ok();
}

Status AtomicFile::write(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::error(StatusCode::kIo, path_ + ": write failed: " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

Status AtomicFile::commit() {
  if (fd_ >= 0) {
    int rc = close(fd_);
    fd_ = -1;
    if (rc != 0) return Status::error(StatusCode::kIo, path_ + ": write failed: " + std::strerror(errno));
  }
  if (rename(tmp_.c_str(), path_.c_str()) != 0)
    return Status::error(StatusCode::kIo, path_ + ": cannot write: " + std::strerror(errno));
  tmp_.clear();
  return Status::ok();
}

}  // namespace infera::cli
