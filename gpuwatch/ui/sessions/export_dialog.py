"""Exporting a session from the window: pick a format and a file, then write it off the GUI
thread with a progress dialog fed by the exporter's ``progress(fraction, text)`` calls.

Errors (an unreadable session, a folder that cannot be written) end in a message box
with the reason, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThreadPool, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QMessageBox,
    QProgressDialog,
    QPushButton,
    QWidget,
)

from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.export import EXTENSIONS, FORMATS, ExportError, default_output, export

FORMAT_LABELS = {
    "html": "HTML report (one file, charts inline)",
    "pdf": "PDF report (A4)",
    "csv": "CSV tables (zip)",
    "json": "JSON document",
}


def suggested_output(session: Path, fmt: str, folder: Path | None = None) -> Path:
    """The report's default name, in ``folder`` (the home folder unless given)."""
    return (folder or Path.home()) / default_output(session, fmt).name


class ExportDialog(QDialog):
    """Format and destination for one session's report."""

    def __init__(self, session: Path, parent: QWidget | None = None, folder: Path | None = None):
        super().__init__(parent)
        self.session = Path(session)
        self.setWindowTitle(f"Export {self.session.name}")
        self.format = QComboBox()
        for fmt in FORMATS:
            self.format.addItem(FORMAT_LABELS.get(fmt, fmt), fmt)
        self.output = QLineEdit(str(suggested_output(self.session, FORMATS[0], folder)))
        self.output.setMinimumWidth(420)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.output, 1)
        row.addWidget(browse)
        form = QFormLayout(self)
        form.addRow("Format", self.format)
        form.addRow("Save as", row)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.format.currentIndexChanged.connect(self._format_changed)

    def chosen(self) -> tuple[str, Path]:
        return self.format.currentData(), Path(self.output.text().strip())

    def _format_changed(self) -> None:
        fmt = self.format.currentData()
        path = Path(self.output.text().strip() or default_output(self.session, fmt).name)
        stem = path.name
        for ext in EXTENSIONS.values():
            stem = stem.removesuffix(ext)
        self.output.setText(str(path.with_name(stem + EXTENSIONS[fmt])))

    def _browse(self) -> None:
        fmt = self.format.currentData()
        path, _ = QFileDialog.getSaveFileName(
            self, "Export session", self.output.text(),
            f"{FORMAT_LABELS[fmt]} (*{EXTENSIONS[fmt]})")
        if path:
            self.output.setText(path)


class ExportJob(QObject):
    """One export on a worker thread; signals arrive in the GUI thread."""

    progress = Signal(float, str)
    finished = Signal(str)       # the written file
    failed = Signal(str)         # a sentence for a message box

    def __init__(self, session: Path, fmt: str, output: Path, parent: QObject | None = None):
        super().__init__(parent)
        self.session, self.fmt, self.output = Path(session), fmt, Path(output)
        self.result: Path | None = None
        self.error: str | None = None
        self.done = False
        self.finished.connect(self._finished)
        self.failed.connect(self._failed)

    def start(self, pool: QThreadPool | None = None) -> ExportJob:
        (pool or QThreadPool.globalInstance()).start(self._run)
        return self

    def _run(self) -> None:       # worker thread
        try:
            path = export(self.session, self.fmt, self.output,
                          lambda fraction, text: self.progress.emit(float(fraction), text))
        except (ExportError, SessionFileError) as exc:
            self.failed.emit(str(exc))
        except OSError as exc:
            self.failed.emit(f"{self.output}: {exc.strerror or exc}")
        except Exception as exc:     # a report bug must not take the window down
            self.failed.emit(f"The report could not be made ({type(exc).__name__}: {exc})")
        else:
            self.finished.emit(str(path))

    @Slot(str)
    def _finished(self, path: str) -> None:
        self.result = Path(path)
        self.done = True

    @Slot(str)
    def _failed(self, message: str) -> None:
        self.error = message
        self.done = True


class ExportRunner(QObject):
    """Runs an :class:`ExportJob` behind a progress dialog and reports the outcome."""

    completed = Signal(object)     # the ExportJob, finished or failed

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.parent_widget = parent
        self.job: ExportJob | None = None
        self.dialog: QProgressDialog | None = None
        self.message: QMessageBox | None = None

    def ask_and_start(self, session: Path) -> ExportJob | None:
        dialog = ExportDialog(session, self.parent_widget)
        if not dialog.exec():
            return None
        fmt, output = dialog.chosen()
        return self.start(session, fmt, output)

    def start(self, session: Path, fmt: str, output: Path) -> ExportJob:
        job = self.job = ExportJob(session, fmt, output, self)
        progress = self.dialog = QProgressDialog(
            f"Exporting {Path(session).name}…", "", 0, 100, self.parent_widget)
        progress.setWindowTitle("Export")
        progress.setCancelButton(None)          # the writer is atomic but not interruptible
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(300)
        progress.setAutoClose(False)
        progress.setAutoReset(False)
        progress.setValue(0)
        job.progress.connect(self._progress)
        job.finished.connect(self._finished)
        job.failed.connect(self._failed)
        return job.start()

    @Slot(float, str)
    def _progress(self, fraction: float, text: str) -> None:
        if self.dialog is not None:
            self.dialog.setLabelText(text[:90])
            self.dialog.setValue(round(fraction * 100))

    def _close_progress(self) -> None:
        if self.dialog is not None:
            self.dialog.reset()
            self.dialog.close()
            self.dialog.deleteLater()
            self.dialog = None

    @Slot(str)
    def _finished(self, path: str) -> None:
        self._close_progress()
        self._show(QMessageBox.Icon.Information, "Export finished", f"Wrote {path}")
        self.completed.emit(self.job)

    @Slot(str)
    def _failed(self, message: str) -> None:
        self._close_progress()
        self._show(QMessageBox.Icon.Warning, "Export failed", message)
        self.completed.emit(self.job)

    def _show(self, icon: QMessageBox.Icon, title: str, text: str) -> None:
        box = self.message = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok,
                                         self.parent_widget)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.open()      # not exec(): the window keeps running behind it
