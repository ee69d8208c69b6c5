"""Host headers of a cluster view: the GPUs of each host under a line naming it.

A GPU read from Prometheus is named "host/0 · model" by its source; the cards of one
host are laid out together under "node-h100-07 · 8 GPUs", and a host whose GPUs all
went unreachable says so there with the source's reason, whole ("node-a6000-02 · 2
GPUs · unreachable: its scrape fails (Prometheus's up is 0)"), where a card would cut
it. Local GPUs have no host in their names: no headers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QLabel

from gpuwatch.core.snapshot import GpuSample, GpuState
from gpuwatch.core.wording import plural
from gpuwatch.ui.live.card_texts import HOST_GPU
from gpuwatch.ui.widgets import theme


def host_of(name: str) -> str | None:
    """The host of a GPU named "host/0 · model" (a cluster view's), else None."""
    m = HOST_GPU.fullmatch(name)
    return None if m is None else m["host"]


@dataclass(frozen=True)
class HostState:
    host: str
    gpus: tuple[int, ...]            # the window's indices of its GPUs, in order
    unreachable: str | None = None   # the source's reason, when no GPU of it answers


def _unreachable(host: str, gpus: list[GpuSample]) -> str | None:
    prefix = f"host {host} unreachable"
    if not gpus or any(g.state is GpuState.OK or not (g.error or "").startswith(prefix)
                       for g in gpus):
        return None
    return (gpus[0].error or "").removeprefix(prefix).removeprefix(":").strip() or "unreachable"


def host_states(gpus: tuple[GpuSample, ...] | list[GpuSample]) -> tuple[HostState, ...]:
    """The hosts of ``gpus`` in the order of their first GPU; () when any GPU has no host
    (a local window)."""
    by_host: dict[str, list[GpuSample]] = {}
    for g in sorted(gpus, key=lambda g: g.index):
        host = host_of(g.name or "")
        if host is None:
            return ()
        by_host.setdefault(host, []).append(g)
    return tuple(HostState(host, tuple(g.index for g in hs), _unreachable(host, hs))
                 for host, hs in by_host.items())


def header_html(state: HostState) -> str:
    text = f"<b>{escape(state.host)}</b> · {plural(len(state.gpus), 'GPU')}"
    if state.unreachable is not None:
        text += (f" · <span style='color:{theme.colors().critical}'><b>unreachable</b>: "
                 f"{escape(state.unreachable)}</span>")
    return text


def cluster_banner(url: str, hosts: Sequence[str], unreachable: Sequence[str] = ()) -> str:
    """The window's banner in a cluster view: "2 hosts from Prometheus at URL: a, b", or
    while some do not answer "1 of 2 hosts unreachable (b) · from Prometheus at URL"."""
    if not unreachable:
        return (f"<b>{plural(len(hosts), 'host')}</b> from Prometheus at {escape(url)}: "
                f"{escape(', '.join(hosts))}")
    return (f"<b>{len(unreachable)} of {plural(len(hosts), 'host')} unreachable</b> "
            f"({escape(', '.join(unreachable))}) · from Prometheus at {escape(url)}")


class ClusterBanner(QObject):
    """Keeps the banner's label saying how many of the hosts answer, sample by sample."""

    def __init__(self, label: QLabel, url: str) -> None:
        super().__init__(label)
        self.label, self.url = label, url

    def on_snapshots(self, snaps: list) -> None:
        if not snaps:
            return
        states = host_states(snaps[-1].gpus)
        if not states:
            return
        text = cluster_banner(self.url, sorted(s.host for s in states),
                              [s.host for s in states if s.unreachable is not None])
        if text != self.label.text():
            self.label.setText(text)


class HostHeader(QLabel):
    """One host's line above its cards; word-wrapped, so its reason is never cut."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("hostHeader")
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.state: HostState | None = None

    def show_state(self, state: HostState) -> None:
        if state == self.state:
            return
        self.state = state
        self.setText(header_html(state))
        self.setAccessibleName(f"{state.host}, {plural(len(state.gpus), 'GPU')}" + (
            f", unreachable: {state.unreachable}" if state.unreachable else ""))
