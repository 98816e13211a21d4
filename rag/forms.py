from __future__ import annotations

from django import forms

from rag.models import Document


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class UploadForm(forms.Form):
    files = MultipleFileField(label="Files", help_text="PDF, Markdown, AsciiDoc, reStructuredText, text or HTML.")


class DocumentFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Title or path", max_length=200)
    doc_type = forms.CharField(required=False, label="Type", max_length=50)
    status = forms.ChoiceField(
        required=False,
        choices=[("", "Any status"), *Document.Status.choices, ("archived", "Archived")],
    )
    date_from = forms.DateField(required=False, label="Dated from", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="Dated to", widget=forms.DateInput(attrs={"type": "date"}))
