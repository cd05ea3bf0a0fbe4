#include "transport/sockets.h"

#include <cerrno>
#include <string>

#include "transport/tsan_annotations.h"

namespace apollo11::transport {
namespace {

Status ErrnoStatus(const char* what, int err) {
  if (err == ETERM) return Status::Io(std::string(kContextTerminated));
  return Status::Io(std::string(what) + ": " + zmq_strerror(err));
}

// Drains the remaining frames of a multipart message.
void DrainMore(void* handle) {
  int more = 0;
  size_t more_size = sizeof(more);
  while (zmq_getsockopt(handle, ZMQ_RCVMORE, &more, &more_size) == 0 && more) {
    zmq::message_t rest;
    if (zmq_msg_recv(rest.handle(), handle, 0) < 0 && zmq_errno() != EINTR) return;
  }
}

bool HasMore(void* handle) {
  int more = 0;
  size_t more_size = sizeof(more);
  return zmq_getsockopt(handle, ZMQ_RCVMORE, &more, &more_size) == 0 && more;
}

// One zmq_send retried on EINTR; returns 0 or the errno.
int SendFrame(void* handle, std::string_view data, int flags) {
  for (;;) {
    if (zmq_send(handle, data.data(), data.size(), flags) >= 0) return 0;
    int err = zmq_errno();
    if (err != EINTR) return err;
  }
}

// One zmq_msg_recv retried on EINTR; returns 0 or the errno.
int RecvFrame(void* handle, zmq::message_t* msg, int flags) {
  for (;;) {
    if (zmq_msg_recv(msg->handle(), handle, flags) >= 0) return 0;
    int err = zmq_errno();
    if (err != EINTR) return err;
  }
}

Status SetCommon(zmq::socket_t& s, const SocketOptions& o) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::maxmsgsize, o.max_msg_size);
  s.set(zmq::sockopt::sndhwm, o.hwm);
  s.set(zmq::sockopt::rcvhwm, o.hwm);
  return Status::Ok();
}

}  // namespace

bool IsContextTerminated(const Status& s) {
  return !s.ok() && s.code() == StatusCode::kIo && s.message() == kContextTerminated;
}

Status ConfigureRouter(zmq::socket_t& router, const SocketOptions& options) {
  try {
    APOLLO11_RETURN_IF_ERROR(SetCommon(router, options));
    router.set(zmq::sockopt::router_mandatory, 1);
    router.set(zmq::sockopt::router_handover, 1);
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return ErrnoStatus("configuring ROUTER", e.num());
  }
}

Status ConfigureDealer(zmq::socket_t& dealer, const std::string& identity,
                       const SocketOptions& options) {
  try {
    APOLLO11_RETURN_IF_ERROR(SetCommon(dealer, options));
    if (!identity.empty()) dealer.set(zmq::sockopt::routing_id, identity);
    dealer.set(zmq::sockopt::immediate, options.immediate ? 1 : 0);
    if (options.reconnect_ivl_ms > 0) {
      dealer.set(zmq::sockopt::reconnect_ivl, options.reconnect_ivl_ms);
    }
    if (options.reconnect_ivl_max_ms > 0) {
      dealer.set(zmq::sockopt::reconnect_ivl_max, options.reconnect_ivl_max_ms);
    }
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return ErrnoStatus("configuring DEALER", e.num());
  }
}

Result<std::string> Bind(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.bind(endpoint);
    return socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return ErrnoStatus(("binding " + endpoint).c_str(), e.num());
  }
}

Status Connect(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.connect(endpoint);
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return ErrnoStatus(("connecting " + endpoint).c_str(), e.num());
  }
}

Status SendTo(zmq::socket_t& router, std::string_view identity, std::string_view payload,
              bool dontwait) {
  const int flags = dontwait ? ZMQ_DONTWAIT : 0;
  AnnotateBeforeSend(router.handle(), identity);
  // Under ROUTER_MANDATORY an unknown identity fails on this first frame, so
  // a half-sent message is never left behind.
  int err = SendFrame(router.handle(), identity, flags | ZMQ_SNDMORE);
  if (err == EHOSTUNREACH) return Status::NotFound("peer gone: no connection from this identity");
  if (err == EAGAIN) return Status::Busy("peer's send queue is full");
  if (err != 0) return ErrnoStatus("sending identity frame", err);
  // Once the identity frame is accepted, libzmq accepts the rest of the
  // message atomically.
  err = SendFrame(router.handle(), payload, flags);
  if (err != 0) return ErrnoStatus("sending payload frame", err);
  return Status::Ok();
}

