from __future__ import annotations

import json
import time
from pathlib import PurePosixPath

from django import forms
from django.core.files.uploadedfile import UploadedFile

from rag.parsers import ACCEPTED_EXTENSIONS
from rag.models import Document
from rag.uploads import IncomingFile


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        kwargs.setdefault("allow_empty_file", True)  # an empty file fails alone, by name, in the job
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class UploadForm(forms.Form):
    """Files, a folder, or both; file_info is what only the browser knows (static/js/upload.js)."""

    files = MultipleFileField(
        label="Files", required=False,
        # The picker offers these types; anything else chosen anyway is skipped by name in the job.
        widget=MultipleFileInput(attrs={"accept": ACCEPTED_EXTENSIONS}),
        help_text="PDF (scans are read by OCR), Word .docx, PowerPoint .pptx, Excel .xlsx, OpenDocument .odt, "
                  "e-mail .eml/.msg, images .png/.jpg/.tiff (OCR), Markdown, AsciiDoc, reStructuredText, text or "
                  "HTML; a .zip is unpacked.",
    )
    folder = MultipleFileField(
        label="Or upload a folder", required=False, widget=MultipleFileInput(attrs={"webkitdirectory": True}),
    )
    file_info = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean(self) -> dict:
        cleaned = super().clean()
        if not cleaned.get("files") and not cleaned.get("folder"):
            raise forms.ValidationError("Choose files or a folder to upload.")
        return cleaned

    def incoming_files(self) -> list[IncomingFile]:
        """Each file with the path and mtime its browser reported; a malformed report is ignored, never fatal."""
        try:
            info = json.loads(self.cleaned_data["file_info"] or "{}")
        except ValueError:
            info = {}
        return [
            _incoming(upload, info.get(field) if isinstance(info, dict) else None, index)
            for field in ("files", "folder")
            for index, upload in enumerate(self.cleaned_data[field])
        ]


# A browser clock may run a little ahead of ours; a lastModified further in the future is made up.
_CLOCK_SKEW_SECONDS = 86400


def _incoming(upload: UploadedFile, reported: object, index: int) -> IncomingFile:
    """The browser's report for the index-th file of its field, if it is about this file (same base name)."""
    entry = reported[index] if isinstance(reported, list) and index < len(reported) else None
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, str) or PurePosixPath(name.replace("\\", "/")).name != upload.name:
        return IncomingFile(upload=upload, relative_path=upload.name or "")
    milliseconds = entry.get("lastModified")
    plausible = (
        isinstance(milliseconds, (int, float)) and not isinstance(milliseconds, bool)
        and 0 < milliseconds <= (time.time() + _CLOCK_SKEW_SECONDS) * 1000
    )
    return IncomingFile(upload=upload, relative_path=name, mtime=milliseconds / 1000 if plausible else None)


class DocumentFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Title or path", max_length=200)
    doc_type = forms.CharField(required=False, label="Type", max_length=50)
    status = forms.ChoiceField(
        required=False,
        choices=[("", "Any status"), *Document.Status.choices, ("archived", "Archived")],
    )
    date_from = forms.DateField(required=False, label="Dated from", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="Dated to", widget=forms.DateInput(attrs={"type": "date"}))
