from __future__ import annotations

from django import forms

from rag.releases import version_key

DATE_CHOICES = [
    ("any", "Any time"),
    ("last_7_days", "Last 7 days"),
    ("this_month", "This month"),
    ("this_year", "This year"),
    ("after", "After a date"),
]

DOC_TYPE_MODES = [
    ("boost", "Prefer this type"),
    ("filter", "Only this type"),
]


class AskForm(forms.Form):
    question = forms.CharField(max_length=2000, strip=True, widget=forms.Textarea(attrs={"rows": 2}))


class SearchOptionsForm(forms.Form):
    dedup = forms.BooleanField(required=False, label="Hide duplicate passages")
    include_archived = forms.BooleanField(required=False, label="Include archived documents")
    provenance = forms.BooleanField(required=False, label="Show provenance")
    date = forms.ChoiceField(choices=DATE_CHOICES, initial="any", label="Dates")
    after = forms.DateField(required=False, label="After", widget=forms.DateInput(attrs={"type": "date"}))
    doc_type = forms.CharField(required=False, max_length=50, label="Document type")
    doc_type_mode = forms.ChoiceField(choices=DOC_TYPE_MODES, required=False, initial="boost", label="Use the type to")
    as_of_date = forms.DateField(required=False, label="Or as of a date",
                                 widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, doc_types: list[tuple[str, str]] = (), version_labels: list[str] = (),
                 locked: tuple[str, ...] = (), **kwargs) -> None:
        """`locked`: controls the workspace's plan does not offer; they keep their stored value (`initial`)."""
        super().__init__(*args, **kwargs)
        self.fields["doc_type"] = forms.ChoiceField(
            required=False, label="Document type", choices=[("", "Automatic"), *doc_types]
        )
        labels = list(version_labels)
        stored = self.initial.get("as_of_version") or ""
        same_release = [label for label in labels if stored and version_key(label) == version_key(stored)]
        if same_release:  # "3.0.0" stored, "3.0" offered: one release, offered once
            self.initial["as_of_version"] = same_release[0]
        elif stored:
            labels.append(stored)  # its documents are gone; shown, so the panel says what the search does
        self.fields["as_of_version"] = forms.ChoiceField(
            required=False, label="Answer as of", choices=[("", "Latest"), *((label, label) for label in labels)]
        )
        for name in locked:
            # Django takes a disabled field's value from `initial`, never from the request: a control the
            # user cannot change cannot overwrite what the conversation stored.
            self.fields[name].disabled = True

    def clean(self) -> dict:
        data = super().clean()
        if data.get("date") == "after" and not data.get("after"):
            self.add_error("after", "Pick the date to search after.")
        if data.get("as_of_version") and data.get("as_of_date"):
            self.add_error("as_of_date", "Answer as of a version or as of a date, not both.")
        return data

    def as_options(self) -> dict:
        data = self.cleaned_data
        return {
            "dedup": data["dedup"],
            "include_archived": data["include_archived"],
            "provenance": data["provenance"],
            "date": data["date"],
            "after": data["after"].isoformat() if data.get("after") else "",
            "doc_type": data["doc_type"],
            "doc_type_mode": data.get("doc_type_mode") or "boost",
            # Only when chosen: a conversation without them answers from the latest versions.
            **({"as_of_version": data["as_of_version"]} if data.get("as_of_version") else {}),
            **({"as_of_date": data["as_of_date"].isoformat()} if data.get("as_of_date") else {}),
        }
