#include "executor/secret_mask.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/json_dump.h"

namespace apollo11::executor {
namespace {

using Json = nlohmann::json;

// `line` as it appears between the quotes of a JSON string.
std::string JsonEscaped(std::string_view line) {
  const std::string quoted = SafeJsonDump(Json(std::string(line)));
  return quoted.substr(1, quoted.size() - 2);
}

}  // namespace

void SecretMask::Add(std::string_view value) {
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find('\n', start);
    if (end == std::string_view::npos) end = value.size();
    std::string_view line = value.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start = end + 1;
    if (line.size() < kMinMaskedSecretBytes) continue;
    for (std::string form : {std::string(line), JsonEscaped(line)}) {
      if (std::find(patterns_.begin(), patterns_.end(), form) != patterns_.end()) continue;
      longest_ = std::max(longest_, form.size());
      patterns_.push_back(std::move(form));
    }
  }
}

std::pair<size_t, size_t> SecretMask::Find(std::string_view text, size_t from) const {
  std::pair<size_t, size_t> best{std::string_view::npos, 0};
  for (const std::string& p : patterns_) {
    const size_t at = text.find(p, from);
    if (at == std::string_view::npos) continue;
    if (at < best.first || (at == best.first && p.size() > best.second)) best = {at, p.size()};
  }
  return best;
}

size_t SecretMask::MaskPrefix(std::string_view text, size_t end, std::string* out) const {
  size_t i = 0;
  while (i < end) {
    const auto [at, len] = Find(text, i);
    if (at == std::string_view::npos || at >= end) {
      out->append(text.substr(i, end - i));
      return end;
    }
    out->append(text.substr(i, at - i));
    out->append(kSecretMaskText);
    i = at + len;
  }
  return i;
}

std::string SecretMask::Mask(std::string_view text) const {
  if (patterns_.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  MaskPrefix(text, text.size(), &out);
  return out;
}

std::string SecretMask::MaskJson(std::string_view json) const {
  if (patterns_.empty()) return std::string(json);
  Json doc = ParseJsonBounded(json);
  if (doc.is_discarded()) return Mask(json);
  // Iterative: a task's output may nest as deep as its size allows.
  std::vector<Json*> todo = {&doc};
  while (!todo.empty()) {
    Json& v = *todo.back();
    todo.pop_back();
    if (v.is_string()) {
      v = Mask(v.get_ref<const std::string&>());
    } else if (v.is_number()) {
      const std::string text = v.dump();
      if (Mask(text) != text) v = std::string(kSecretMaskText);
    } else if (v.is_array()) {
      for (Json& item : v) todo.push_back(&item);
    } else if (v.is_object()) {
      std::vector<std::string> renamed;  // keys that hold a value
      for (auto& [key, item] : v.items()) {
        if (Mask(key) != key) renamed.push_back(key);
      }
      for (const std::string& key : renamed) {
        Json item = std::move(v[key]);
        v.erase(key);
        v[Mask(key)] = std::move(item);
      }
      for (auto& [key, item] : v.items()) todo.push_back(&item);
    }
  }
  return SafeJsonDump(doc);
}

std::string SecretMask::Stream::Feed(std::string_view piece) {
  if (mask_ == nullptr || mask_->empty()) return std::string(piece);
  pending_.append(piece);
  // A value starting before `cut` ends within pending_: it is no longer than
  // longest_, and none spans a newline.
  size_t cut = pending_.size() >= mask_->longest_ ? pending_.size() - (mask_->longest_ - 1) : 0;
  const size_t newline = pending_.rfind('\n');
  if (newline != std::string::npos) cut = std::max(cut, newline + 1);
  std::string out;
  const size_t stop = mask_->MaskPrefix(pending_, cut, &out);
  pending_.erase(0, stop);
  return out;
}

std::string SecretMask::Stream::Flush() {
  std::string out = mask_ == nullptr ? std::move(pending_) : mask_->Mask(pending_);
  pending_.clear();
  return out;
}

}  // namespace apollo11::executor
