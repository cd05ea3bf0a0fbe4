#include "ha/etcd_codec.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/json_dump.h"

namespace apollo11::ha {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kNoLeader = "election: no leader";

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

Status Bad(const std::string& what) {
  return Status::Corrupt("etcd answered something unexpected: " + what);
}

// The body as a JSON object (the first line of a streamed body), or why not.
Result<json> ParseObject(std::string_view body) {
  const size_t nl = body.find('\n');
  if (nl != std::string_view::npos && body.find_first_not_of(" \r\n\t", nl) != body.npos) {
    body = body.substr(0, nl);
  }
  json doc = ParseJsonBounded(body);
  if (doc.is_discarded()) {
    std::string head(body.substr(0, 80));
    for (char& c : head) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    }
    return Bad("not JSON: \"" + head + "\"");
  }
  if (!doc.is_object()) return Bad("not a JSON object");
  return doc;
}

// etcd's error object, as a Status; Ok when `doc` is no error.
Status ErrorOf(const json& doc) {
  auto it = doc.find("error");
  if (it == doc.end()) return Status::Ok();
  std::string message = it->is_string() ? it->get<std::string>() : "an error";
  auto m = doc.find("message");
  if (m != doc.end() && m->is_string() && !m->get<std::string>().empty()) {
    message = m->get<std::string>();
  }
  return Status::Io("etcd: " + message);
}

// An int64 the gateway writes as a string (or, leniently, as a number);
// `fallback` when absent.
Result<int64_t> IntField(const json& obj, const char* name, std::optional<int64_t> fallback) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (fallback) return *fallback;
    return Bad(std::string("no \"") + name + "\"");
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return v;
  }
  return Bad(std::string("\"") + name + "\" is not an integer");
}

Result<std::string> BytesField(const json& obj, const char* name, bool required) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (!required) return std::string();
    return Bad(std::string("no \"") + name + "\"");
  }
  if (!it->is_string()) return Bad(std::string("\"") + name + "\" is not a string");
  auto raw = Base64Decode(it->get_ref<const std::string&>());
  if (!raw) return Bad(std::string("\"") + name + "\" is not base64");
  return *raw;
}

Result<json> Answer(std::string_view body) {
  auto doc = ParseObject(body);
  if (!doc.ok()) return doc.status();
  APOLLO11_RETURN_IF_ERROR(ErrorOf(*doc));
  return doc;
}

}  // namespace

