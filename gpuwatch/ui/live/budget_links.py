"""Which running commands are linked to which budget, and the saved budget presets.

Links are keyed by the full command line, so relaunching the same training command
(a new pid) picks its budget up again. Both are stored in the settings file.
"""

from __future__ import annotations

from gpuwatch.ui.live.budget_adapter import BudgetRequest
from gpuwatch.ui.settings import Settings

LINKS_KEY = "budget/links"
PRESETS_KEY = "budget/presets"
FORM_KEY = "budget/form"


class BudgetLinks:
    def __init__(self, settings: Settings):
        self._settings = settings
        self._links: dict[tuple[str, ...], BudgetRequest] = {}
        for item in settings.get_json(LINKS_KEY, []):
            if isinstance(item, dict) and isinstance(item.get("cmdline"), list):
                request = BudgetRequest.from_json(item.get("request"))
                if request is not None:
                    self._links[tuple(str(a) for a in item["cmdline"])] = request
        raw = settings.get_json(PRESETS_KEY, {})
        self.presets: dict[str, BudgetRequest] = {}
        if isinstance(raw, dict):
            for name, data in raw.items():
                request = BudgetRequest.from_json(data)
                if request is not None:
                    self.presets[str(name)] = request

    def get(self, cmdline: tuple[str, ...]) -> BudgetRequest | None:
        return self._links.get(cmdline) if cmdline else None

    def link(self, cmdline: tuple[str, ...], request: BudgetRequest) -> None:
        self._links[cmdline] = request
        self._save()

    def unlink(self, cmdline: tuple[str, ...]) -> None:
        if self._links.pop(cmdline, None) is not None:
            self._save()

    def __len__(self) -> int:
        return len(self._links)

    def save_preset(self, name: str, request: BudgetRequest) -> None:
        self.presets[name] = request
        self._settings.set_json(PRESETS_KEY, {k: v.to_json() for k, v in self.presets.items()})

    def _save(self) -> None:
        self._settings.set_json(LINKS_KEY, [{"cmdline": list(c), "request": r.to_json()}
                                            for c, r in self._links.items()])
