#include "transport/actor.h"

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <utility>

#include "common/log_event.h"

namespace apollo11::transport {
namespace {

// Body of kActorReady: the Status the actor's body signalled.
struct ReadySignal {
  int32_t code = 0;
  std::string message;
  MSGPACK_DEFINE(code, message);
};

struct Empty {
  MSGPACK_DEFINE();
};

void SetThreadName(const std::string& name) {
  std::string short_name = name.substr(0, 15);  // Linux limit: 16 bytes with NUL
  pthread_setname_np(pthread_self(), short_name.c_str());
}

void RunBody(ActorPipe& pipe, const std::string& name, const Actor::Body& body) {
  try {
    body(pipe);
  } catch (const std::exception& e) {
    if (!pipe.ready_signalled()) {
      pipe.SignalReady(Status::Internal("actor '" + name + "' threw: " + e.what()));
    } else {
      spdlog::critical("actor '{}' threw: {}", name, e.what());
    }
  } catch (...) {
    if (!pipe.ready_signalled()) {
      pipe.SignalReady(Status::Internal("actor '" + name + "' threw a non-standard exception"));
    } else {
      spdlog::critical("actor '{}' threw a non-standard exception", name);
    }
  }
  if (!pipe.ready_signalled()) {
    pipe.SignalReady(Status::Internal("actor '" + name + "' returned without signalling ready"));
  }
  // Tell the parent the body has returned; if the parent is gone (context
  // terminated) there is no one to tell.
  (void)pipe.Send(ToWire(MsgType::kActorDone), Empty{});
}

}  // namespace

void ActorPipe::SignalReady(Status status) {
  if (ready_signalled_) return;
  ready_signalled_ = true;
  started_ = status.ok();
  (void)Send(ToWire(MsgType::kActorReady),
             ReadySignal{static_cast<int32_t>(status.code()), status.message()});
}

Result<Envelope> ActorPipe::Recv(bool dontwait) {
  auto msg = transport::Recv(socket_, dontwait);
  if (!msg.ok()) return msg.status();
  return DecodeEnvelope(msg->data(), msg->size());
}

Result<std::unique_ptr<Actor>> Actor::Start(zmq::context_t& ctx, std::string name, Body body) {
  std::unique_ptr<Actor> actor(new Actor(std::move(name)));
  // A fresh name per actor: libzmq unregisters a closed socket's inproc
  // endpoint asynchronously, so a name (or address) reused soon after would
  // collide. The counter is a trivially destructible atomic.
  static std::atomic<uint64_t> next_pipe_id{0};
  char endpoint[64];
  std::snprintf(endpoint, sizeof(endpoint), "apollo11-actor-%llu",
                static_cast<unsigned long long>(next_pipe_id.fetch_add(1)));
  auto pair = MakeInprocPair(ctx, endpoint);
  if (!pair.ok()) return pair.status();
  actor->pipe_ = std::move(pair->first);
  try {
    actor->thread_ = std::jthread([child = std::move(pair->second), actor_name = actor->name_,
                                   body = std::move(body)](std::stop_token stop) mutable {
      SetThreadName(actor_name);
      SetLogActor(actor_name);  // the "actor" of this thread's structured log lines
      ActorPipe pipe(std::move(child), std::move(stop));
      RunBody(pipe, actor_name, body);
    });
  } catch (const std::exception& e) {
    return Status::Internal("starting actor '" + actor->name_ + "': " + e.what());
  }
  // Wait for the handshake; the body always sends kActorReady (RunBody
  // guarantees it), so this wait ends unless the body hangs during set-up.
  for (;;) {
    auto env = actor->Recv(std::chrono::milliseconds(-1));
    if (!env.ok()) {
      actor->thread_.join();
      actor->joined_ = true;
      return env.status();
    }
    if (env->type != ToWire(MsgType::kActorReady)) continue;
    auto ready = BodyAs<ReadySignal>(*env);
    if (!ready.ok()) return ready.status();
    if (ready->code == static_cast<int32_t>(StatusCode::kOk)) return actor;
    Status error = Status::Error(static_cast<StatusCode>(ready->code), ready->message);
    // The body returns after a failed start; wait for it and join.
    (void)actor->Stop(std::chrono::milliseconds(-1));
    return error;
  }
}

Result<Envelope> Actor::Recv(std::chrono::milliseconds timeout) {
  if (done_) return Status::NotFound("actor '" + name_ + "' has returned");
  zmq::pollitem_t items[] = {{pipe_.handle(), 0, ZMQ_POLLIN, 0}};
  auto n = Poll(items, timeout);
  if (!n.ok()) return n.status();
  if (*n == 0) return Status::Busy("no reply from actor '" + name_ + "' in time");
  auto msg = transport::Recv(pipe_, /*dontwait=*/true);
  if (!msg.ok()) return msg.status();
  auto env = DecodeEnvelope(msg->data(), msg->size());
  if (env.ok() && env->type == ToWire(MsgType::kActorDone)) {
    done_ = true;
    return Status::NotFound("actor '" + name_ + "' has returned");
  }
  return env;
}

Status Actor::Stop(std::chrono::milliseconds timeout) {
  if (joined_) return Status::Ok();
  if (!done_ && !term_sent_) {
    scratch_.clear();
    Encode(ToWire(MsgType::kTerm), Empty{}, &scratch_);
    // dontwait: a body that already returned no longer reads the pipe.
    term_sent_ = transport::Send(pipe_, scratch_, /*dontwait=*/true).ok();
  }
  using Clock = std::chrono::steady_clock;
  const bool forever = timeout.count() < 0;
  const auto deadline = Clock::now() + timeout;
  while (!done_) {
    auto left =
        forever ? std::chrono::milliseconds(-1)
                : std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!forever && left.count() < 0) left = std::chrono::milliseconds(0);
    auto env = Recv(left);  // discards anything but kActorDone
    if (done_) break;
    if (!env.ok() && env.status().code() == StatusCode::kBusy) {
      thread_.request_stop();
      return Status::Busy("actor '" + name_ + "' did not stop within " +
                          std::to_string(timeout.count()) + " ms");
    }
    if (!env.ok() && env.status().code() != StatusCode::kInvalidInput) {
      // The pipe itself failed (context terminated): the body will see the
      // same and return, so joining is safe.
      break;
    }
  }
  thread_.join();
  joined_ = true;
  done_ = true;
  pipe_.close();
  return Status::Ok();
}

Actor::~Actor() {
  if (joined_ || !thread_.joinable()) return;
  Status s = Stop(std::chrono::seconds(10));
  if (!s.ok()) {
    std::fprintf(stderr, "apollo11: %s; waiting for it to return\n", s.message().c_str());
    thread_.join();
  }
}

}  // namespace apollo11::transport
