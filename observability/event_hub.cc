#include "observability/event_hub.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "common/ids.h"

namespace apollo11::observability {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string EventText(const std::string& id, const std::string& type, const std::string& data) {
  std::string text;
  text.reserve(id.size() + type.size() + data.size() + 24);
  if (!id.empty()) text.append("id: ").append(id).append("\n");
  text.append("event: ").append(type).append("\ndata: ").append(data).append("\n\n");
  return text;
}

}  // namespace

EventHub::EventHub(Limits limits) : limits_(limits), token_(NewTraceId()) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

EventHub::~EventHub() {
  if (thread_.joinable()) {
    thread_.request_stop();
    Wake();
    thread_.join();
  }
  {
    MutexLock lock(&mu_);
    streams_.clear();
  }
  for (int fd : wake_) {
    if (fd >= 0) ::close(fd);
  }
}

void EventHub::Wake() {
  if (wake_[1] >= 0) [[maybe_unused]]
    ssize_t w = ::write(wake_[1], "e", 1);
}

bool EventHub::HasRoom(const std::string& ip, std::string* why) const {
  MutexLock lock(&mu_);
  if (wake_[0] < 0) {
    *why = "the event streams could not start (no pipe)";
    return false;
  }
  if (streams_.size() >= limits_.max_streams) {
    *why =
        std::to_string(limits_.max_streams) + " event streams are open, the most this node keeps";
    return false;
  }
  const size_t mine = static_cast<size_t>(std::count_if(
      streams_.begin(), streams_.end(), [&](const Stream& s) { return s.conn->ip() == ip; }));
  if (mine >= limits_.per_address) {
    *why =
        std::to_string(mine) + " event streams are open from " + ip + ", the most one address may";
    return false;
  }
  return true;
}

std::string EventHub::Greeting(const std::string& last_event_id) const {
  std::string text;
  const uint64_t oldest = kept_.empty() ? seq_ + 1 : kept_.front().seq;
  bool replayed = last_event_id.empty();
  const size_t dot = last_event_id.find('.');
  if (!replayed && dot != std::string::npos && last_event_id.compare(0, dot, token_) == 0) {
    uint64_t seq = 0;
    const char* first = last_event_id.data() + dot + 1;
    const char* last = last_event_id.data() + last_event_id.size();
    auto [end, ec] = std::from_chars(first, last, seq);
    if (ec == std::errc() && end == last && seq <= seq_ && seq + 1 >= oldest) {
      for (const Kept& k : kept_) {
        if (k.seq > seq) text += k.text;
      }
      replayed = true;
    }
  }
  if (!replayed) {
    text += EventText("", "reset",
                      R"({"reason":"the events after Last-Event-ID are no longer kept )"
                      R"((or the node restarted): reread what is shown"})");
  }
  text += EventText("", "hello",
                    R"({"id":")" + token_ + "." + std::to_string(seq_) + R"(","live":)" +
                        (live_ ? "true" : "false") + "}");
  return text;
}

void EventHub::Add(std::unique_ptr<HeldConnection> conn, const std::string& last_event_id,
                   const std::string& extra_headers) {
  std::string why;
  if (!HasRoom(conn->ip(), &why)) return;  // closed by the destructor
  MutexLock lock(&mu_);
  Stream s;
  s.conn = std::move(conn);
  s.out =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
      "Cache-Control: no-store\r\nX-Accel-Buffering: no\r\nX-Content-Type-Options: nosniff\r\n"
      "Connection: close\r\n" +
      extra_headers + "\r\nretry: 2000\n\n" + Greeting(last_event_id);
  s.last_write = SteadyClock::now();
  streams_.push_back(std::move(s));
  if (!thread_.joinable()) {
    thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  }
  Wake();
}

void EventHub::Publish(const std::string& type, const std::string& data) {
  MutexLock lock(&mu_);
  ++seq_;
  std::string text = EventText(token_ + "." + std::to_string(seq_), type, data);
  for (Stream& s : streams_) s.out += text;
  kept_.push_back(Kept{seq_, std::move(text)});
  while (kept_.size() > limits_.keep_events) kept_.pop_front();
  if (!streams_.empty()) Wake();
}

void EventHub::SetLive(bool live) {
  MutexLock lock(&mu_);
  live_ = live;
}

size_t EventHub::streams() const {
  MutexLock lock(&mu_);
  return streams_.size();
}

std::string EventHub::last_id() const {
  MutexLock lock(&mu_);
  return token_ + "." + std::to_string(seq_);
}

void EventHub::Flush() {
  const auto now = SteadyClock::now();
  std::erase_if(streams_, [&](Stream& s) {
    if (s.sent == s.out.size() && now - s.last_write >= limits_.keepalive)
      s.out += ": keepalive\n\n";
    while (s.sent < s.out.size()) {
      const ssize_t n = s.conn->Write(s.out.data() + s.sent, s.out.size() - s.sent);
      if (n < 0) return true;
      if (n == 0) break;
      s.sent += static_cast<size_t>(n);
      s.last_write = now;
    }
    if (s.sent == s.out.size()) {
      s.out.clear();
      s.sent = 0;
    } else if (s.sent > 64 * 1024) {
      s.out.erase(0, s.sent);
      s.sent = 0;
    }
    return s.out.size() - s.sent > limits_.max_pending;  // too slow: cut off
  });
}

void EventHub::Loop(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "http-events");
  std::vector<pollfd> fds;
  while (!stop.stop_requested()) {
    {
      MutexLock lock(&mu_);
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      for (const Stream& s : streams_) {
        const short events = POLLIN | (s.sent < s.out.size() ? POLLOUT : 0);
        fds.push_back(pollfd{s.conn->socket(), events, 0});
      }
    }
    const int timeout = static_cast<int>(limits_.keepalive.count());
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
    char drain[64];
    while (::read(wake_[0], drain, sizeof drain) > 0) {
    }
    std::map<int, short> ready;
    for (size_t i = 1; i < fds.size(); ++i) ready[fds[i].fd] = fds[i].revents;
    MutexLock lock(&mu_);
    std::erase_if(streams_, [&](Stream& s) {
      auto r = ready.find(s.conn->socket());
      const bool readable = r != ready.end() && (r->second & (POLLIN | POLLHUP | POLLERR)) != 0;
      return readable && !s.conn->Drain();  // the client closed
    });
    Flush();
  }
}

}  // namespace apollo11::observability
