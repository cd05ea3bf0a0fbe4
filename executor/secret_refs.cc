#include "executor/secret_refs.h"

namespace apollo11::executor {
namespace {

bool NameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool NameChar(char c) { return NameStart(c) || (c >= '0' && c <= '9'); }

// The name a reference at text[at] ('$') gives and the reference's length;
// an empty name when text[at] starts none.
std::pair<std::string_view, size_t> RefAt(std::string_view text, size_t at) {
  size_t i = at + 1;
  const bool braced = i < text.size() && text[i] == '{';
  if (braced) ++i;
  if (i >= text.size() || !NameStart(text[i])) return {{}, 0};
  const size_t begin = i;
  while (i < text.size() && NameChar(text[i])) ++i;
  const std::string_view name = text.substr(begin, i - begin);
  if (!braced) return {name, i - at};
  if (i >= text.size() || text[i] != '}') return {{}, 0};
  return {name, i + 1 - at};
}

}  // namespace

Result<std::string> ExpandSecretRefs(std::string_view text,
                                     const std::map<std::string, std::string>& values,
                                     dsl::TemplateContext ctx, std::string_view field) {
  if (values.empty() || text.find('$') == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t dollar = text.find('$', i);
    if (dollar == std::string_view::npos) break;
    out.append(text.substr(i, dollar - i));
    const auto [name, length] = RefAt(text, dollar);
    auto value = length == 0 ? values.end() : values.find(std::string(name));
    if (value == values.end()) {
      out.push_back('$');
      i = dollar + 1;
      continue;
    }
    const std::string& v = value->second;
    switch (ctx) {
      case dsl::TemplateContext::kUrl:
        out += dsl::TemplateExpander::UrlEncode(v);
        break;
      case dsl::TemplateContext::kJsonBody:
        out += dsl::TemplateExpander::JsonEscape(v);
        break;
      case dsl::TemplateContext::kHeader:
        if (v.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
          return Status::InvalidInput("secret " + value->first + " cannot go in " +
                                      std::string(field) + ": it holds a line break or NUL byte");
        }
        out += v;
        break;
      case dsl::TemplateContext::kRaw:
      case dsl::TemplateContext::kShell:
        out += v;
        break;
    }
    i = dollar + length;
  }
  if (i < text.size()) out.append(text.substr(i));
  return out;
}

}  // namespace apollo11::executor
