#pragma once
namespace apollo11 {
inline constexpr const char* kVersion = "0.1.0";
}
