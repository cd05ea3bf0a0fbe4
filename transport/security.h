#pragma once
// CURVE keys and socket set-up for every tcp:// socket (DESIGN §9).
//
// How to secure a cluster:
//   1. On each machine: `apollo11 keygen /etc/apollo11/node` writes node.key
//      (public + secret, mode 0600, never leaves the machine) and node.pub
//      (one line: the public key, 40 Z85 characters). It prints the public key.
//   2. On the coordinator: collect every worker's and client's node.pub into
//      an authorized-keys file, one key per line, each after the role it has
//      (key_roles.h): `worker KEY`, `viewer KEY`, `operator KEY`, `admin KEY`
//      (the older names `reader` and `client` are read as viewer and operator).
//      A key without a role (the format before roles) may act as worker and
//      admin. Blank lines and lines starting with '#' are ignored; a key may
//      be followed by whitespace and a '#' comment naming its owner. Any other
//      line is an error reported as FILE:LINE and the file is not used.
//   3. Workers and clients also need the coordinator's node.pub (server key).
// What is refused (by the ZapHandler, see zap_handler.h): a client whose public
// key is not in the authorized set for the socket's ZAP domain, any mechanism
// other than CURVE (plaintext NULL, PLAIN), and malformed ZAP requests. A
// CURVE server without a ZAP handler would accept ANY key pair (encryption
// only): always start the handler before binding. Binding a non-loopback
// address without keys needs an explicit --insecure (IsLoopbackEndpoint).

#include <map>
#include <set>
#include <string>
#include <zmq.hpp>

#include "common/status.h"
#include "transport/key_roles.h"

namespace apollo11::transport {

// A CURVE key pair as Z85 text (40 characters each). The secret half must
// never be logged.
struct CurveKeyPair {
  std::string public_z85;
  std::string secret_z85;
};

// True if `key` is 40 Z85 characters that decode to 32 bytes.
bool IsValidZ85Key(const std::string& key);

// A fresh key pair from libzmq (zmq_curve_keypair). Unsupported if this libzmq
// was built without CURVE.
Result<CurveKeyPair> GenerateKeyPair();

// Writes PREFIX.key ("public = ...\nsecret = ...\n", mode 0600) and PREFIX.pub
// (the public key on one line, mode 0644), each through a temporary file and
// rename, replacing existing files. InvalidInput for a malformed pair, Io on
// file errors.
Status SaveKeyPair(const CurveKeyPair& keys, const std::string& path_prefix);

// Reads a .key file written by SaveKeyPair. InvalidInput (with FILE:LINE) if
// malformed, if the public key does not belong to the secret key, or if the
// file is readable by group or others; NotFound/Io if it cannot be read.
Result<CurveKeyPair> LoadKeyPair(const std::string& path);

// The public key from a .pub file (one key line, comments allowed) or from a
// .key file (its "public = " line; the secret is not checked).
Result<std::string> LoadPublicKey(const std::string& path);

// Each authorized key and its roles (a key listed on several lines has all
// of their roles).
using KeyRoleMap = std::map<std::string, KeyRoles>;

// Parses an authorized-keys file (format above) into each key's roles.
// InvalidInput "FILE:LINE: ..." for the first bad line (an unknown role
// included); an empty map is valid (everyone is refused).
Result<KeyRoleMap> LoadKeyRoles(const std::string& path);
Result<KeyRoleMap> ParseKeyRoles(const std::string& text, const std::string& name);

// The keys alone of an authorized-keys file (format above). InvalidInput "FILE:LINE: ..."
// for the first bad line; an empty set is valid (everyone is refused).
Result<std::set<std::string>> LoadAuthorizedKeys(const std::string& path);

// Same for text already in memory; `name` is used in error messages.
Result<std::set<std::string>> ParseAuthorizedKeys(const std::string& text, const std::string& name);

// Makes `socket` a CURVE server with `server`'s keys, authenticated through
// ZAP domain `zap_domain` (non-empty). Call BEFORE bind; a ZapHandler must be
// running in the socket's context or every key is accepted.
Status ConfigureCurveServer(zmq::socket_t& socket, const CurveKeyPair& server,
                            const std::string& zap_domain);

// Makes `socket` a CURVE client with its own `client` keys, trusting only a
// server holding the secret for `server_public`. Call BEFORE connect.
Status ConfigureCurveClient(zmq::socket_t& socket, const CurveKeyPair& client,
                            const std::string& server_public);

// True if binding `endpoint` exposes nothing beyond this machine:
// tcp://127.x.y.z, tcp://localhost, tcp://[::1], inproc://, ipc://. Wildcards
// (tcp://*, tcp://0.0.0.0), other addresses, interface names and anything
// unparsable are not loopback.
bool IsLoopbackEndpoint(const std::string& endpoint);

}  // namespace apollo11::transport
