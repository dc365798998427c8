#include "runtime/call_vote.hh"

#include <algorithm>

namespace tnbc {

namespace {

// The vote schedule (vote_at): every 2nd call from the 7th to the 15th (a lone site's first trial,
// after its warm-up call and 4 trial calls, gives its first verdict at its 6th call), every 8th
// from the 16th to the 128th, every 32nd after.
constexpr std::uint64_t kFirstVote = 7, kEarlyEnd = 15, kEarlyStep = 2, kMidEnd = 128, kMidStep = 8, kLateStep = 32;

}  // namespace

bool CallVote::vote_at(std::uint64_t n) {
  if (n < kFirstVote) return false;
  if (n <= kEarlyEnd) return (n - kFirstVote) % kEarlyStep == 0;
  if (n <= kMidEnd) return n % kMidStep == 0;
  return n % kLateStep == 0;
}

bool CallVote::KeyState::votes_for() const {
  return site_count > 0 && site_count <= kSitesPerKey && settled_run >= site_count;
}

CallVote::Entry CallVote::enter(const VoteKey& k) {
  ++calls_;
  int index = -1;
  for (std::size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i].key == k) index = static_cast<int>(i);
  if (index < 0 && keys_.size() < static_cast<std::size_t>(kMaxKeys)) {
    keys_.push_back({k});
    hash_ = fnv1a_word(fnv1a_word(fnv1a_word(hash_, static_cast<std::uint64_t>(k.kind)), k.unit),
                       static_cast<std::uint64_t>(k.root));
    index = static_cast<int>(keys_.size() - 1);
  }
  return {index, !off_ && vote_at(calls_)};
}

void CallVote::record(int key, const void* site, bool settled) {
  if (key < 0) return;
  KeyState& s = keys_[static_cast<std::size_t>(key)];
  s.settled_run = settled ? s.settled_run + 1 : 0;
  if (s.site_count > kSitesPerKey) return;  // too many sites: the key never votes for
  const auto end = s.sites.begin() + static_cast<std::ptrdiff_t>(s.site_count);
  if (std::find(s.sites.begin(), end, site) != end) return;
  if (s.site_count < kSitesPerKey) s.sites[s.site_count] = site;
  ++s.site_count;
}

CallVote::Ballot CallVote::ballot() const {
  std::uint64_t in_favour = 0;
  for (std::size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i].votes_for()) in_favour |= std::uint64_t{1} << i;
  return {~in_favour, hash_, ~hash_};
}

CallVote::Applied CallVote::apply(const Ballot& reduced) {
  Applied out;
  if (reduced[1] != ~reduced[2]) {  // some rank's key table differs
    off_ = true;
    for (KeyState& s : keys_) s.plain = false;
    out.disagreed = true;
    return out;
  }
  const std::uint64_t every_rank = ~reduced[0];
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    KeyState& s = keys_[i];
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (s.plain) {
      if (calls_ >= kRetryFactor * s.agreed_at) {
        s.plain = false;
        s.settled_run = 0;
        out.retried |= bit;
      }
    } else if (every_rank & bit) {
      s.plain = true;
      s.agreed_at = calls_;
      out.agreed |= bit;
    }
  }
  return out;
}

}  // namespace tnbc