std::string Base64Encode(std::string_view raw) {
  std::string out;
  out.reserve((raw.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= raw.size(); i += 3) {
    const uint32_t n = (uint8_t(raw[i]) << 16) | (uint8_t(raw[i + 1]) << 8) | uint8_t(raw[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(n >> s) & 63];
  }
  if (i < raw.size()) {
    uint32_t n = uint8_t(raw[i]) << 16;
    if (i + 1 < raw.size()) n |= uint8_t(raw[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < raw.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = Sextet(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string GrantRequest(int64_t ttl_s) { return json{{"TTL", ttl_s}}.dump(); }

std::string LeaseIdRequest(int64_t lease) { return json{{"ID", std::to_string(lease)}}.dump(); }

std::string CampaignRequest(std::string_view election, int64_t lease, std::string_view value) {
  return json{{"name", Base64Encode(election)},
              {"lease", std::to_string(lease)},
              {"value", Base64Encode(value)}}
      .dump();
}

std::string LeaderRequest(std::string_view election) {
  return json{{"name", Base64Encode(election)}}.dump();
}

std::string ResignRequest(const EtcdLeaderKey& leader) {
  return json{{"leader",
               {{"name", Base64Encode(leader.name)},
                {"key", Base64Encode(leader.key)},
                {"rev", std::to_string(leader.rev)},
                {"lease", std::to_string(leader.lease)}}}}
      .dump();
}

std::string RangeRequest(std::string_view key) { return json{{"key", Base64Encode(key)}}.dump(); }

std::string DeleteIfCreatedRequest(std::string_view key, uint64_t rev) {
  json compare = {{"key", Base64Encode(key)},
                  {"target", "CREATE"},
                  {"result", "EQUAL"},
                  {"create_revision", std::to_string(rev)}};
  json del = {{"request_delete_range", {{"key", Base64Encode(key)}}}};
  return json{{"compare", json::array({compare})}, {"success", json::array({del})}}.dump();
}

std::string PutIfLeaderRequest(const EtcdLeaderKey& leader, std::string_view key,
                               std::string_view value) {
  json compare = {{"key", Base64Encode(leader.key)},
                  {"target", "CREATE"},
                  {"result", "EQUAL"},
                  {"create_revision", std::to_string(leader.rev)}};
  json put = {{"request_put", {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}}}};
  return json{{"compare", json::array({compare})}, {"success", json::array({put})}}.dump();
}

Result<EtcdLease> DecodeGrant(std::string_view body) {
  auto doc = Answer(body);
  if (!doc.ok()) return doc.status();
  auto id = IntField(*doc, "ID", std::nullopt);
  if (!id.ok()) return id.status();
  auto ttl = IntField(*doc, "TTL", std::nullopt);
  if (!ttl.ok()) return ttl.status();
  if (*id == 0 || *ttl <= 0) return Bad("a lease with no id or no TTL");
  return EtcdLease{*id, *ttl};
}

Result<EtcdLease> DecodeKeepAlive(std::string_view body) {
  auto doc = Answer(body);
  if (!doc.ok()) return doc.status();
  auto result = doc->find("result");
  if (result == doc->end() || !result->is_object()) return Bad("no \"result\" object");
  APOLLO11_RETURN_IF_ERROR(ErrorOf(*result));
  auto id = IntField(*result, "ID", int64_t{0});
  if (!id.ok()) return id.status();
  auto ttl = IntField(*result, "TTL", int64_t{0});
  if (!ttl.ok()) return ttl.status();
  return EtcdLease{*id, *ttl < 0 ? 0 : *ttl};
}

Result<EtcdLeaderKey> DecodeCampaign(std::string_view body) {
  auto doc = Answer(body);
  if (!doc.ok()) return doc.status();
  auto leader = doc->find("leader");
  if (leader == doc->end() || !leader->is_object()) return Bad("no \"leader\" object");
  EtcdLeaderKey out;
  auto name = BytesField(*leader, "name", true);
  if (!name.ok()) return name.status();
  auto key = BytesField(*leader, "key", true);
  if (!key.ok()) return key.status();
  auto rev = IntField(*leader, "rev", std::nullopt);
  if (!rev.ok()) return rev.status();
  auto lease = IntField(*leader, "lease", int64_t{0});
  if (!lease.ok()) return lease.status();
  if (*rev <= 0) return Bad("a leader key with no revision");
  return EtcdLeaderKey{*name, *key, static_cast<uint64_t>(*rev), *lease};
}

Result<std::optional<EtcdLeader>> DecodeLeader(std::string_view body) {
  auto doc = ParseObject(body);
  if (!doc.ok()) return doc.status();
  auto err = doc->find("error");
  if (err != doc->end() && err->is_string() && err->get<std::string>() == kNoLeader) {
    return std::optional<EtcdLeader>();
  }
  APOLLO11_RETURN_IF_ERROR(ErrorOf(*doc));
  auto kv = doc->find("kv");
  if (kv == doc->end() || kv->is_null()) return std::optional<EtcdLeader>();
  if (!kv->is_object()) return Bad("\"kv\" is not an object");
  EtcdLeader out;
  auto key = BytesField(*kv, "key", true);
  if (!key.ok()) return key.status();
  auto value = BytesField(*kv, "value", false);
  if (!value.ok()) return value.status();
  auto rev = IntField(*kv, "create_revision", std::nullopt);
  if (!rev.ok()) return rev.status();
  auto lease = IntField(*kv, "lease", int64_t{0});
  if (!lease.ok()) return lease.status();
  if (*rev <= 0) return Bad("a leader key with no create_revision");
  out.key = EtcdLeaderKey{"", *key, static_cast<uint64_t>(*rev), *lease};
  out.value = *value;
  return std::optional<EtcdLeader>(std::move(out));
}

Result<std::optional<std::string>> DecodeRange(std::string_view body) {
  auto doc = Answer(body);
  if (!doc.ok()) return doc.status();
  auto kvs = doc->find("kvs");
  if (kvs == doc->end() || kvs->is_null()) return std::optional<std::string>();
  if (!kvs->is_array()) return Bad("\"kvs\" is not an array");
  if (kvs->empty()) return std::optional<std::string>();
  if (!(*kvs)[0].is_object()) return Bad("a \"kvs\" entry is not an object");
  auto value = BytesField((*kvs)[0], "value", false);
  if (!value.ok()) return value.status();
  return std::optional<std::string>(std::move(*value));
}

Result<bool> DecodeTxn(std::string_view body) {
  auto doc = Answer(body);
  if (!doc.ok()) return doc.status();
  auto it = doc->find("succeeded");
  if (it == doc->end() || it->is_null()) return false;
  if (!it->is_boolean()) return Bad("\"succeeded\" is not a boolean");
  return it->get<bool>();
}

std::string AuthenticateRequest(std::string_view user, std::string_view password) {
  return json{{"name", std::string(user)}, {"password", std::string(password)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> DecodeAuthenticate(std::string_view body) {
  auto doc = Answer(body);
  if (!doc.ok()) return doc.status();
  auto it = doc->find("token");
  if (it == doc->end() || !it->is_string() || it->get<std::string>().empty()) {
    return Bad("no \"token\" in the authentication answer");
  }
  return it->get<std::string>();
}

bool IsInvalidTokenAnswer(std::string_view body) {
  return body.find("invalid auth token") != std::string_view::npos ||
         body.find("user name is empty") != std::string_view::npos;
}

Status DecodeEmpty(std::string_view body) {
  auto doc = Answer(body);
  return doc.ok() ? Status::Ok() : doc.status();
}

}  // namespace apollo11::ha
