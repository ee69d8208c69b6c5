"""The advisor's thresholds, with defaults that keep a normal workstation quiet.

Every window and threshold a rule uses lives here, so the window's settings dialog
can expose them and tests can tighten them. Times are seconds of snapshot time.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class AdvisorSettings:
    # --- the engine: hysteresis in time ---------------------------------------
    open_after_s: float = 15.0          # a condition must hold this long before a hint opens
    open_gap_s: float = 3.0             # …missing from this few seconds of it (a sample or
                                        # two that sampling noise hid) does not break it
    clear_after_s: float = 30.0         # …and be gone this long before it closes
    cooldown_s: float = 120.0           # a closed hint does not reopen sooner than this
    downgrade_after_s: float = 300.0    # an open hint keeps its worst severity this long
    update_every_s: float = 300.0       # evidence-only changes are reported at most this often

    # --- oom-risk ---------------------------------------------------------------
    horizon_s: float = 600.0            # warn when the projected time to full is below this
    critical_horizon_s: float = 120.0   # …critical below this
    free_warning_fraction: float = 0.05  # free memory (at the recent peak) below 5 % of total
    free_critical_fraction: float = 0.02
    free_clear_fraction: float = 0.08   # an open low-free hint clears above this
    free_window_s: float = 30.0         # "free" is the least free seen in this window
    full_margin_fraction: float = 0.02  # "full" is total − reserved − this much of total
    trend_window_s: float = 300.0       # the peak line is fitted over this window…
    trend_bucket_s: float = 10.0        # …on the maximum of each bucket of this width
    trend_min_span_s: float = 120.0     # no projection from less than this much history
    trend_min_tau: float = 0.6          # Kendall's tau of the peaks: how steady the climb is
    trend_keep_tau: float = 0.4         # an open trend hint stays while tau is above this
    trend_tie_fraction: float = 0.002   # peaks closer than this (of total) are a tie for tau
    # A climb is judged on the envelope of the peaks (a bucket per training step, at least
    # trend_bucket_s): it must make new highs for climb_persist_s and 2½ buckets (a
    # step up that then holds is not a trend); its rate is the line through its newest
    # trend_recent_s. Slow climbs are judged again on buckets of slow_bucket_s over
    # slow_window_s, and where a large sawtooth hides the steps' top from a minute's
    # peak, on wider buckets too (up to slow_bucket_most_s, the window with them), wide
    # enough to see it within half the tie. The cheap first test: the newest
    # climb_newest_s top every earlier peak.
    trend_recent_s: float = 120.0
    climb_persist_s: float = 40.0
    climb_newest_s: float = 70.0
    slow_bucket_s: float = 60.0
    slow_window_s: float = 900.0
    slow_bucket_most_s: float = 240.0
    # Critical needs a consistent climb: this long, this steady.
    critical_persist_s: float = 60.0
    # A staircase (steps up that hold, regular in height and interval) is looked for in
    # each process's envelope over stairs_window_s, anew every stairs_every_s.
    stairs_window_s: float = 2400.0
    stairs_every_s: float = 10.0
    critical_min_tau: float = 0.8
    # A spike (memory up at once and back within spike_most_s: an evaluation's buffers)
    # is left out of the envelope, looked for every trend bucket; the tallest of the last
    # spike_memory_s is counted on top of a climb, as it may come back.
    spike_most_s: float = 240.0
    spike_memory_s: float = 2400.0
    # A climb that starts with a process and goes on at the pace it started with is its
    # warm-up (loading weights, the first steps and evaluation filling the caching
    # allocator) for up to oom_warmup_s; a process whose memory mostly came at once and
    # then keeps climbing (more than warmup_pace_ratio × its rate × its age) is not.
    oom_warmup_s: float = 360.0
    warmup_pace_ratio: float = 1.75

    # --- likely-oom ---------------------------------------------------------------
    # A process that exits while its GPU was this full (of total − reserved, the peak of
    # its last ``oom_exit_window_s``), or while oom-risk was open for that GPU, probably
    # died of an out-of-memory error; the hint stays up ``oom_exit_show_s``.
    oom_exit_used_fraction: float = 0.95
    oom_exit_window_s: float = 30.0
    oom_exit_show_s: float = 600.0

    # --- memory-leak ------------------------------------------------------------
    leak_window_s: float = 1800.0
    leak_bucket_s: float = 30.0         # the floor is the minimum of each bucket
    leak_min_span_s: float = 600.0      # need this many seconds of floors (many steps)
    leak_warmup_s: float = 360.0        # a process's first minutes (loading, warm-up) don't count
    leak_min_rate_bytes_per_s: float = 10 * MIB / 60
    leak_min_tau: float = 0.7
    leak_tie_bytes: float = 1 * MIB

    # --- fragmentation ------------------------------------------------------------
    frag_window_s: float = 60.0
    frag_min_unexplained_bytes: float = 2 * GIB
    frag_min_unexplained_fraction: float = 0.5   # of the linked budget
    frag_slack_fraction: float = 0.3    # allocator stats: reserved − allocated above 30 %…
    frag_min_slack_bytes: float = 2 * GIB        # …and above this
    frag_min_inactive_split_bytes: float = 1 * GIB

    # --- contention -------------------------------------------------------------
    contention_window_s: float = 120.0  # a process's "need" without a budget: its peak here
    contention_min_process_bytes: float = 512 * MIB   # smaller processes don't count as rivals

    # --- underused --------------------------------------------------------------
    underused_fraction: float = 0.30    # peak use below 30 % of total…
    underused_window_s: float = 600.0   # …for this long…
    underused_min_util_percent: float = 50.0   # …while the GPU computes at least this much

    # --- bandwidth-saturated ----------------------------------------------------
    bandwidth_busy_percent: float = 95.0
    bandwidth_window_s: float = 120.0
    bandwidth_quantile: float = 0.1     # the 10th percentile of busy % must be above the bar

    # --- gpu-lost / gpu-recovered -----------------------------------------------
    recovered_show_s: float = 120.0     # how long "GPU is back" stays up
