#include "transport/security.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

namespace apollo11::transport {
namespace {

constexpr size_t kZ85KeyLength = 40;
constexpr size_t kBinaryKeyLength = 32;
// Bounded input: key files are tiny; an authorized-keys file of 1 MiB holds
// ~25,000 keys.
constexpr off_t kMaxKeyFileBytes = 64 << 10;
constexpr off_t kMaxAuthorizedKeysBytes = 1 << 20;

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

struct FileText {
  std::string text;
  mode_t mode = 0;
};

Result<FileText> ReadSmallFile(const std::string& path, off_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(Errno("cannot open", path));
    return Status::Io(Errno("cannot open", path));
  }
  FileText out;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = Status::Io(Errno("cannot stat", path));
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidInput(path + ": not a regular file");
  }
  if (st.st_size > max_bytes) {
    ::close(fd);
    return Status::InvalidInput(path + ": too large (" + std::to_string(st.st_size) +
                                " bytes, at most " + std::to_string(max_bytes) + ")");
  }
  out.mode = st.st_mode;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Status::Io(Errno("cannot read", path));
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    out.text.append(buf, static_cast<size_t>(n));
    if (out.text.size() > static_cast<size_t>(max_bytes)) {
      ::close(fd);
      return Status::InvalidInput(path + ": too large");
    }
  }
  ::close(fd);
  return out;
}

