#include "cli/ha_config.h"

#include <algorithm>
#include <utility>

#include "cli/node_config.h"
#include "cli/node_env.h"
#include "common/duration.h"

namespace apollo11::cli {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool Wildcard(const std::string& endpoint) {
  return endpoint.find("://*") != std::string::npos ||
         endpoint.find("://0.0.0.0") != std::string::npos ||
         endpoint.find("://[::]") != std::string::npos;
}

bool AnyEtcdSecurityFlag(const NodeFlags& f) {
  return !f.ha_etcd_cacert.empty() || !f.ha_etcd_cert.empty() || !f.ha_etcd_key.empty() ||
         !f.ha_etcd_user.empty() || !f.ha_etcd_password_file.empty();
}

// --ha-etcd-cacert/-cert/-key and --ha-etcd-user/-password-file, checked
// and read now: a coordinator that could never talk to etcd does not start.
Result<ha::EtcdSecurity> ResolveEtcdSecurity(const NodeFlags& f,
                                             const std::vector<std::string>& etcd, NodeEnv& env) {
  ha::EtcdSecurity s;
  const bool https = std::any_of(etcd.begin(), etcd.end(),
                                 [](const std::string& e) { return StartsWith(e, "https://"); });
  const bool tls_flag =
      !f.ha_etcd_cacert.empty() || !f.ha_etcd_cert.empty() || !f.ha_etcd_key.empty();
  if (tls_flag && !https) {
    return Status::InvalidInput(
        "--ha-etcd-cacert, --ha-etcd-cert and --ha-etcd-key are for https:// etcd endpoints; "
        "--ha-etcd gives none");
  }
  if (f.ha_etcd_cert.empty() != f.ha_etcd_key.empty()) {
    return Status::InvalidInput("--ha-etcd-cert and --ha-etcd-key go together");
  }
  for (const auto& [flag, path] :
       {std::pair{"--ha-etcd-cacert", &f.ha_etcd_cacert},
        std::pair{"--ha-etcd-cert", &f.ha_etcd_cert}, std::pair{"--ha-etcd-key", &f.ha_etcd_key}}) {
    if (path->empty()) continue;
    auto readable = env.ReadFirstLine(*path);
    if (!readable.ok()) {
      return Status::InvalidInput(std::string(flag) + " " + *path + ": " +
                                  readable.status().message());
    }
  }
  s.cacert = f.ha_etcd_cacert.empty() ? "" : env.AbsolutePath(f.ha_etcd_cacert);
  s.cert = f.ha_etcd_cert.empty() ? "" : env.AbsolutePath(f.ha_etcd_cert);
  s.key = f.ha_etcd_key.empty() ? "" : env.AbsolutePath(f.ha_etcd_key);
  if (f.ha_etcd_user.empty() != f.ha_etcd_password_file.empty()) {
    return Status::InvalidInput("--ha-etcd-user and --ha-etcd-password-file go together");
  }
  if (!f.ha_etcd_user.empty()) {
    auto line = env.ReadFirstLine(f.ha_etcd_password_file);
    if (!line.ok()) {
      return Status::InvalidInput("--ha-etcd-password-file " + f.ha_etcd_password_file + ": " +
                                  line.status().message());
    }
    std::string password = *line;
    while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
      password.pop_back();
    }
    if (password.empty()) {
      return Status::InvalidInput("--ha-etcd-password-file " + f.ha_etcd_password_file +
                                  " is empty");
    }
    s.user = f.ha_etcd_user;
    s.password = std::move(password);
  }
  return s;
}

}  // namespace

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    start = end + 1;
  }
  return out;
}

Result<HaConfig> ResolveHaConfig(const NodeFlags& f, NodeEnv& env) {
  HaConfig c;
  c.etcd = SplitList(f.ha_etcd);
  if (c.etcd.empty()) {
    if (!f.ha_name.empty() || !f.ha_advertise.empty() || f.ha_lease != "5s" ||
        f.ha_election != HaConfig().election || AnyEtcdSecurityFlag(f)) {
      return Status::InvalidInput(
          "--ha-name, --ha-advertise, --ha-lease, --ha-election and --ha-etcd-* need --ha-etcd "
          "(the etcd "
          "endpoints of the election)");
    }
    return c;
  }
  if (f.role != "coordinator") {
    return Status::InvalidInput(
        "--ha-etcd needs --role=coordinator (workers follow the leader "
        "through --connect with a list of coordinators)");
  }
  for (const std::string& e : c.etcd) {
    if (!StartsWith(e, "http://") && !StartsWith(e, "https://")) {
      return Status::InvalidInput("--ha-etcd " + e + ": want http://HOST:PORT (etcd's client URL)");
    }
  }
  std::vector<std::string> advertise = SplitList(f.ha_advertise);
  if (advertise.empty()) {
    if (Wildcard(f.bind) || Wildcard(f.api_bind)) {
      return Status::InvalidInput(
          "--ha-advertise tcp://HOST:WORKER_PORT,tcp://HOST:CLIENT_PORT is needed when --bind or "
          "--api-bind is a wildcard address: standbys name it to workers and clients");
    }
    advertise = {f.bind, f.api_bind};
  }
  // The third endpoint: where standbys fetch the journal while this one
  // leads (--replication-bind; docs/ha.md, "Replication").
  const bool replicates = !f.replication_bind.empty();
  if (advertise.size() == 3 && !replicates) {
    return Status::InvalidInput("--ha-advertise " + f.ha_advertise +
                                ": a third (replication) endpoint needs --replication-bind");
  }
  if (advertise.size() == 2 && replicates) {
    if (Wildcard(f.replication_bind)) {
      return Status::InvalidInput(
          "--ha-advertise W,C,tcp://HOST:REPLICATION_PORT is needed when --replication-bind is "
          "a wildcard address: standbys fetch the journal there");
    }
    advertise.push_back(f.replication_bind);
  }
  bool tcp = advertise.size() == (replicates ? 3u : 2u);
  for (const std::string& a : advertise) tcp = tcp && StartsWith(a, "tcp://");
  if (!tcp) {
    return Status::InvalidInput("--ha-advertise " + f.ha_advertise +
                                ": want tcp://HOST:WORKER_PORT,tcp://HOST:CLIENT_PORT" +
                                (replicates ? ",tcp://HOST:REPLICATION_PORT" : ""));
  }
  auto lease = ParseDuration(f.ha_lease);
  if (!lease.ok()) return Status::InvalidInput("--ha-lease: " + lease.status().message());
  if (*lease < Millis(1000) || *lease > Millis(600000)) {
    return Status::InvalidInput("--ha-lease " + f.ha_lease + ": want 1s to 10m");
  }
  c.lease_ttl_s = (lease->count() + 999) / 1000;
  if (f.ha_election.empty() || f.ha_election.size() > 200) {
    return Status::InvalidInput("--ha-election: want a name of 1 to 200 bytes");
  }
  c.election = f.ha_election;
  auto security = ResolveEtcdSecurity(f, c.etcd, env);
  if (!security.ok()) return security.status();
  c.security = std::move(*security);
  c.self = ha::Member{f.ha_name.empty() ? env.Hostname() : f.ha_name, advertise[0], advertise[1],
                      replicates ? advertise[2] : ""};
  return c;
}

}  // namespace apollo11::cli
