#pragma once
// TLS for the HTTP port (--http-tls-cert, --http-tls-key, and optionally
// --http-tls-client-ca): an OpenSSL server context with TLS 1.2 as the
// least version, no renegotiation, and, with a client CA, a client
// certificate signed by it required of every connection.
//
// Reload re-reads the files and swaps in a new context for the connections
// that come after it; connections already open keep the context they began
// with (each SSL holds a reference to its own). A reload that fails keeps
// the old context and says why, so a half-written certificate never takes
// the port down.
//
// Threads: NewSsl from the HTTP reader thread, Reload and Describe from any
// thread.

#include <openssl/types.h>  // SSL, SSL_CTX (openssl/ssl.h in the .cc)

#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/status.h"

namespace apollo11::observability {

struct TlsFiles {
  std::string cert;       // PEM: the certificate, then its chain
  std::string key;        // PEM: its private key
  std::string client_ca;  // PEM: CAs a client certificate must chain to ("" = none asked)
  bool enabled() const { return !cert.empty(); }
};

class TlsContext {
 public:
  static Result<std::unique_ptr<TlsContext>> Load(TlsFiles files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Re-reads the files; InvalidInput (the old context kept) when they do
  // not load.
  Status Reload();
  // A server-side SSL for accepted socket `fd` in accept state, on the
  // current context; null when OpenSSL cannot make one.
  SSL* NewSsl(int fd);
  // "CN=node.example, expires 2027-12-06 10:00:00 UTC": for log lines.
  std::string Describe() const;

 private:
  explicit TlsContext(TlsFiles files) : files_(std::move(files)) {}
  static Result<SSL_CTX*> Build(const TlsFiles& files);

  const TlsFiles files_;
  mutable Mutex mu_;
  SSL_CTX* ctx_ GUARDED_BY(mu_) = nullptr;
};

// OpenSSL's queued errors as one line (and the queue emptied).
std::string OpenSslErrors();

}  // namespace apollo11::observability