// Writes `content` to `path` with exactly `mode` (umask does not widen or
// narrow it) through a temporary file and rename, so a reader never sees a
// half-written key and a secret is never briefly world-readable.
Status WriteFileAtomic(const std::string& path, const std::string& content, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::Io(Errno("cannot create", tmp));
  auto fail = [&](const std::string& what) {
    Status s = Status::Io(Errno(what, tmp));
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  if (::fchmod(fd, mode) != 0) return fail("cannot chmod");
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot sync");
  if (::close(fd) != 0) {
    Status s = Status::Io(Errno("cannot close", tmp));
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Status::Io(Errno("cannot rename to", path));
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      lines.push_back(text);
      break;
    }
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  return lines;
}

std::string Where(const std::string& name, size_t line) {
  return name + ":" + std::to_string(line) + ": ";
}

// The first whitespace-separated token of `line` (trimmed), and the rest.
std::string FirstToken(std::string_view line, std::string_view* rest) {
  size_t end = 0;
  while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
  *rest = Trim(line.substr(end));
  return std::string(line.substr(0, end));
}

// Parses one authorized-keys line: a key, or a role and a key (optionally
// followed by whitespace and a '#' comment), a comment, or blank. '#' is a
// Z85 digit but no valid key starts with it (84 * 85^4 overflows 32 bits),
// so the two never clash; no role name is 40 characters long either.
enum class LineKind { kBlank, kKey, kBad };
LineKind ParseKeyLine(std::string_view raw, std::string* key, KeyRoles* roles, std::string* why) {
  std::string_view line = Trim(raw);
  if (line.empty()) return LineKind::kBlank;
  std::string_view rest;
  std::string token = FirstToken(line, &rest);
  *roles = kRolesUnstated;
  if (std::optional<KeyRoles> role = ParseRole(token)) {
    *roles = *role;
    *why = RoleNameNote(token);  // an older role name: the caller logs what it now means
    token = FirstToken(rest, &rest);
    if (!IsValidZ85Key(token)) {
      *why = "want a CURVE public key (40 Z85 characters) after the role";
      return LineKind::kBad;
    }
  }
  if (IsValidZ85Key(token)) {
    if (!rest.empty() && rest.front() != '#') {
      *why = "unexpected text after the key (use '# comment')";
      return LineKind::kBad;
    }
    *key = std::move(token);
    return LineKind::kKey;
  }
  if (line.front() == '#') return LineKind::kBlank;
  *why = "not a CURVE public key (want 40 Z85 characters decoding to 32 bytes, got " +
         std::to_string(token.size()) + " characters)";
  return LineKind::kBad;
}

// A "name = value" line of a .key file.
bool SplitAssignment(std::string_view line, std::string_view* name, std::string_view* value) {
  size_t eq = line.find('=');
  if (eq == std::string_view::npos) return false;
  *name = Trim(line.substr(0, eq));
  *value = Trim(line.substr(eq + 1));
  return true;
}

struct KeyFileFields {
  std::string public_z85, secret_z85;
};

// Parses "public = ..." / "secret = ..." lines; comments and blanks allowed.
// Checks each present value is a valid key; `need_secret` requires both.
Result<KeyFileFields> ParseKeyFile(const std::string& text, const std::string& path,
                                   bool need_secret) {
  KeyFileFields fields;
  size_t line_no = 0;
  for (std::string_view raw : SplitLines(text)) {
    ++line_no;
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    std::string_view name, value;
    if (!SplitAssignment(line, &name, &value)) {
      return Status::InvalidInput(Where(path, line_no) +
                                  "expected 'public = KEY' or 'secret = KEY'");
    }
    std::string* slot = nullptr;
    if (name == "public") slot = &fields.public_z85;
    if (name == "secret") slot = &fields.secret_z85;
    if (slot == nullptr) {
      return Status::InvalidInput(Where(path, line_no) + "unknown field '" + std::string(name) +
                                  "' (want public or secret)");
    }
    if (!slot->empty()) {
      return Status::InvalidInput(Where(path, line_no) + "duplicate field '" + std::string(name) +
                                  "'");
    }
    // Never echo the value: it may be the secret key.
    if (!IsValidZ85Key(std::string(value))) {
      return Status::InvalidInput(Where(path, line_no) + std::string(name) +
                                  " is not a CURVE key (want 40 Z85 characters)");
    }
    *slot = std::string(value);
  }
  if (fields.public_z85.empty()) return Status::InvalidInput(path + ": no 'public = KEY' line");
  if (need_secret && fields.secret_z85.empty()) {
    return Status::InvalidInput(path + ": no 'secret = KEY' line");
  }
  return fields;
}

Status CheckPair(const CurveKeyPair& keys) {
  if (!IsValidZ85Key(keys.public_z85)) return Status::InvalidInput("public key is not valid Z85");
  if (!IsValidZ85Key(keys.secret_z85)) return Status::InvalidInput("secret key is not valid Z85");
  char derived[kZ85KeyLength + 1] = {};
  if (zmq_curve_public(derived, keys.secret_z85.c_str()) != 0) {
    return Status::Unsupported("libzmq cannot derive a CURVE public key: " +
                               std::string(zmq_strerror(zmq_errno())));
  }
  if (keys.public_z85 != derived) {
    return Status::InvalidInput("the public key does not belong to the secret key");
  }
  return Status::Ok();
}

Status SetOption(zmq::socket_t& socket, int option, const void* value, size_t size,
                 const char* name) {
  if (zmq_setsockopt(socket.handle(), option, value, size) != 0) {
    return Status::Io(std::string("zmq_setsockopt(") + name + "): " + zmq_strerror(zmq_errno()));
  }
  return Status::Ok();
}

Status SetKey(zmq::socket_t& socket, int option, const std::string& z85, const char* name) {
  // A 40-character value is taken as Z85 by libzmq (41 bytes with the NUL).
  return SetOption(socket, option, z85.c_str(), z85.size() + 1, name);
}

bool HasCurve() { return zmq_has("curve") != 0; }

}  // namespace

bool IsValidZ85Key(const std::string& key) {
  static constexpr std::string_view kAlphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (key.size() != kZ85KeyLength) return false;
  for (char c : key) {
    if (kAlphabet.find(c) == std::string_view::npos) return false;
  }
  // Every 5 characters are a base-85 number that must fit 32 bits.
  for (size_t i = 0; i < key.size(); i += 5) {
    uint64_t value = 0;
    for (size_t j = 0; j < 5; ++j) value = value * 85 + kAlphabet.find(key[i + j]);
    if (value > 0xffffffffull) return false;
  }
  uint8_t decoded[kBinaryKeyLength];
  return zmq_z85_decode(decoded, key.c_str()) != nullptr;
}

