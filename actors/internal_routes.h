#pragma once
// How an actor's turn hands an internal message to its handler: one table of
// rows (message type, handler) per source link, so which messages an actor
// takes and where they go reads in one place. Socket-free: the loops and the
// simulator route through the same tables, which live in the turns
// (SchedulerTurn, DispatcherTurn, ReconcilerTurn).

#include <spdlog/spdlog.h>

#include <array>
#include <string>
#include <vector>

#include "actors/internal_messages.h"
#include "transport/codec.h"

namespace apollo11::actors {

// One row of a handler table: a message type and what handles it.
template <class Self>
struct Route {
  InternalType type;
  void (*handle)(Self& self, const transport::Envelope& env);
};

// A Route handler that decodes the body as T and passes it to (self.*F).
// A body that does not decode is logged (with `Self::kName`) and dropped.
template <class Self, class T, void (Self::*F)(T)>
void Decoded(Self& self, const transport::Envelope& env) {
  auto body = transport::BodyAs<T>(env);
  if (!body.ok()) {
    spdlog::warn("{}: dropped a message of type {}: {}", Self::kName, env.type,
                 body.status().message());
    return;
  }
  (self.*F)(std::move(*body));
}

// Hands `env` to its row of `table`; a type with no row is logged and
// dropped.
template <class Self, size_t N>
void RouteMessage(Self& self, const std::array<Route<Self>, N>& table,
                  const transport::Envelope& env) {
  for (const Route<Self>& route : table) {
    if (static_cast<uint16_t>(route.type) == env.type) return route.handle(self, env);
  }
  spdlog::warn("{}: dropped a message of unexpected type {}", Self::kName, env.type);
}

// Appends `body`, encoded as an internal message of `type`, to `frames`.
template <class T>
void AddFrame(std::vector<std::string>* frames, InternalType type, const T& body) {
  frames->emplace_back();
  transport::Encode(static_cast<uint16_t>(type), body, &frames->back());
}

}  // namespace apollo11::actors
