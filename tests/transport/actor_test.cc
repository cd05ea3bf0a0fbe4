#include "transport/actor.h"

#include <pthread.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "transport/codec.h"
#include "transport/messages.h"
#include "transport/sockets.h"

namespace apollo11::transport {
namespace {

using std::chrono::milliseconds;

constexpr uint16_t kEcho = ToWire(MsgType::kFirstInternal);
constexpr uint16_t kThreadName = ToWire(MsgType::kFirstInternal) + 1;

// An internal actor message, as the lead would add one: struct + type value.
struct EchoMsg {
  std::string text;
  MSGPACK_DEFINE(text);
};

// A typical actor loop: poll the pipe, answer commands, exit on TERM.
void EchoBody(ActorPipe& pipe) {
  pipe.SignalReady(Status::Ok());
  for (;;) {
    zmq::pollitem_t items[] = {pipe.PollItem()};
    auto n = Poll(items, milliseconds(-1));
    if (!n.ok()) return;
    auto cmd = pipe.Recv(/*dontwait=*/true);
    if (!cmd.ok()) continue;
    if (pipe.IsTerm(*cmd)) return;
    if (cmd->type == kEcho) {
      auto msg = BodyAs<EchoMsg>(*cmd);
      if (msg.ok()) (void)pipe.Send(kEcho, EchoMsg{"echo: " + msg->text});
    } else if (cmd->type == kThreadName) {
      char name[32] = {};
      pthread_getname_np(pthread_self(), name, sizeof(name));
      (void)pipe.Send(kThreadName, EchoMsg{name});
    }
  }
}

}  // namespace

TEST_CASE("an actor starts, answers commands over its pipe and stops on TERM", "[actor]") {
  zmq::context_t ctx;
  auto actor = Actor::Start(ctx, "echo-actor-with-a-long-name", EchoBody);
  REQUIRE(actor.ok());
  REQUIRE((*actor)->Send(kEcho, EchoMsg{"hi"}).ok());
  auto reply = (*actor)->Recv(milliseconds(5000));
  REQUIRE(reply.ok());
  CHECK(reply->type == kEcho);
  CHECK(BodyAs<EchoMsg>(*reply)->text == "echo: hi");

  REQUIRE((*actor)->Send(kThreadName, EchoMsg{}).ok());
  auto name = (*actor)->Recv(milliseconds(5000));
  REQUIRE(name.ok());
  CHECK(BodyAs<EchoMsg>(*name)->text == "echo-actor-with");  // 15 chars

  CHECK((*actor)->Stop(milliseconds(5000)).ok());
  CHECK((*actor)->done());
  CHECK((*actor)->Stop(milliseconds(5000)).ok());  // idempotent
}

TEST_CASE("an actor whose start fails reports the error from Start", "[actor]") {
  zmq::context_t ctx;
  std::atomic<int> seen{-1};  // pipe.started() after the failed SignalReady
  auto actor = Actor::Start(ctx, "failing", [&seen](ActorPipe& pipe) {
    pipe.SignalReady(Status::Io("cannot bind tcp://127.0.0.1:7011: address in use"));
    seen = pipe.ready_signalled() && !pipe.started() ? 1 : 0;
  });
  REQUIRE_FALSE(actor.ok());
  CHECK(actor.status().code() == StatusCode::kIo);
  CHECK_THAT(actor.status().message(), Catch::Contains("address in use"));
  for (int i = 0; i < 500 && seen.load() < 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  CHECK(seen.load() == 1);  // signalled, but a failed start, not a running body
}

TEST_CASE("a body that signalled Ok counts as started", "[actor]") {
  zmq::context_t ctx;
  std::atomic<bool> before{true};
  std::atomic<bool> after{false};
  auto actor = Actor::Start(ctx, "starts", [&](ActorPipe& pipe) {
    before = pipe.started();
    pipe.SignalReady(Status::Ok());
    after = pipe.started();
    for (;;) {
      auto cmd = pipe.Recv();
      if (!cmd.ok() || pipe.IsTerm(*cmd)) return;
    }
  });
  REQUIRE(actor.ok());
  CHECK((*actor)->Stop(milliseconds(5000)).ok());  // joined: both were set
  CHECK_FALSE(before.load());
  CHECK(after.load());
}

TEST_CASE("an actor that returns or throws before signalling ready fails Start", "[actor]") {
  zmq::context_t ctx;
  auto silent = Actor::Start(ctx, "silent", [](ActorPipe&) {});
  REQUIRE_FALSE(silent.ok());
  CHECK(silent.status().code() == StatusCode::kInternal);
  CHECK_THAT(silent.status().message(), Catch::Contains("without signalling ready"));

  auto thrower = Actor::Start(ctx, "thrower", [](ActorPipe&) { throw std::runtime_error("boom"); });
  REQUIRE_FALSE(thrower.ok());
  CHECK_THAT(thrower.status().message(), Catch::Contains("boom"));
}

TEST_CASE("Stop of an actor blocked in poll returns promptly", "[actor]") {
  zmq::context_t ctx;
  // The body also polls a socket that never receives anything.
  auto actor = Actor::Start(ctx, "blocked", [&ctx](ActorPipe& pipe) {
    zmq::socket_t router(ctx, zmq::socket_type::router);
    if (Status s = ConfigureRouter(router); !s.ok()) return pipe.SignalReady(s);
    if (auto b = Bind(router, "tcp://127.0.0.1:0"); !b.ok()) return pipe.SignalReady(b.status());
    pipe.SignalReady(Status::Ok());
    for (;;) {
      zmq::pollitem_t items[] = {pipe.PollItem(), {router.handle(), 0, ZMQ_POLLIN, 0}};
      if (!Poll(items, milliseconds(-1)).ok()) return;
      if (items[0].revents & ZMQ_POLLIN) {
        auto cmd = pipe.Recv(true);
        if (cmd.ok() && pipe.IsTerm(*cmd)) return;
      }
    }
  });
  REQUIRE(actor.ok());
  auto start = std::chrono::steady_clock::now();
  CHECK((*actor)->Stop(milliseconds(1000)).ok());
  CHECK(std::chrono::steady_clock::now() - start < milliseconds(1000));
}

TEST_CASE("Stop of an actor that ignores TERM returns Busy within the timeout", "[actor]") {
  zmq::context_t ctx;
  std::atomic<bool> release{false};
  auto actor = Actor::Start(ctx, "stubborn", [&release](ActorPipe& pipe) {
    pipe.SignalReady(Status::Ok());
    while (!release.load()) {
      zmq::pollitem_t items[] = {{nullptr, 0, 0, 0}};
      (void)Poll(std::span(items, 0), milliseconds(5));  // busy elsewhere, not reading the pipe
    }
  });
  REQUIRE(actor.ok());
  auto start = std::chrono::steady_clock::now();
  Status s = (*actor)->Stop(milliseconds(50));
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(s.code() == StatusCode::kBusy);
  CHECK(took >= milliseconds(45));
  CHECK(took < milliseconds(1000));
  release = true;
  CHECK((*actor)->Stop(milliseconds(5000)).ok());
}

TEST_CASE("the destructor stops a running actor", "[actor]") {
  zmq::context_t ctx;
  std::atomic<bool> returned{false};
  {
    auto actor = Actor::Start(ctx, "scoped", [&returned](ActorPipe& pipe) {
      EchoBody(pipe);
      returned = true;
    });
    REQUIRE(actor.ok());
  }
  CHECK(returned.load());
}

TEST_CASE("an actor body that exits by itself is seen as done", "[actor]") {
  zmq::context_t ctx;
  auto actor = Actor::Start(ctx, "oneshot", [](ActorPipe& pipe) {
    pipe.SignalReady(Status::Ok());
    (void)pipe.Send(kEcho, EchoMsg{"bye"});
  });
  REQUIRE(actor.ok());
  auto last = (*actor)->Recv(milliseconds(5000));
  REQUIRE(last.ok());
  CHECK(BodyAs<EchoMsg>(*last)->text == "bye");
  auto after = (*actor)->Recv(milliseconds(5000));
  CHECK(after.status().code() == StatusCode::kNotFound);
  CHECK((*actor)->done());
  CHECK((*actor)->Stop(milliseconds(1000)).ok());
}

TEST_CASE("several actors linked by an inproc pair talk without the parent", "[actor]") {
  zmq::context_t ctx;
  auto link = MakeInprocPair(ctx, "actor-test-link");
  REQUIRE(link.ok());
  // Ponger answers on its end of the link; pinger forwards the parent's command.
  auto ponger = Actor::Start(
      ctx, "ponger",
      [sock = std::make_shared<zmq::socket_t>(std::move(link->first))](ActorPipe& pipe) {
        pipe.SignalReady(Status::Ok());
        for (;;) {
          zmq::pollitem_t items[] = {pipe.PollItem(), {sock->handle(), 0, ZMQ_POLLIN, 0}};
          if (!Poll(items, milliseconds(-1)).ok()) return;
          if (items[0].revents & ZMQ_POLLIN) {
            auto c = pipe.Recv(true);
            if (c.ok() && pipe.IsTerm(*c)) return;
          }
          if (items[1].revents & ZMQ_POLLIN) {
            auto m = Recv(*sock);
            if (m.ok()) (void)Send(*sock, "pong:" + m->to_string());
          }
        }
      });
  REQUIRE(ponger.ok());
  auto pinger = Actor::Start(
      ctx, "pinger",
      [sock = std::make_shared<zmq::socket_t>(std::move(link->second))](ActorPipe& pipe) {
        pipe.SignalReady(Status::Ok());
        for (;;) {
          auto c = pipe.Recv();
          if (!c.ok() || pipe.IsTerm(*c)) return;
          (void)Send(*sock, BodyAs<EchoMsg>(*c)->text, false);
          auto m = Recv(*sock, false);
          if (m.ok()) (void)pipe.Send(kEcho, EchoMsg{m->to_string()});
        }
      });
  REQUIRE(pinger.ok());
  REQUIRE((*pinger)->Send(kEcho, EchoMsg{"ping"}).ok());
  auto reply = (*pinger)->Recv(milliseconds(5000));
  REQUIRE(reply.ok());
  CHECK(BodyAs<EchoMsg>(*reply)->text == "pong:ping");
  CHECK((*pinger)->Stop(milliseconds(5000)).ok());
  CHECK((*ponger)->Stop(milliseconds(5000)).ok());
}

}  // namespace apollo11::transport

namespace apollo11::transport {

TEST_CASE("shutting the context down ends a running actor without hanging", "[actor]") {
  zmq::context_t ctx;
  auto actor = Actor::Start(ctx, "orphan", EchoBody);
  REQUIRE(actor.ok());
  auto start = std::chrono::steady_clock::now();
  ctx.shutdown();  // the body's poll sees ETERM and returns
  CHECK((*actor)->Stop(milliseconds(5000)).ok());
  actor->reset();  // sockets closed before the context is destroyed
  CHECK(std::chrono::steady_clock::now() - start < milliseconds(5000));
}

}  // namespace apollo11::transport
