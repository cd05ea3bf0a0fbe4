#include "executor/curl_multi.h"

#include <poll.h>

namespace apollo11::executor {

CurlMulti::CurlMulti(const Clock& clock, const LibCurl& curl) : clock_(clock), curl_(curl) {
  multi_ = curl_.curl_multi_init();
  if (multi_ == nullptr) return;
  curl_.curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlMulti::OnSocket);
  curl_.curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_.curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlMulti::OnTimer);
  curl_.curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
}

CurlMulti::~CurlMulti() {
  if (multi_ != nullptr) curl_.curl_multi_cleanup(multi_);
}

Status CurlMulti::Add(CURL* easy) {
  CURLMcode rc = curl_.curl_multi_add_handle(multi_, easy);
  if (rc != CURLM_OK) return Status::Internal(curl_.curl_multi_strerror(rc));
  ++active_;
  return Status::Ok();
}

void CurlMulti::Remove(CURL* easy) {
  if (curl_.curl_multi_remove_handle(multi_, easy) == CURLM_OK && active_ > 0) --active_;
}

int CurlMulti::OnSocket(CURL*, curl_socket_t s, int what, void* userp, void*) {
  auto* self = static_cast<CurlMulti*>(userp);
  if (what == CURL_POLL_REMOVE) {
    self->sockets_.erase(s);
  } else {
    self->sockets_[s] = what;
  }
  return 0;
}

int CurlMulti::OnTimer(CURLM*, long timeout_ms, void* userp) {
  auto* self = static_cast<CurlMulti*>(userp);
  if (timeout_ms < 0) {
    self->timer_at_ = 0;
  } else {
    self->timer_at_ = self->clock_.Steady() + static_cast<Micros>(timeout_ms) * kMicrosPerMilli;
  }
  return 0;
}

void CurlMulti::AppendPollItems(std::vector<zmq_pollitem_t>* items) const {
  for (const auto& [fd, what] : sockets_) {
    short events = 0;
    if (what & CURL_POLL_IN) events |= ZMQ_POLLIN;
    if (what & CURL_POLL_OUT) events |= ZMQ_POLLOUT;
    items->push_back(zmq_pollitem_t{nullptr, fd, events, 0});
  }
}

void CurlMulti::Process(Micros now, std::vector<std::pair<CURL*, CURLcode>>* done) {
  if (multi_ == nullptr) return;
  int running = 0;
  if (!sockets_.empty()) {
    // Callbacks may change sockets_ while we act on it: poll a snapshot.
    std::vector<pollfd> fds;
    fds.reserve(sockets_.size());
    for (const auto& [fd, what] : sockets_) {
      short events = 0;
      if (what & CURL_POLL_IN) events |= POLLIN;
      if (what & CURL_POLL_OUT) events |= POLLOUT;
      fds.push_back(pollfd{fd, events, 0});
    }
    if (::poll(fds.data(), fds.size(), 0) > 0) {
      for (const pollfd& p : fds) {
        if (p.revents == 0) continue;
        int mask = 0;
        if (p.revents & POLLIN) mask |= CURL_CSELECT_IN;
        if (p.revents & POLLOUT) mask |= CURL_CSELECT_OUT;
        if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) mask |= CURL_CSELECT_ERR;
        curl_.curl_multi_socket_action(multi_, p.fd, mask, &running);
      }
    }
  }
  if (timer_at_ != 0 && timer_at_ <= now) {
    timer_at_ = 0;
    curl_.curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
  }
  int left = 0;
  while (CURLMsg* msg = curl_.curl_multi_info_read(multi_, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* easy = msg->easy_handle;
    CURLcode result = msg->data.result;
    Remove(easy);
    done->emplace_back(easy, result);
  }
}

}  // namespace apollo11::executor
