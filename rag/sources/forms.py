"""The "add a source" form of the Sources page: checks shapes; rag.sources.services checks the rest."""

from __future__ import annotations

from django import forms

from rag.models import Source


def _globs(text: str) -> list[str]:
    return [part.strip() for line in text.splitlines() for part in line.split(",") if part.strip()]


class SourceForm(forms.Form):
    name = forms.SlugField(max_length=100, help_text="Letters, digits, '-' and '_'.")
    kind = forms.ChoiceField(choices=Source.Kind.choices)
    location = forms.CharField(max_length=2048, help_text="A folder on the server, or a Git repository's path or "
                                                          "clone URL (never with a password in it).")
    branch = forms.CharField(max_length=200, required=False, help_text="Git: empty reads the default branch.")
    tags_pattern = forms.CharField(max_length=200, required=False, label="Tags",
                                   help_text="Git: a glob such as v*; empty reads the tags that parse as versions.")
    include = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                              help_text="Globs of paths to read, one per line; empty reads everything.")
    exclude = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                              help_text="Globs of paths to leave out, one per line.")
    every_minutes = forms.IntegerField(min_value=0, initial=60, label="Sync every (minutes)",
                                       help_text="0: only when someone presses Sync now.")
    watch = forms.BooleanField(required=False, label="Also sync on file changes (folders)")

    def clean_include(self) -> list[str]:
        return _globs(self.cleaned_data["include"])

    def clean_exclude(self) -> list[str]:
        return _globs(self.cleaned_data["exclude"])
