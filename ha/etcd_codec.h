#pragma once
// The etcd v3 JSON gateway's request bodies and the decoding of its answers
// (keys and values base64, 64-bit integers as JSON strings). Pure functions;
// a decoder never throws and never trusts its input: anything that is not
// the expected shape is a kCorrupt Status naming what was wrong, an error
// object etcd sent ({"error","code","message"}) is kIo with its message.

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "ha/etcd_port.h"

namespace apollo11::ha {

std::string Base64Encode(std::string_view raw);
// nullopt when `text` is not canonical-enough base64 (padding optional).
std::optional<std::string> Base64Decode(std::string_view text);

std::string GrantRequest(int64_t ttl_s);
std::string LeaseIdRequest(int64_t lease);  // keepalive and revoke
std::string CampaignRequest(std::string_view election, int64_t lease, std::string_view value);
std::string LeaderRequest(std::string_view election);
std::string ResignRequest(const EtcdLeaderKey& leader);
std::string RangeRequest(std::string_view key);
// A transaction: put `key` = `value` if `leader`'s key has its create revision.
// A txn deleting `key` while its create_revision is `rev`.
std::string DeleteIfCreatedRequest(std::string_view key, uint64_t rev);
std::string PutIfLeaderRequest(const EtcdLeaderKey& leader, std::string_view key,
                               std::string_view value);

Result<EtcdLease> DecodeGrant(std::string_view body);
// The first keepalive answer of a (possibly streamed) body; ttl_s 0 when
// etcd no longer knows the lease.
Result<EtcdLease> DecodeKeepAlive(std::string_view body);
Result<EtcdLeaderKey> DecodeCampaign(std::string_view body);
// nullopt when etcd says nobody leads.
Result<std::optional<EtcdLeader>> DecodeLeader(std::string_view body);
// The value of the first key in a range answer, nullopt when it has none.
Result<std::optional<std::string>> DecodeRange(std::string_view body);
// Whether a transaction's compare held ("succeeded"; absent means false, as
// the gateway omits false).
Result<bool> DecodeTxn(std::string_view body);
// Ok for any well-formed answer that is not an error object.
Status DecodeEmpty(std::string_view body);
// /v3/auth/authenticate: the request for `user`, and the token it answers.
std::string AuthenticateRequest(std::string_view user, std::string_view password);
Result<std::string> DecodeAuthenticate(std::string_view body);
// True when etcd refused a request for its auth token (expired, revoked,
// or none given while auth is on): authenticate again.
bool IsInvalidTokenAnswer(std::string_view body);

}  // namespace apollo11::ha
