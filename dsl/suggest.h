#pragma once
// "Did you mean" hints for misspelt keys, types and task names.

#include <string>
#include <string_view>
#include <vector>

namespace apollo11::dsl {

// Edit distance between `a` and `b` (insertions, deletions, substitutions and
// adjacent transpositions each cost 1); O(|a|*|b|) time, O(|b|) memory.
size_t EditDistance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" for the candidate closest to `word` when it is close
// enough to be a plausible typo (distance <= 2, and less than half the word);
// otherwise "". Ties go to the earliest candidate.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace apollo11::dsl
