#include "transport/security.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "transport/sockets.h"
#include "transport/zap_handler.h"

namespace apollo11::transport {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr char kDomain[] = "workers";

// A fresh directory under /tmp, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/apollo11-security-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(path_ + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string path_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

CurveKeyPair NewKeys() {
  auto keys = GenerateKeyPair();
  REQUIRE(keys.ok());
  return *keys;
}

// Polls `predicate` every 5 ms for up to `timeout`.
bool WaitUntil(const std::function<bool()>& predicate, milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return predicate();
}

// A ROUTER server on tcp://127.0.0.1:0 (CURVE if `server` is given).
struct Server {
  zmq::socket_t router;
  std::string endpoint;
};

Server StartServer(zmq::context_t& ctx, const CurveKeyPair* server, const char* zap_domain) {
  Server s{zmq::socket_t(ctx, zmq::socket_type::router), ""};
  REQUIRE(ConfigureRouter(s.router).ok());
  if (server != nullptr) {
    REQUIRE(ConfigureCurveServer(s.router, *server, zap_domain).ok());
  } else if (zap_domain != nullptr) {
    s.router.set(zmq::sockopt::zap_domain, zap_domain);
  }
  auto bound = Bind(s.router, "tcp://127.0.0.1:0");
  REQUIRE(bound.ok());
  s.endpoint = *bound;
  return s;
}

// A DEALER that queues its message until the handshake completes, so a
// refused handshake means the message never arrives.
zmq::socket_t Connect(zmq::context_t& ctx, const std::string& endpoint, const CurveKeyPair* client,
                      const std::string& server_public) {
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  SocketOptions options;
  options.immediate = false;
  REQUIRE(ConfigureDealer(dealer, "w1", options).ok());
  dealer.set(zmq::sockopt::reconnect_ivl, 20);
  if (client != nullptr) REQUIRE(ConfigureCurveClient(dealer, *client, server_public).ok());
  REQUIRE(transport::Connect(dealer, endpoint).ok());
  REQUIRE(Send(dealer, "hello", /*dontwait=*/false).ok());
  return dealer;
}

// The next message on the ROUTER within `timeout`, if any.
std::optional<RoutedMessage> RecvWithin(zmq::socket_t& router, milliseconds timeout) {
  zmq::pollitem_t items[] = {{router.handle(), 0, ZMQ_POLLIN, 0}};
  auto n = Poll(items, timeout);
  REQUIRE(n.ok());
  if (*n == 0) return std::nullopt;
  auto msg = RecvFrom(router);
  REQUIRE(msg.ok());
  return std::move(*msg);
}

TEST_CASE("libzmq has CURVE and generates valid distinct key pairs", "[security]") {
  REQUIRE(zmq_has("curve"));
  CurveKeyPair a = NewKeys(), b = NewKeys();
  CHECK(IsValidZ85Key(a.public_z85));
  CHECK(IsValidZ85Key(a.secret_z85));
  CHECK(a.public_z85 != b.public_z85);
  CHECK(a.secret_z85 != b.secret_z85);
}

TEST_CASE("an authorized CURVE client's message arrives, tagged with its key", "[security][zap]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys(), client = NewKeys();
  auto zap = ZapHandler::Start(ctx, {{kDomain, {client.public_z85}}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, &server, kDomain);
  zmq::socket_t dealer = Connect(ctx, s.endpoint, &client, server.public_z85);

  auto msg = RecvWithin(s.router, milliseconds(5000));
  REQUIRE(msg);
  CHECK(msg->identity == "w1");
  CHECK(msg->payload.to_string() == "hello");
  const char* user_id = zmq_msg_gets(msg->payload.handle(), "User-Id");
  REQUIRE(user_id != nullptr);
  CHECK(std::string(user_id) == client.public_z85);
  CHECK((*zap)->accepted() == 1);
  CHECK((*zap)->refused() == 0);
}

TEST_CASE("an unlisted CURVE key never gets through and is counted as refused", "[security][zap]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys(), listed = NewKeys(), intruder = NewKeys();
  auto zap = ZapHandler::Start(ctx, {{kDomain, {listed.public_z85}}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, &server, kDomain);
  zmq::socket_t dealer = Connect(ctx, s.endpoint, &intruder, server.public_z85);

  REQUIRE(WaitUntil([&] { return (*zap)->refused() >= 1; }, milliseconds(5000)));
  CHECK_FALSE(RecvWithin(s.router, milliseconds(500)));
  CHECK((*zap)->accepted() == 0);
}

TEST_CASE("a key listed for another domain is refused", "[security][zap]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys(), client = NewKeys();
  auto zap = ZapHandler::Start(ctx, {{"clients", {client.public_z85}}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, &server, kDomain);
  zmq::socket_t dealer = Connect(ctx, s.endpoint, &client, server.public_z85);
  REQUIRE(WaitUntil([&] { return (*zap)->refused() >= 1; }, milliseconds(5000)));
  CHECK_FALSE(RecvWithin(s.router, milliseconds(300)));
}

TEST_CASE("a plaintext client is refused by a CURVE server", "[security][zap]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys();
  auto zap = ZapHandler::Start(ctx, {{kDomain, {}}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, &server, kDomain);
  // No CURVE options: the NULL mechanism. libzmq fails the greeting on the
  // mechanism mismatch before any ZAP request.
  zmq::socket_t dealer = Connect(ctx, s.endpoint, nullptr, "");
  CHECK_FALSE(RecvWithin(s.router, milliseconds(500)));
  CHECK((*zap)->accepted() == 0);
}

TEST_CASE("the handler refuses the NULL mechanism on a socket with a ZAP domain",
          "[security][zap]") {
  zmq::context_t ctx;
  auto zap = ZapHandler::Start(ctx, {{kDomain, {}}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, nullptr, kDomain);  // plaintext, but ZAP-checked
  zmq::socket_t dealer = Connect(ctx, s.endpoint, nullptr, "");
  REQUIRE(WaitUntil([&] { return (*zap)->refused() >= 1; }, milliseconds(5000)));
  CHECK_FALSE(RecvWithin(s.router, milliseconds(300)));
}

TEST_CASE("without a ZAP handler libzmq's CURVE server accepts any key (why we run one)",
          "[security][zap]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys(), anyone = NewKeys();
  Server s = StartServer(ctx, &server, kDomain);
  zmq::socket_t dealer = Connect(ctx, s.endpoint, &anyone, server.public_z85);
  auto msg = RecvWithin(s.router, milliseconds(5000));
  REQUIRE(msg);  // if this ever fails, libzmq started enforcing ZAP itself
  CHECK(msg->payload.to_string() == "hello");
}

TEST_CASE("a client trusting the wrong server key never connects", "[security]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys(), impostor = NewKeys(), client = NewKeys();
  auto zap = ZapHandler::Start(ctx, {{kDomain, {client.public_z85}}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, &server, kDomain);
  zmq::socket_t dealer = Connect(ctx, s.endpoint, &client, impostor.public_z85);
  CHECK_FALSE(RecvWithin(s.router, milliseconds(500)));
  CHECK((*zap)->accepted() == 0);
}

TEST_CASE("reloaded authorized keys admit a newly listed client", "[security][zap]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys(), client = NewKeys();
  auto zap = ZapHandler::Start(ctx, {{kDomain, {}}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, &server, kDomain);
  zmq::socket_t dealer = Connect(ctx, s.endpoint, &client, server.public_z85);
  REQUIRE(WaitUntil([&] { return (*zap)->refused() >= 1; }, milliseconds(5000)));
  REQUIRE((*zap)->SetAuthorizedKeys({{kDomain, {client.public_z85}}}).ok());
  // libzmq does not retry a handshake refused with ZAP 400 (the server sends
  // a ZMTP ERROR), so the client's next connection is the one admitted.
  zmq::socket_t retry = Connect(ctx, s.endpoint, &client, server.public_z85);
  auto msg = RecvWithin(s.router, milliseconds(5000));
  REQUIRE(msg);
  CHECK(msg->payload.to_string() == "hello");
  CHECK((*zap)->accepted() == 1);
}

TEST_CASE("reloaded authorized keys stamp new connections with their new roles",
          "[security][zap]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys(), client = NewKeys();
  auto zap =
      ZapHandler::Start(ctx, {{kDomain, {client.public_z85}}}, {{client.public_z85, kRoleViewer}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, &server, kDomain);
  zmq::socket_t first = Connect(ctx, s.endpoint, &client, server.public_z85);
  auto msg = RecvWithin(s.router, milliseconds(5000));
  REQUIRE(msg);
  CHECK(std::string(zmq_msg_gets(msg->payload.handle(), kRolesProperty)) == "viewer");
  REQUIRE(
      (*zap)
          ->SetAuthorizedKeys({{kDomain, {client.public_z85}}}, {{client.public_z85, kRoleAdmin}})
          .ok());
  zmq::socket_t second = Connect(ctx, s.endpoint, &client, server.public_z85);
  msg = RecvWithin(s.router, milliseconds(5000));
  REQUIRE(msg);
  CHECK(std::string(zmq_msg_gets(msg->payload.handle(), kRolesProperty)) == "admin");
}

TEST_CASE("only one ZAP handler may run per context", "[security][zap]") {
  zmq::context_t ctx;
  auto first = ZapHandler::Start(ctx, {});
  REQUIRE(first.ok());
  auto second = ZapHandler::Start(ctx, {});
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kBusy);
  zmq::context_t other;
  CHECK(ZapHandler::Start(other, {}).ok());
}

// Sends a raw ZAP request to the handler and returns the reply frames.
std::vector<std::string> RawZap(zmq::context_t& ctx, const std::vector<std::string>& request) {
  zmq::socket_t req(ctx, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 5000);
  req.connect(kZapEndpoint);
  for (size_t i = 0; i < request.size(); ++i) {
    req.send(zmq::buffer(request[i]),
             i + 1 < request.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  std::vector<std::string> reply;
  for (;;) {
    zmq::message_t frame;
    REQUIRE(req.recv(frame));
    reply.push_back(frame.to_string());
    if (!frame.more()) break;
  }
  return reply;
}

TEST_CASE("malformed ZAP requests get a 400 reply and the handler keeps serving",
          "[security][zap]") {
  zmq::context_t ctx;
  CurveKeyPair client = NewKeys();
  auto zap = ZapHandler::Start(ctx, {{kDomain, {client.public_z85}}});
  REQUIRE(zap.ok());
  auto short_reply = RawZap(ctx, {"1.0", "id1", kDomain});
  REQUIRE(short_reply.size() == 6);
  CHECK(short_reply[0] == "1.0");
  CHECK(short_reply[1] == "id1");
  CHECK(short_reply[2] == "400");
  auto huge =
      RawZap(ctx, {"1.0", "id2", kDomain, "127.0.0.1", "", "CURVE", std::string(1 << 20, 'x')});
  CHECK(huge[2] == "400");

  uint8_t binary[32];
  REQUIRE(zmq_z85_decode(binary, client.public_z85.c_str()) != nullptr);
  std::string credential(reinterpret_cast<char*>(binary), sizeof(binary));
  auto ok = RawZap(ctx, {"1.0", "id3", kDomain, "127.0.0.1", "", "CURVE", credential});
  CHECK(ok[1] == "id3");
  CHECK(ok[2] == "200");
  CHECK(ok[4] == client.public_z85);
  CHECK((*zap)->refused() == 2);
  CHECK((*zap)->accepted() == 1);
}

TEST_CASE("DecideZap admits only a listed CURVE key in its own domain", "[security][zap]") {
  CurveKeyPair client = NewKeys();
  uint8_t binary[32];
  REQUIRE(zmq_z85_decode(binary, client.public_z85.c_str()) != nullptr);
  std::string cred(reinterpret_cast<char*>(binary), sizeof(binary));
  AuthorizedKeys keys{{kDomain, {client.public_z85}}};
  auto req = [&](std::string version, std::string domain, std::string mech,
                 std::vector<std::string> creds) {
    std::vector<std::string> r{version, "rid", domain, "10.1.2.3", "", mech};
    r.insert(r.end(), creds.begin(), creds.end());
    return r;
  };
  ZapDecision ok = DecideZap(req("1.0", kDomain, "CURVE", {cred}), keys);
  CHECK(ok.accepted);
  CHECK(ok.user_id == client.public_z85);
  CHECK(ok.request_id == "rid");

  CHECK_FALSE(DecideZap(req("2.0", kDomain, "CURVE", {cred}), keys).accepted);
  CHECK_FALSE(DecideZap(req("1.0", "other", "CURVE", {cred}), keys).accepted);
  CHECK_FALSE(DecideZap(req("1.0", kDomain, "NULL", {}), keys).accepted);
  CHECK_FALSE(DecideZap(req("1.0", kDomain, "PLAIN", {"user", "pass"}), keys).accepted);
  CHECK_FALSE(DecideZap(req("1.0", kDomain, "CURVE", {cred.substr(1)}), keys).accepted);
  CHECK_FALSE(DecideZap(req("1.0", kDomain, "CURVE", {cred, cred}), keys).accepted);
  CHECK_FALSE(DecideZap(req("1.0", kDomain, "CURVE", {}), keys).accepted);
  CHECK_FALSE(DecideZap({}, keys).accepted);
  ZapDecision refused = DecideZap(req("1.0", kDomain, "CURVE", {cred}), {{kDomain, {}}});
  CHECK_FALSE(refused.accepted);
  CHECK(refused.address == "10.1.2.3");
  CHECK(refused.status_text.find("not authorized") != std::string::npos);
  CHECK(refused.user_id.empty());
}

TEST_CASE("a saved key pair loads back and the secret file is 0600", "[security][keys]") {
  TempDir dir;
  CurveKeyPair keys = NewKeys();
  std::string prefix = dir.path() + "/node";
  ::umask(0);  // SaveKeyPair must not depend on the caller's umask
  Status saved = SaveKeyPair(keys, prefix);
  ::umask(022);
  REQUIRE(saved.ok());
  CHECK(ModeOf(prefix + ".key") == 0600);
  CHECK(ModeOf(prefix + ".pub") == 0644);
  CHECK(dir.Read("node.pub") == keys.public_z85 + "\n");
  CHECK(dir.Read("node.key").find("secret = " + keys.secret_z85 + "\n") != std::string::npos);

  auto loaded = LoadKeyPair(prefix + ".key");
  REQUIRE(loaded.ok());
  CHECK(loaded->public_z85 == keys.public_z85);
  CHECK(loaded->secret_z85 == keys.secret_z85);
  auto pub_from_pub = LoadPublicKey(prefix + ".pub");
  REQUIRE(pub_from_pub.ok());
  CHECK(*pub_from_pub == keys.public_z85);
  auto pub_from_key = LoadPublicKey(prefix + ".key");
  REQUIRE(pub_from_key.ok());
  CHECK(*pub_from_key == keys.public_z85);
  // A .pub file is a valid authorized-keys file.
  auto authorized = LoadAuthorizedKeys(prefix + ".pub");
  REQUIRE(authorized.ok());
  CHECK(*authorized == std::set<std::string>{keys.public_z85});
}

TEST_CASE("bad key files are refused with a reason", "[security][keys]") {
  TempDir dir;
  CurveKeyPair a = NewKeys(), b = NewKeys();
  SECTION("readable by others") {
    REQUIRE(SaveKeyPair(a, dir.path() + "/a").ok());
    REQUIRE(::chmod((dir.path() + "/a.key").c_str(), 0644) == 0);
    auto r = LoadKeyPair(dir.path() + "/a.key");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("chmod 600") != std::string::npos);
  }
  SECTION("public key of another pair") {
    std::string p =
        dir.Write("mix.key", "public = " + b.public_z85 + "\nsecret = " + a.secret_z85 + "\n");
    ::chmod(p.c_str(), 0600);
    auto r = LoadKeyPair(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("does not belong") != std::string::npos);
  }
  SECTION("malformed secret, without echoing it") {
    std::string p = dir.Write("bad.key", "public = " + a.public_z85 + "\nsecret = tooshort\n");
    ::chmod(p.c_str(), 0600);
    auto r = LoadKeyPair(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("bad.key:2:") != std::string::npos);
    CHECK(r.status().message().find("tooshort") == std::string::npos);
  }
  SECTION("missing file") {
    auto r = LoadKeyPair(dir.path() + "/nope.key");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kNotFound);
  }
  SECTION("a .pub file with two keys") {
    std::string p = dir.Write("two.pub", a.public_z85 + "\n" + b.public_z85 + "\n");
    CHECK_FALSE(LoadPublicKey(p).ok());
  }
  SECTION("SaveKeyPair refuses a mismatched pair") {
    CHECK_FALSE(SaveKeyPair({a.public_z85, b.secret_z85}, dir.path() + "/x").ok());
  }
}

TEST_CASE("authorized-keys files allow comments and report bad lines as FILE:LINE",
          "[security][keys]") {
  TempDir dir;
  CurveKeyPair a = NewKeys(), b = NewKeys();
  std::string good =
      dir.Write("authorized_keys", "# workers\n\n" + a.public_z85 + "   # worker-1\n  " +
                                       b.public_z85 + "\n\t\n# end\n");
  auto keys = LoadAuthorizedKeys(good);
  REQUIRE(keys.ok());
  CHECK(*keys == std::set<std::string>{a.public_z85, b.public_z85});

  std::string bad = dir.Write("bad_keys", "# ok\n" + a.public_z85 + "\nnot-a-key\n");
  auto r = LoadAuthorizedKeys(bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidInput);
  CHECK(r.status().message().find(bad + ":3: ") == 0);

  auto trailing = ParseAuthorizedKeys(a.public_z85 + " worker-1\n", "f");
  REQUIRE_FALSE(trailing.ok());
  CHECK(trailing.status().message().find("f:1: ") == 0);

  // 40 characters but not Z85 ('"' is outside the alphabet), and 40 Z85
  // characters whose 5-character group overflows 32 bits.
  CHECK_FALSE(ParseAuthorizedKeys(std::string(40, '"'), "f").ok());
  CHECK_FALSE(IsValidZ85Key(std::string(40, '%')));
  CHECK_FALSE(ParseAuthorizedKeys(a.public_z85.substr(0, 39), "f").ok());
  CHECK_FALSE(ParseAuthorizedKeys(a.secret_z85 + a.public_z85, "f").ok());

  auto empty = ParseAuthorizedKeys("# nobody yet\n", "f");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

TEST_CASE("no valid key starts with '#', so a '#' line is always a comment", "[security][keys]") {
  // '#' is the largest Z85 digit: 84 * 85^4 > 2^32 - 1 overflows a group.
  CHECK_FALSE(IsValidZ85Key("#" + std::string(39, '0')));
  CHECK(IsValidZ85Key("%" + std::string(39, '0')));
}

TEST_CASE("configure helpers reject malformed keys and an empty ZAP domain", "[security]") {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::router);
  CurveKeyPair a = NewKeys(), b = NewKeys();
  CHECK_FALSE(ConfigureCurveServer(s, a, "").ok());
  CHECK_FALSE(ConfigureCurveServer(s, {a.public_z85, b.secret_z85}, kDomain).ok());
  CHECK_FALSE(ConfigureCurveClient(s, a, "short").ok());
  CHECK(ConfigureCurveServer(s, a, kDomain).ok());
}

TEST_CASE("IsLoopbackEndpoint accepts only endpoints that stay on this machine", "[security]") {
  struct Row {
    const char* endpoint;
    bool loopback;
  };
  const Row rows[] = {
      {"tcp://127.0.0.1:7011", true},
      {"tcp://127.1.2.3:0", true},
      {"tcp://localhost:7011", true},
      {"tcp://LOCALHOST:1", true},
      {"tcp://[::1]:7011", true},
      {"inproc://apollo11", true},
      {"ipc:///tmp/apollo11.sock", true},
      {"tcp://*:7011", false},
      {"tcp://0.0.0.0:7011", false},
      {"tcp://[::]:7011", false},
      {"tcp://10.0.0.5:7011", false},
      {"tcp://192.168.1.1:7011", false},
      {"tcp://eth0:7011", false},
      {"tcp://128.0.0.1:7011", false},
      {"tcp://127.0.0.1", false},
      {"tcp://127.0.0.1.evil.com:1", false},
      {"tcp://127.0.0.1;10.0.0.1:1", false},
      {"udp://127.0.0.1:1", false},
      {"pgm://127.0.0.1:1", false},
      {"", false},
      {"tcp://:7011", false},
      {"tcp://[::ffff:10.0.0.1]:1", false},
  };
  for (const Row& row : rows) {
    INFO(row.endpoint);
    CHECK(IsLoopbackEndpoint(row.endpoint) == row.loopback);
  }
}

// Runs the real `apollo11` binary with `args`; stdout captured, stderr to a
// file.
struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

CliResult RunApollo11(const std::string& args, const TempDir& dir) {
  const char* env = std::getenv("APOLLO11_BIN_DIR");
  std::string bin = std::string(env ? env : APOLLO11_BIN_DIR) + "/apollo11";
  INFO("binary: " << bin << " (build the apollo11 target first)");
  REQUIRE(::access(bin.c_str(), X_OK) == 0);
  std::string err_path = dir.path() + "/stderr.txt";
  std::string cmd = bin + " " + args + " 2>" + err_path;
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = dir.Read("stderr.txt");
  return r;
}

TEST_CASE("apollo11 keygen writes a usable key pair and refuses to overwrite without --force",
          "[security][cli]") {
  TempDir dir;
  std::string prefix = dir.path() + "/worker1";
  CliResult first = RunApollo11("keygen " + prefix, dir);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  auto loaded = LoadKeyPair(prefix + ".key");
  REQUIRE(loaded.ok());
  CHECK(first.out == loaded->public_z85 + "\n");
  CHECK(ModeOf(prefix + ".key") == 0600);
  CHECK(dir.Read("worker1.pub") == loaded->public_z85 + "\n");

  CliResult again = RunApollo11("keygen " + prefix, dir);
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("--force") != std::string::npos);
  auto unchanged = LoadKeyPair(prefix + ".key");
  REQUIRE(unchanged.ok());
  CHECK(unchanged->secret_z85 == loaded->secret_z85);

  CliResult forced = RunApollo11("keygen --force " + prefix, dir);
  CHECK(forced.exit_code == 0);
  auto replaced = LoadKeyPair(prefix + ".key");
  REQUIRE(replaced.ok());
  CHECK(replaced->secret_z85 != loaded->secret_z85);
  CHECK(forced.out == replaced->public_z85 + "\n");

  CHECK(RunApollo11("keygen", dir).exit_code == 2);
  CHECK(RunApollo11("keygen " + dir.path() + "/missing-dir/k", dir).exit_code == 3);
}

TEST_CASE("a ZAP handler that stops without being told reports why", "[security][zap]") {
  zmq::context_t ctx;
  auto zap = ZapHandler::Start(ctx, {{kDomain, {}}});
  REQUIRE(zap.ok());
  CHECK_FALSE((*zap)->failure().has_value());
  // What a crash of its thread looks like from outside: it no longer answers,
  // and CURVE servers in the context would admit any key.
  ctx.shutdown();
  std::optional<std::string> failure;
  for (int i = 0; i < 500 && !failure; ++i) {
    failure = (*zap)->failure();
    if (!failure) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(failure.has_value());
  CHECK(failure->find("ZAP handler: ") == 0);
  CHECK(failure->find("terminated") != std::string::npos);
  (void)(*zap)->Stop();
}

TEST_CASE("a ZAP handler stopped by its owner reports no failure", "[security][zap]") {
  zmq::context_t ctx;
  auto zap = ZapHandler::Start(ctx, {{kDomain, {}}});
  REQUIRE(zap.ok());
  REQUIRE((*zap)->Stop().ok());
  CHECK_FALSE((*zap)->failure().has_value());
}

TEST_CASE("a connection carries its key's roles from the ZAP handler to every message",
          "[security][zap][roles]") {
  zmq::context_t ctx;
  CurveKeyPair server = NewKeys(), client = NewKeys();
  auto zap = ZapHandler::Start(ctx, {{kDomain, {client.public_z85}}},
                               {{client.public_z85, kRoleViewer | kRoleOperator}});
  REQUIRE(zap.ok());
  Server s = StartServer(ctx, &server, kDomain);
  zmq::socket_t dealer = Connect(ctx, s.endpoint, &client, server.public_z85);
  auto msg = RecvWithin(s.router, milliseconds(5000));
  REQUIRE(msg);
  CHECK(msg->peer.key == client.public_z85);
  CHECK(msg->peer.roles == (kRoleViewer | kRoleOperator));
  CHECK(msg->peer.authenticated());
}

TEST_CASE("authorized keys carry a role per line, and a line without one keeps its old meaning",
          "[security][keys][roles]") {
  CurveKeyPair a = NewKeys(), b = NewKeys(), c = NewKeys();
  auto roles = ParseKeyRoles("# fleet\nworker " + a.public_z85 + "  # w1\nviewer " + b.public_z85 +
                                 "\nadmin " + b.public_z85 + "\n" + c.public_z85 + "\n",
                             "f");
  REQUIRE(roles.ok());
  CHECK(roles->at(a.public_z85) == kRoleWorker);
  CHECK(roles->at(b.public_z85) == (kRoleViewer | kRoleAdmin));
  CHECK(roles->at(c.public_z85) == kRolesUnstated);
  CHECK(*ParseAuthorizedKeys("operator " + a.public_z85 + "\n", "f") ==
        std::set<std::string>{a.public_z85});
  auto unknown = ParseKeyRoles("superuser " + a.public_z85 + "\n", "f");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("f:1: ") == 0);
  auto no_key = ParseKeyRoles("worker\n", "f");
  REQUIRE_FALSE(no_key.ok());
  CHECK(no_key.status().message().find("after the role") != std::string::npos);
  CHECK(FormatRoles(kRoleWorker | kRoleAdmin) == "worker,admin");
  CHECK(ParseRoles("worker,admin,bogus") == (kRoleWorker | kRoleAdmin));
}

TEST_CASE("the older role names are read as viewer and operator", "[security][keys][roles]") {
  CurveKeyPair a = NewKeys(), b = NewKeys();
  auto roles = ParseKeyRoles("reader " + a.public_z85 + "\nclient " + b.public_z85 + "\n", "f");
  REQUIRE(roles.ok());
  CHECK(roles->at(a.public_z85) == kRoleViewer);
  CHECK(roles->at(b.public_z85) == kRoleOperator);
  CHECK(RoleNameNote("client").find("not submit a pipeline file or register one") !=
        std::string::npos);
  CHECK(RoleNameNote("operator").empty());
  // The ZAP metadata round trip uses the current names.
  CHECK(ParseRoles(FormatRoles(kRoleViewer | kRoleOperator)) == (kRoleViewer | kRoleOperator));
}

TEST_CASE("one table says which roles may do each action", "[security][roles]") {
  // Every action has its row, in order (RuleOf aborts otherwise).
  for (size_t i = 0; i < ActionRules().size(); ++i) {
    CHECK(static_cast<size_t>(ActionRules()[i].action) == i);
  }
  struct Row {
    Action action;
    bool viewer, op, admin, worker;
  };
  const Row rows[] = {
      {Action::kRead, true, true, true, false},
      {Action::kReadSnapshot, false, true, true, false},
      {Action::kTrigger, false, true, true, false},
      {Action::kRerun, false, true, true, false},
      {Action::kCancel, false, true, true, false},
      {Action::kConfirm, false, true, true, false},
      {Action::kPause, false, true, true, false},
      {Action::kUnpause, false, true, true, false},
      {Action::kBackfill, false, true, true, false},
      {Action::kSubmit, false, false, true, false},
      {Action::kRegister, false, false, true, false},
      {Action::kRemove, false, false, true, false},
      {Action::kResign, false, false, true, false},
      {Action::kReadAudit, false, false, true, false},
      {Action::kWork, false, false, false, true},
  };
  REQUIRE(std::size(rows) == ActionRules().size());
  for (const Row& r : rows) {
    INFO(RuleOf(r.action).name);
    CHECK(Allows(kRoleViewer, r.action) == r.viewer);
    CHECK(Allows(kRoleOperator, r.action) == r.op);
    CHECK(Allows(kRoleAdmin, r.action) == r.admin);
    CHECK(Allows(kRoleWorker, r.action) == r.worker);
    // A key without a role (worker and admin) may do everything.
    CHECK(Allows(kRolesUnstated, r.action));
  }
  CHECK(RolesThatMay(Action::kRead) == "viewer, operator or admin");
  CHECK(RolesThatMay(Action::kCancel) == "operator or admin");
  CHECK(RolesThatMay(Action::kRegister) == "admin");
}

}  // namespace
}  // namespace apollo11::transport
