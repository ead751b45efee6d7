// The public join entry points: option checks and the choice of matcher.
#include "core/join/join.hpp"

#include "core/join/join_internal.hpp"
#include "core/join/join_prefix.hpp"
#include "core/join/read_pipeline.hpp"

namespace spotsigs {

JoinPairs self_join(const Collection& docs, const JoinOptions& opt) {
    join_detail::check_options(opt);
    join_detail::throw_if_canceled(opt.cancel);
    if (opt.method == JoinMethod::BruteForce) return join_detail::brute_self_join(docs, opt);
    if (opt.method == JoinMethod::Partitioned) {
        JoinPairs pairs;
        if (join_detail::group_self_join(docs, opt, join_detail::kGroupCandidateCap, pairs)) return pairs;
    }
    return join_detail::index_self_join(docs, opt, join_detail::config_for(opt.method));
}

JoinPairs self_join(ReadPipeline& input, const JoinOptions& opt) {
    join_detail::check_options(opt);
    join_detail::throw_if_canceled(opt.cancel);
    join_detail::ListedPrefixes* listed = input.prefixes();
    if (opt.method == JoinMethod::Partitioned && listed != nullptr && listed->tau == opt.tau) {
        JoinPairs pairs;
        if (join_detail::group_self_join_listed(input.docs(), *listed, opt, join_detail::kGroupCandidateCap, pairs))
            return pairs;
        listed->lists.clear();  // the index matcher's turn: the entries are not needed
        return join_detail::index_self_join(input.docs(), opt, join_detail::config_for(opt.method));
    }
    return self_join(input.docs(), opt);
}

JoinPairs rs_join(const Collection& r, const Collection& s, const JoinOptions& opt_in) {
    JoinOptions opt = opt_in;
    opt.probe_below = 0;  // passes are a self-join's
    join_detail::check_options(opt);
    join_detail::throw_if_canceled(opt.cancel);
    if (opt.method == JoinMethod::BruteForce) return join_detail::brute_rs_join(r, s, opt);
    return join_detail::index_rs_join(r, s, opt, join_detail::config_for(opt.method));
}

}  // namespace spotsigs
