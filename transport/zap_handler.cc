#include "transport/zap_handler.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "transport/codec.h"
#include "transport/security.h"
#include "transport/sockets.h"
#include "transport/tsan_annotations.h"

namespace apollo11::transport {
namespace {

// The actor's private pipe vocabulary (each actor's pipe has its own).
constexpr uint16_t kSetKeys = ToWire(MsgType::kFirstInternal);
constexpr uint16_t kSetKeysDone = ToWire(MsgType::kFirstInternal) + 1;

// Bounded input: a ZAP request has 6 frames plus credentials (CURVE: 1,
// PLAIN: 2); the address is an IP string, identity at most 255 bytes.
constexpr size_t kMaxZapFrames = 16;
constexpr size_t kMaxZapFrameBytes = 4096;
constexpr size_t kCurveKeyBytes = 32;

struct SetKeysMsg {
  std::map<std::string, std::vector<std::string>> keys;
  std::map<std::string, KeyRoles> roles;
  MSGPACK_DEFINE(keys, roles);
};

struct SetKeysDoneMsg {
  MSGPACK_DEFINE();
};

ZapDecision Refuse(ZapDecision d, std::string why) {
  d.accepted = false;
  d.status_text = std::move(why);
  return d;
}

// Receives one multipart request, keeping at most kMaxZapFrames frames of at
// most kMaxZapFrameBytes each; the rest of an oversized request is drained.
// `oversized` tells the caller to refuse it. Throws zmq::error_t (caught by
// the loop).
std::vector<std::string> RecvRequest(zmq::socket_t& rep, bool* oversized) {
  std::vector<std::string> frames;
  *oversized = false;
  for (;;) {
    zmq::message_t frame;
    if (!rep.recv(frame, zmq::recv_flags::none)) break;
    AnnotateAfterReceive(rep.handle());
    if (frames.size() < kMaxZapFrames && frame.size() <= kMaxZapFrameBytes) {
      frames.emplace_back(static_cast<const char*>(frame.data()), frame.size());
    } else {
      *oversized = true;
    }
    if (!frame.more()) break;
  }
  return frames;
}

}  // namespace

std::string RolesMetadata(KeyRoles roles) {
  const std::string name = kRolesProperty;
  const std::string value = FormatRoles(roles);
  std::string out;
  out += static_cast<char>(name.size());
  out += name;
  for (int shift = 24; shift >= 0; shift -= 8) {
    out += static_cast<char>((value.size() >> shift) & 0xff);
  }
  out += value;
  return out;
}

namespace {

void SendReply(zmq::socket_t& rep, const ZapDecision& d) {
  const std::string code = d.accepted ? "200" : "400";
  AnnotateBeforeSend(rep.handle());
  rep.send(zmq::buffer(std::string_view("1.0")), zmq::send_flags::sndmore);
  rep.send(zmq::buffer(d.request_id), zmq::send_flags::sndmore);
  rep.send(zmq::buffer(code), zmq::send_flags::sndmore);
  rep.send(zmq::buffer(d.status_text), zmq::send_flags::sndmore);
  rep.send(zmq::buffer(d.user_id), zmq::send_flags::sndmore);
  const std::string metadata = d.accepted ? RolesMetadata(d.roles) : std::string();
  rep.send(zmq::buffer(metadata), zmq::send_flags::none);
}

AuthorizedKeys FromWire(const SetKeysMsg& msg) {
  AuthorizedKeys keys;
  for (const auto& [domain, list] : msg.keys) keys[domain].insert(list.begin(), list.end());
  return keys;
}

SetKeysMsg ToWireKeys(const AuthorizedKeys& keys, const KeyRolesByKey& roles) {
  SetKeysMsg msg;
  for (const auto& [domain, set] : keys) msg.keys[domain].assign(set.begin(), set.end());
  msg.roles = roles;
  return msg;
}

}  // namespace

ZapDecision DecideZap(const std::vector<std::string>& request, const AuthorizedKeys& keys,
                      const KeyRolesByKey& roles) {
  ZapDecision d;
  if (request.size() >= 2) d.request_id = request[1];
  if (request.size() >= 4) d.address = request[3];
  if (request.size() >= 6) d.mechanism = request[5];
  if (request.size() < 6) return Refuse(std::move(d), "malformed ZAP request: too few frames");
  if (request[0] != "1.0") return Refuse(std::move(d), "unsupported ZAP version");
  if (d.mechanism != "CURVE") {
    return Refuse(std::move(d), "mechanism " + d.mechanism + " not allowed (CURVE only)");
  }
  if (request.size() != 7 || request[6].size() != kCurveKeyBytes) {
    return Refuse(std::move(d), "malformed CURVE credentials");
  }
  char z85[41] = {};
  if (zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(request[6].data()), kCurveKeyBytes) ==
      nullptr) {
    return Refuse(std::move(d), "malformed CURVE credentials");
  }
  auto domain = keys.find(request[2]);
  if (domain == keys.end()) {
    return Refuse(std::move(d), "unknown ZAP domain '" + request[2] + "' (key " + z85 + ")");
  }
  if (domain->second.count(z85) == 0) {
    return Refuse(std::move(d),
                  std::string("key ") + z85 + " not authorized for domain '" + request[2] + "'");
  }
  d.accepted = true;
  d.status_text = "OK";
  d.user_id = z85;
  auto r = roles.find(z85);
  d.roles = r == roles.end() ? kRolesUnstated : r->second;
  return d;
}