Status Send(zmq::socket_t& socket, std::string_view payload, bool dontwait) {
  AnnotateBeforeSend(socket.handle());
  int err = SendFrame(socket.handle(), payload, dontwait ? ZMQ_DONTWAIT : 0);
  if (err == EAGAIN) return Status::Busy("send would block: no connected peer or queue full");
  if (err != 0) return ErrnoStatus("sending", err);
  return Status::Ok();
}

Result<RoutedMessage> RecvFrom(zmq::socket_t& router, bool dontwait) {
  RoutedMessage out;
  zmq::message_t identity;
  int err = RecvFrame(router.handle(), &identity, dontwait ? ZMQ_DONTWAIT : 0);
  if (err == EAGAIN) return Status::Busy("no message waiting");
  if (err != 0) return ErrnoStatus("receiving", err);
  AnnotateAfterReceive(router.handle(), identity.to_string_view());
  if (!HasMore(router.handle())) {
    return Status::InvalidInput("message without a payload frame");
  }
  // The rest of a multipart message is already queued once its first frame is.
  err = RecvFrame(router.handle(), &out.payload, 0);
  if (err != 0) return ErrnoStatus("receiving", err);
  out.identity.assign(static_cast<const char*>(identity.data()), identity.size());
  // Null (EINVAL) on a connection without ZAP metadata: no CURVE, inproc.
  if (const char* key = zmq_msg_gets(out.payload.handle(), "User-Id")) out.peer.key = key;
  if (const char* roles = zmq_msg_gets(out.payload.handle(), kRolesProperty)) {
    out.peer.roles = ParseRoles(roles);
  }
  if (HasMore(router.handle())) {
    DrainMore(router.handle());
    return Status::InvalidInput("multipart message from peer; expected one frame");
  }
  return out;
}

Result<zmq::message_t> Recv(zmq::socket_t& socket, bool dontwait) {
  zmq::message_t msg;
  int err = RecvFrame(socket.handle(), &msg, dontwait ? ZMQ_DONTWAIT : 0);
  if (err == EAGAIN) return Status::Busy("no message waiting");
  if (err != 0) return ErrnoStatus("receiving", err);
  AnnotateAfterReceive(socket.handle());
  if (HasMore(socket.handle())) {
    DrainMore(socket.handle());
    return Status::InvalidInput("multipart message from peer; expected one frame");
  }
  return msg;
}

Result<int> Poll(std::span<zmq::pollitem_t> items, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const bool forever = timeout.count() < 0;
  const auto deadline = Clock::now() + timeout;
  long wait_ms = forever ? -1 : static_cast<long>(timeout.count());
  for (;;) {
    int rc = zmq_poll(items.data(), static_cast<int>(items.size()), wait_ms);
    if (rc >= 0) return rc;
    int err = zmq_errno();
    if (err != EINTR) return ErrnoStatus("polling", err);
    if (!forever) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return 0;
      wait_ms = static_cast<long>(left.count());
    }
  }
}

Result<std::pair<zmq::socket_t, zmq::socket_t>> MakeInprocPair(zmq::context_t& ctx,
                                                               const std::string& name) {
  try {
    zmq::socket_t bound(ctx, zmq::socket_type::pair);
    zmq::socket_t connected(ctx, zmq::socket_type::pair);
    // No high-water mark: actors send to each other without blocking, so a
    // mark would silently drop messages (a lost Enqueue strands READY tasks).
    // What crosses these links is bounded by the backlog cap. Set before
    // bind/connect: libzmq fixes a pipe's limits when it is created.
    for (zmq::socket_t* s : {&bound, &connected}) {
      s->set(zmq::sockopt::linger, 0);
      s->set(zmq::sockopt::sndhwm, 0);
      s->set(zmq::sockopt::rcvhwm, 0);
    }
    bound.bind("inproc://" + name);
    connected.connect("inproc://" + name);
    return std::make_pair(std::move(bound), std::move(connected));
  } catch (const zmq::error_t& e) {
    return ErrnoStatus(("making inproc pair " + name).c_str(), e.num());
  }
}

}  // namespace apollo11::transport