Result<CurveKeyPair> GenerateKeyPair() {
  if (!HasCurve()) return Status::Unsupported("this libzmq was built without CURVE");
  char public_key[kZ85KeyLength + 1] = {};
  char secret_key[kZ85KeyLength + 1] = {};
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return Status::Internal(std::string("zmq_curve_keypair: ") + zmq_strerror(zmq_errno()));
  }
  CurveKeyPair keys{public_key, secret_key};
  std::memset(secret_key, 0, sizeof(secret_key));
  return keys;
}

Status SaveKeyPair(const CurveKeyPair& keys, const std::string& path_prefix) {
  APOLLO11_RETURN_IF_ERROR(CheckPair(keys));
  if (path_prefix.empty()) return Status::InvalidInput("empty key path prefix");
  std::string key_text =
      "# Apollo-11 CURVE key pair. Keep secret: never copy this file off the machine.\n"
      "public = " +
      keys.public_z85 + "\nsecret = " + keys.secret_z85 + "\n";
  APOLLO11_RETURN_IF_ERROR(WriteFileAtomic(path_prefix + ".key", key_text, 0600));
  return WriteFileAtomic(path_prefix + ".pub", keys.public_z85 + "\n", 0644);
}

Result<CurveKeyPair> LoadKeyPair(const std::string& path) {
  auto file = ReadSmallFile(path, kMaxKeyFileBytes);
  if (!file.ok()) return file.status();
  if ((file->mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(file->mode & 07777));
    return Status::InvalidInput(path + ": secret key file is accessible by others (mode " + mode +
                                "); run chmod 600 " + path);
  }
  auto fields = ParseKeyFile(file->text, path, /*need_secret=*/true);
  if (!fields.ok()) return fields.status();
  CurveKeyPair keys{fields->public_z85, fields->secret_z85};
  Status pair = CheckPair(keys);
  if (!pair.ok()) return Status::Error(pair.code(), path + ": " + pair.message());
  return keys;
}

Result<std::string> LoadPublicKey(const std::string& path) {
  auto file = ReadSmallFile(path, kMaxKeyFileBytes);
  if (!file.ok()) return file.status();
  // A .key file has "name = value" lines; a .pub file has the bare key.
  bool assignment = false;
  for (std::string_view raw : SplitLines(file->text)) {
    std::string_view line = Trim(raw);
    std::string_view name, value;
    if (!line.empty() && line.front() != '#' && SplitAssignment(line, &name, &value) &&
        (name == "public" || name == "secret")) {
      assignment = true;
      break;
    }
  }
  if (assignment) {
    auto fields = ParseKeyFile(file->text, path, /*need_secret=*/false);
    if (!fields.ok()) return fields.status();
    return fields->public_z85;
  }
  auto keys = ParseAuthorizedKeys(file->text, path);
  if (!keys.ok()) return keys.status();
  if (keys->size() != 1) {
    return Status::InvalidInput(path + ": want exactly one public key, found " +
                                std::to_string(keys->size()));
  }
  return *keys->begin();
}

Result<KeyRoleMap> ParseKeyRoles(const std::string& text, const std::string& name) {
  KeyRoleMap keys;
  std::set<std::string> older_names_noted;  // each older role name's note, logged once
  size_t line_no = 0;
  for (std::string_view raw : SplitLines(text)) {
    ++line_no;
    std::string key, why;
    KeyRoles roles = 0;
    switch (ParseKeyLine(raw, &key, &roles, &why)) {
      case LineKind::kBlank:
        break;
      case LineKind::kKey:
        keys[key] |= roles;
        if (!why.empty() && older_names_noted.insert(why).second) {
          spdlog::warn("{}{}", Where(name, line_no), why);
        }
        break;
      case LineKind::kBad:
        return Status::InvalidInput(Where(name, line_no) + why);
    }
  }
  return keys;
}