namespace {

// Where the handler counts the handshakes it decided.
struct ZapCounts {
  std::atomic<uint64_t>& accepted;
  std::atomic<uint64_t>& refused;
};

// Binds `rep` to kZapEndpoint in `context` and tells the owner, through
// `pipe`, whether it could; false when not.
bool BindZapSocket(zmq::context_t& context, ActorPipe& pipe, zmq::socket_t& rep) {
  try {
    rep = zmq::socket_t(context, zmq::socket_type::rep);
    rep.set(zmq::sockopt::linger, 0);
    rep.bind(kZapEndpoint);
  } catch (const zmq::error_t& e) {
    if (e.num() == EADDRINUSE) {
      pipe.SignalReady(Status::Busy("a ZAP handler already runs in this context (" +
                                    std::string(kZapEndpoint) + " is bound)"));
    } else {
      pipe.SignalReady(
          Status::Io(std::string("ZAP handler cannot bind ") + kZapEndpoint + ": " + e.what()));
    }
    return false;
  }
  pipe.SignalReady(Status::Ok());
  return true;
}

// Takes the owner's command waiting on `pipe`: new keys and roles, answered
// kSetKeysDone. False when the handler must stop ($TERM, or the context
// terminated).
bool TakeZapCommand(ActorPipe& pipe, AuthorizedKeys& keys, KeyRolesByKey& roles) {
  auto cmd = pipe.Recv(/*dontwait=*/true);
  if (cmd.ok()) {
    if (pipe.IsTerm(*cmd)) return false;
    if (cmd->type == kSetKeys) {
      auto msg = BodyAs<SetKeysMsg>(*cmd);
      if (msg.ok()) {
        keys = FromWire(*msg);
        roles = std::move(msg->roles);
      }
      (void)pipe.Send(kSetKeysDone, SetKeysDoneMsg{});
    }
  } else if (IsContextTerminated(cmd.status())) {
    return false;
  }
  return true;
}

// Reads one ZAP request from `rep`, decides it and replies. False when the
// context was terminated.
bool AnswerZapRequest(zmq::socket_t& rep, const AuthorizedKeys& keys, const KeyRolesByKey& roles,
                      ZapCounts counts) {
  try {
    bool oversized = false;
    std::vector<std::string> request = RecvRequest(rep, &oversized);
    ZapDecision d = DecideZap(request, keys, roles);
    if (oversized) d = Refuse(std::move(d), "malformed ZAP request: too large");
    // Counted before the reply: whoever sees the handshake's outcome
    // (a client's first message arriving) already sees the count.
    if (d.accepted) {
      counts.accepted.fetch_add(1);
    } else {
      counts.refused.fetch_add(1);
      spdlog::warn("zap: refused {} client from {}: {}", d.mechanism.empty() ? "?" : d.mechanism,
                   d.address.empty() ? "?" : d.address, d.status_text);
    }
    SendReply(rep, d);
  } catch (const zmq::error_t& e) {
    if (e.num() == ETERM) return false;
    spdlog::error("zap: socket error: {}", e.what());
  }
  return true;
}

// The handler's thread: binds, then answers requests and the owner's
// commands until told to stop or the context ends.
void ServeZap(zmq::context_t& context, ActorPipe& pipe, ZapCounts counts, AuthorizedKeys& keys,
              KeyRolesByKey& roles) {
  zmq::socket_t rep;
  if (!BindZapSocket(context, pipe, rep)) return;
  for (;;) {
    zmq::pollitem_t items[] = {pipe.PollItem(), {rep.handle(), 0, ZMQ_POLLIN, 0}};
    auto n = Poll(items, std::chrono::milliseconds(-1));
    if (!n.ok()) return;  // context terminated
    if ((items[0].revents & ZMQ_POLLIN) && !TakeZapCommand(pipe, keys, roles)) return;
    if ((items[1].revents & ZMQ_POLLIN) && !AnswerZapRequest(rep, keys, roles, counts)) return;
  }
}

}  // namespace

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& ctx, AuthorizedKeys keys,
                                                      KeyRolesByKey roles) {
  std::unique_ptr<ZapHandler> handler(new ZapHandler());
  std::shared_ptr<Counters> counters = handler->counters_;
  zmq::context_t* context = &ctx;
  auto serve = [context, counters, keys = std::move(keys),
                roles = std::move(roles)](ActorPipe& pipe) mutable {
    ServeZap(*context, pipe, ZapCounts{counters->accepted, counters->refused}, keys, roles);
  };
  // Any end but Stop's is recorded: without the handler, CURVE servers in
  // this context admit any key, so its owner must stop serving.
  auto body = [counters, serve = std::move(serve)](ActorPipe& pipe) mutable {
    std::string why = "its loop ended (its ZeroMQ context was terminated?)";
    try {
      serve(pipe);
    } catch (const std::exception& e) {
      why = std::string("threw: ") + e.what();
    }
    MutexLock lock(&counters->mu);
    if (counters->stopping || !pipe.ready_signalled() || counters->failure) return;
    counters->failure = "ZAP handler: " + why;
    spdlog::critical("zap: the ZAP handler stopped: {}", why);
  };
  auto actor = Actor::Start(ctx, "apollo11-zap", std::move(body));
  if (!actor.ok()) return actor.status();
  handler->actor_ = std::move(*actor);
  return handler;
}

ZapHandler::~ZapHandler() { (void)Stop(std::chrono::seconds(10)); }

std::optional<std::string> ZapHandler::failure() const {
  MutexLock lock(&counters_->mu);
  return counters_->failure;
}

Status ZapHandler::SetAuthorizedKeys(const AuthorizedKeys& keys, const KeyRolesByKey& roles) {
  if (!actor_ || actor_->done()) return Status::NotFound("ZAP handler is not running");
  APOLLO11_RETURN_IF_ERROR(actor_->Send(kSetKeys, ToWireKeys(keys, roles)));
  for (;;) {
    auto reply = actor_->Recv(std::chrono::seconds(5));
    if (!reply.ok()) return reply.status();
    if (reply->type == kSetKeysDone) return Status::Ok();
  }
}

Status ZapHandler::Stop(std::chrono::milliseconds timeout) {
  if (!actor_) return Status::Ok();
  {
    MutexLock lock(&counters_->mu);
    counters_->stopping = true;
  }
  return actor_->Stop(timeout);
}

}  // namespace apollo11::transport
