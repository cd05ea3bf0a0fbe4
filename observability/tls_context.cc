#include "observability/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace apollo11::observability {

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Result<SSL_CTX*> TlsContext::Build(const TlsFiles& f) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Status::Internal("TLS: " + OpenSslErrors());
  auto fail = [&](const std::string& what) -> Result<SSL_CTX*> {
    const std::string why = OpenSslErrors();
    SSL_CTX_free(ctx);
    return Status::InvalidInput(what + ": " + why);
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, f.cert.c_str()) != 1) {
    return fail("--http-tls-cert " + f.cert + " does not load");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, f.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    return fail("--http-tls-key " + f.key +
                (mismatch ? " is not the key of --http-tls-cert " + f.cert : " does not load"));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fail("--http-tls-key " + f.key + " is not the key of --http-tls-cert " + f.cert);
  }
  if (!f.client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, f.client_ca.c_str(), nullptr) != 1) {
      return fail("--http-tls-client-ca " + f.client_ca + " does not load");
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(f.client_ca.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

Result<std::unique_ptr<TlsContext>> TlsContext::Load(TlsFiles files) {
  if (files.key.empty()) return Status::InvalidInput("--http-tls-cert needs --http-tls-key");
  std::unique_ptr<TlsContext> t(new TlsContext(std::move(files)));
  auto ctx = Build(t->files_);
  if (!ctx.ok()) return ctx.status();
  MutexLock lock(&t->mu_);
  t->ctx_ = *ctx;
  return t;
}

TlsContext::~TlsContext() {
  MutexLock lock(&mu_);
  SSL_CTX_free(ctx_);
}

Status TlsContext::Reload() {
  auto ctx = Build(files_);
  if (!ctx.ok()) return ctx.status();
  SSL_CTX* old = nullptr;
  {
    MutexLock lock(&mu_);
    old = ctx_;
    ctx_ = *ctx;
  }
  SSL_CTX_free(old);  // connections begun on it hold their own reference
  return Status::Ok();
}

SSL* TlsContext::NewSsl(int fd) {
  MutexLock lock(&mu_);
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

std::string TlsContext::Describe() const {
  MutexLock lock(&mu_);
  X509* cert = SSL_CTX_get0_certificate(ctx_);
  if (cert == nullptr) return "no certificate";
  char subject[256] = "";
  X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
  std::string out = subject;
  tm expiry{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &expiry) == 1) {
    char when[64];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &expiry);
    out += std::string(", expires ") + when;
  }
  return out;
}

}  // namespace apollo11::observability
