#pragma once
// Secrets in an http task's request. The task's `secrets:` are resolved on
// the worker (secret_resolver.h); its url, header values and body name them
// as `$NAME` or `${NAME}`, replaced here, on the worker, just before the
// request is made. The coordinator never sees a value: what it stores, shows
// and journals is the text with the references (docs/dsl.md, "Secrets").

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"
#include "dsl/template_expander.h"

namespace apollo11::executor {

// `text` with each `$NAME` and `${NAME}` whose NAME is a key of `values`
// replaced by that value, escaped for `ctx`: kUrl percent-encodes it,
// kJsonBody JSON-escapes it (a secret sits inside a JSON string), kHeader
// refuses a value with CR, LF or NUL, kRaw and kShell keep it as is. `$NAME`
// takes the longest name ([A-Za-z_][A-Za-z0-9_]*); any other `$` text is
// left as written. An error names the secret and `field`, never the value.
Result<std::string> ExpandSecretRefs(std::string_view text,
                                     const std::map<std::string, std::string>& values,
                                     dsl::TemplateContext ctx, std::string_view field);

}  // namespace apollo11::executor