Result<KeyRoleMap> LoadKeyRoles(const std::string& path) {
  auto file = ReadSmallFile(path, kMaxAuthorizedKeysBytes);
  if (!file.ok()) return file.status();
  return ParseKeyRoles(file->text, path);
}

Result<std::set<std::string>> ParseAuthorizedKeys(const std::string& text,
                                                  const std::string& name) {
  auto roles = ParseKeyRoles(text, name);
  if (!roles.ok()) return roles.status();
  std::set<std::string> keys;
  for (const auto& [key, r] : *roles) keys.insert(key);
  return keys;
}

Result<std::set<std::string>> LoadAuthorizedKeys(const std::string& path) {
  auto file = ReadSmallFile(path, kMaxAuthorizedKeysBytes);
  if (!file.ok()) return file.status();
  return ParseAuthorizedKeys(file->text, path);
}

Status ConfigureCurveServer(zmq::socket_t& socket, const CurveKeyPair& server,
                            const std::string& zap_domain) {
  if (!HasCurve()) return Status::Unsupported("this libzmq was built without CURVE");
  if (zap_domain.empty()) return Status::InvalidInput("a CURVE server needs a ZAP domain");
  APOLLO11_RETURN_IF_ERROR(CheckPair(server));
  int on = 1;
  APOLLO11_RETURN_IF_ERROR(SetOption(socket, ZMQ_CURVE_SERVER, &on, sizeof(on), "CURVE_SERVER"));
  APOLLO11_RETURN_IF_ERROR(
      SetKey(socket, ZMQ_CURVE_SECRETKEY, server.secret_z85, "CURVE_SECRETKEY"));
  APOLLO11_RETURN_IF_ERROR(
      SetKey(socket, ZMQ_CURVE_PUBLICKEY, server.public_z85, "CURVE_PUBLICKEY"));
  return SetOption(socket, ZMQ_ZAP_DOMAIN, zap_domain.data(), zap_domain.size(), "ZAP_DOMAIN");
}

Status ConfigureCurveClient(zmq::socket_t& socket, const CurveKeyPair& client,
                            const std::string& server_public) {
  if (!HasCurve()) return Status::Unsupported("this libzmq was built without CURVE");
  APOLLO11_RETURN_IF_ERROR(CheckPair(client));
  if (!IsValidZ85Key(server_public)) {
    return Status::InvalidInput("server public key is not a CURVE key (want 40 Z85 characters)");
  }
  APOLLO11_RETURN_IF_ERROR(SetKey(socket, ZMQ_CURVE_SERVERKEY, server_public, "CURVE_SERVERKEY"));
  APOLLO11_RETURN_IF_ERROR(
      SetKey(socket, ZMQ_CURVE_PUBLICKEY, client.public_z85, "CURVE_PUBLICKEY"));
  return SetKey(socket, ZMQ_CURVE_SECRETKEY, client.secret_z85, "CURVE_SECRETKEY");
}

bool IsLoopbackEndpoint(const std::string& endpoint) {
  std::string_view e(endpoint);
  if (e.starts_with("inproc://") || e.starts_with("ipc://")) return true;
  if (!e.starts_with("tcp://")) return false;
  e.remove_prefix(6);
  // Host and port: the port follows the last ':' (IPv6 hosts are bracketed).
  size_t colon = e.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view port = e.substr(colon + 1);
  if (port.empty()) return false;
  std::string host(e.substr(0, colon));
  if (host.find(';') != std::string::npos) return false;  // source-address form
  std::string lower = host;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "localhost") return true;
  if (lower.size() > 2 && lower.front() == '[' && lower.back() == ']') {
    std::string v6 = lower.substr(1, lower.size() - 2);
    in6_addr addr{};
    return inet_pton(AF_INET6, v6.c_str(), &addr) == 1 && IN6_IS_ADDR_LOOPBACK(&addr);
  }
  in_addr addr{};
  if (inet_pton(AF_INET, host.c_str(), &addr) != 1) return false;
  return (ntohl(addr.s_addr) >> 24) == 127;
}

}  // namespace apollo11::transport
