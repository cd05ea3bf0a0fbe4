// election: `apollo11 cluster [--http HOST:PORT|URL | --coordinator URL] [--cacert FILE]
// [--json]`: the HA view of a
// coordinator (its role, the leader, the epoch, the coordinators known) from
// its GET /api/cluster; `apollo11 cluster resign [--http HOST:PORT]
// --api-token T`: asks the leader to hand leadership over (POST
// /api/cluster/resign), for upgrades.
// Through the node's HTTP API: the election lives in the node, not in the
// scheduler the client protocol talks to. --http takes HOST:PORT (plain
// HTTP) or a URL, http[s]://HOST:PORT[/BASE], for a node that serves HTTPS
// (its CA in --cacert) or serves below --http-base-path.

#include <httplib.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "observability/http_server.h"

namespace apollo11::cli {
namespace {

struct ClusterFlags {
  std::string http;         // --http ("" = --coordinator, else the default below)
  std::string coordinator;  // --coordinator http(s)://..., as every client command takes
  std::string cacert;       // PEM CAs an HTTPS node's certificate must chain to
  std::string token, token_file;
  bool json = false;
};

constexpr const char* kDefaultNode = "127.0.0.1:8011";

// The node's HTTP API: --http, else --coordinator, else
// $APOLLO11_COORDINATOR when it is an http(s) URL (a ZeroMQ endpoint there
// is the other commands'; the election is only on the HTTP API), else
// 127.0.0.1:8011.
Result<std::string> NodeOf(const ClusterFlags& f) {
  const auto http = [](const std::string& s) {
    return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0;
  };
  if (!f.http.empty() && !f.coordinator.empty()) {
    return Status::InvalidInput("give --http or --coordinator, not both");
  }
  if (!f.http.empty()) return f.http;
  if (!f.coordinator.empty()) {
    if (!http(f.coordinator)) {
      return Status::InvalidInput(
          "--coordinator " + f.coordinator +
          ": `cluster` asks a node's HTTP API (the election lives there): give "
          "--coordinator http(s)://HOST:PORT");
    }
    return f.coordinator;
  }
  const char* env = std::getenv("APOLLO11_COORDINATOR");
  if (env != nullptr && http(env)) return std::string(env);
  return std::string(kDefaultNode);
}

// The bearer: --api-token, else --api-token-file, else $APOLLO11_API_TOKEN.
Result<std::string> TokenOf(const ClusterFlags& f) {
  if (!f.token.empty()) return f.token;
  if (!f.token_file.empty()) {
    std::FILE* in = std::fopen(f.token_file.c_str(), "r");
    if (in == nullptr) {
      return Status::InvalidInput("--api-token-file " + f.token_file + " cannot be read");
    }
    char line[4096] = {0};
    const bool read = std::fgets(line, sizeof line, in) != nullptr;
    std::fclose(in);
    std::string token = read ? line : "";
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
      token.pop_back();
    }
    return token;
  }
  const char* env = std::getenv("APOLLO11_API_TOKEN");
  return std::string(env != nullptr ? env : "");
}

// The node's HTTP API as --http names it.
struct Endpoint {
  std::string origin;  // "https://HOST:PORT"
  std::string base;    // "" or "/apollo"
};

Result<Endpoint> ParseEndpoint(const std::string& http) {
  std::string rest = http, scheme = "http";
  for (const char* s : {"http", "https"}) {
    const std::string prefix = std::string(s) + "://";
    if (rest.rfind(prefix, 0) == 0) {
      scheme = s;
      rest = rest.substr(prefix.size());
    }
  }
  const size_t slash = rest.find('/');
  const std::string hostport = rest.substr(0, slash);
  auto hp = observability::ParseHttpBind(hostport);
  if (!hp.ok()) return hp.status();
  auto base = observability::ParseBasePath(slash == std::string::npos ? "" : rest.substr(slash));
  if (!base.ok()) return base.status();
  return Endpoint{scheme + "://" + hostport, *base};
}

// A client of `e` with the CLI's timeouts and, for HTTPS, `cacert`.
std::unique_ptr<httplib::Client> ClientFor(const Endpoint& e, const ClusterFlags& f) {
  auto client = std::make_unique<httplib::Client>(e.origin);
  client->set_connection_timeout(5);
  client->set_read_timeout(10);
  if (!f.cacert.empty()) client->set_ca_cert_path(f.cacert.c_str());
  client->enable_server_certificate_verification(true);
  return client;
}

// Why `res` is empty, as httplib says it, with the address.
std::string NoAnswer(const httplib::Result& res, const Endpoint& e) {
  return "no answer from " + e.origin + e.base + ": " + httplib::to_string(res.error()) +
         (res.error() == httplib::Error::SSLServerVerification
              ? " (give the CA that signed the node's certificate with --cacert)"
              : "");
}

int Fail(const std::string& message, int code) {
  std::fprintf(stderr, "apollo11 cluster: %s\n", message.c_str());
  return code;
}

std::string Name(const nlohmann::json& member) {
  if (!member.is_object()) return "unknown";
  return member.value("name", "?") + " (workers " + member.value("workers", "?") + ", clients " +
         member.value("clients", "?") + ")";
}

// One line per coordinator known: name, role, replication lag, and whether
// it holds every batch the leader released (`in_sync`: the leader's set, an
// array only on a sync leader; "-" where not known).
void PrintCoordinators(const nlohmann::json& coordinators, const nlohmann::json& in_sync) {
  if (!coordinators.is_array() || coordinators.empty()) return;
  std::printf("\n%-16s %-8s %-14s %-10s %s\n", "COORDINATOR", "ROLE", "LAG (SEQ)", "LAG (MS)",
              "IN SYNC");
  for (const auto& c : coordinators) {
    if (!c.is_object()) continue;
    auto field = [&c](const char* key) {
      const auto it = c.find(key);
      return it == c.end() || !it->is_number_unsigned() ? std::string("-")
                                                        : std::to_string(it->get<uint64_t>());
    };
    const std::string role = c.value("role", "?");
    std::string synced = "-";
    if (in_sync.is_array() && role != "leader") {
      synced = "no";
      for (const auto& n : in_sync) {
        if (n.is_string() && n.get<std::string>() == c.value("name", "")) synced = "yes";
      }
    }
    std::printf("%-16s %-8s %-14s %-10s %s\n", c.value("name", "?").c_str(), role.c_str(),
                role == "leader" ? "-" : field("replication_lag_seq").c_str(),
                role == "leader" ? "-" : field("replication_lag_ms").c_str(), synced.c_str());
  }
}

int Show(const ClusterFlags& f) {
  auto node = NodeOf(f);
  if (!node.ok()) return Fail(node.status().message(), kExitInvalidInput);
  auto e = ParseEndpoint(*node);
  if (!e.ok()) return Fail(*node + ": " + e.status().message(), kExitInvalidInput);
  auto client = ClientFor(*e, f);
  // A node with a tokens file answers its readers only.
  auto bearer = TokenOf(f);
  if (!bearer.ok()) return Fail(bearer.status().message(), kExitInvalidInput);
  const std::string& token = *bearer;
  httplib::Headers auth;
  if (!token.empty()) auth.emplace("Authorization", "Bearer " + token);
  auto res = client->Get((e->base + "/api/cluster").c_str(), auth);
  if (!res) return Fail(NoAnswer(res, *e), kExitInternal);
  auto doc = nlohmann::json::parse(res->body, nullptr, false);
  if (res->status != 200 || !doc.is_object()) {
    return Fail("HTTP " + std::to_string(res->status) + ": " + res->body, kExitInternal);
  }
  if (f.json) {
    std::printf("%s\n", doc.dump(2).c_str());
    return kExitOk;
  }
  if (!doc.value("ha", false)) {
    std::printf("no HA: a single coordinator, epoch %llu\n",
                static_cast<unsigned long long>(doc.value("epoch", 0ull)));
    return kExitOk;
  }
  std::printf("this node: %s, %s\n", Name(doc["self"]).c_str(), doc.value("role", "?").c_str());
  std::printf("leader:    %s\n", Name(doc["leader"]).c_str());
  std::printf("epoch:     %llu\n", static_cast<unsigned long long>(doc.value("epoch", 0ull)));
  std::printf("failovers: %llu seen\n",
              static_cast<unsigned long long>(doc.value("failovers", 0ull)));
  const nlohmann::json& self = doc["self"];
  // (A field of the wrong type from the node reads as unknown, never throws.)
  const bool barred = self.is_object() && self.contains("eligible") &&
                      self["eligible"].is_boolean() && !self["eligible"].get<bool>();
  if (barred) {
    std::printf(
        "may lead:  no: the last leader released batches this node may not have; it "
        "campaigns again once it caught up (docs/ha.md, \"Runbook\")\n");
  }
  PrintCoordinators(doc["coordinators"], doc.contains("in_sync") ? doc["in_sync"] : nullptr);
  return kExitOk;
}

int Resign(const ClusterFlags& f) {
  auto node = NodeOf(f);
  if (!node.ok()) return Fail(node.status().message(), kExitInvalidInput);
  auto e = ParseEndpoint(*node);
  if (!e.ok()) return Fail(*node + ": " + e.status().message(), kExitInvalidInput);
  auto bearer = TokenOf(f);
  if (!bearer.ok()) return Fail(bearer.status().message(), kExitInvalidInput);
  const std::string token = *bearer;
  if (token.empty()) {
    return Fail("resign needs --api-token-file (or $APOLLO11_API_TOKEN, or --api-token)",
                kExitInvalidInput);
  }
  auto client = ClientFor(*e, f);
  auto res = client->Post((e->base + "/api/cluster/resign").c_str(),
                          {{"Authorization", "Bearer " + token}}, "", "application/json");
  if (!res) return Fail(NoAnswer(res, *e), kExitInternal);
  if (res->status != 202) {
    auto doc = nlohmann::json::parse(res->body, nullptr, false);
    const std::string why =
        doc.is_object() && doc.contains("error") ? doc["error"].dump() : res->body;
    return Fail("resign refused (HTTP " + std::to_string(res->status) + "): " + why,
                res->status == 421 || res->status == 400 ? kExitInvalidInput : kExitInternal);
  }
  std::printf("resign requested: a standby takes over within one campaign round\n");
  return kExitOk;
}

}  // namespace

void AddClusterCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ClusterFlags>();
  CLI::App* cmd = app.add_subcommand(
      "cluster", "HA: this coordinator's role, the leader and the epoch (from its HTTP API)");
  cmd->add_option("--http", flags->http,
                  "the coordinator's --http-bind HOST:PORT, or http[s]://HOST:PORT[/BASE] "
                  "(default 127.0.0.1:8011)");
  cmd->add_option("--coordinator", flags->coordinator,
                  "the node's HTTP API as http(s)://HOST:PORT[/BASE], as the other client "
                  "commands take it (default $APOLLO11_COORDINATOR when it is one)");
  cmd->add_option("--cacert", flags->cacert, "PEM CAs for an HTTPS node's certificate");
  cmd->add_option("--api-token", flags->token,
                  "a viewer's API token, for a node with --api-tokens (or $APOLLO11_API_TOKEN)");
  cmd->add_option("--api-token-file", flags->token_file, "file holding that token");
  cmd->add_flag("--json", flags->json, "print /api/cluster's JSON");
  CLI::App* resign = cmd->add_subcommand("resign", "ask the leader to hand leadership over");
  // Also after `resign`, as docs/ha.md writes it: `cluster resign --http
  // LEADER:8011 --api-token T` (before it, `cluster --http LEADER resign`).
  resign->add_option("--http", flags->http,
                     "the leader's --http-bind HOST:PORT, or http[s]://HOST:PORT[/BASE]");
  resign->add_option("--cacert", flags->cacert, "PEM CAs for an HTTPS node's certificate");
  resign->add_option("--coordinator", flags->coordinator,
                     "the leader's HTTP API as http(s)://HOST:PORT[/BASE]");
  resign->add_option("--api-token", flags->token, "the node's API token (or $APOLLO11_API_TOKEN)");
  resign->add_option("--api-token-file", flags->token_file, "file holding that token");
  cmd->callback([resign, flags, exit_code] {
    if (resign->parsed()) return;
    *exit_code = Show(*flags);
  });
  resign->callback([flags, exit_code] { *exit_code = Resign(*flags); });
}

}  // namespace apollo11::cli
