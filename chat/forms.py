from __future__ import annotations

from django import forms
from pydantic import ValidationError

from chat.options import DATES, ConversationOptions
from rag.releases import series_label, version_key
from rag.retrieval import DOC_TYPE_MODES

# ConversationOptions' rules, by the field each names, as the panel says them to a person (the API's wording
# names its parameters).
_RULES_SAID = {
    "after": "Pick the date to search after.",
    "as_of_date": "Answer as of a version or as of a date, not both.",
}


class AskForm(forms.Form):
    question = forms.CharField(max_length=2000, strip=True, widget=forms.Textarea(attrs={"rows": 2}))


class SearchOptionsForm(forms.Form):
    dedup = forms.BooleanField(required=False, label="Hide duplicate passages")
    include_archived = forms.BooleanField(required=False, label="Include archived documents")
    provenance = forms.BooleanField(required=False, label="Show provenance")
    date = forms.ChoiceField(choices=list(DATES.items()), initial="any", label="Dates")
    after = forms.DateField(required=False, label="After", widget=forms.DateInput(attrs={"type": "date"}))
    doc_type = forms.CharField(required=False, max_length=50, label="Document type")
    doc_type_mode = forms.ChoiceField(choices=list(DOC_TYPE_MODES.items()), required=False, initial="boost", label="Use the type to")
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
        same_release = [label for label in labels if stored and version_key(series_label(label)) == version_key(
            series_label(stored))]
        if same_release:  # "3.0.0" or "2.1.2" stored, the line offered: one line, offered once (the scope is the line)
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
        """The fields' own checks are Django's; the rules between them are ConversationOptions'."""
        data = super().clean()
        chosen = {name: value for name, value in data.items() if value not in ("", None)}
        chosen["doc_type_mode"] = data.get("doc_type_mode") or "boost"
        try:
            self.options = ConversationOptions.model_validate(chosen)
        except ValidationError as exc:
            for error in exc.errors():
                field = str(error["loc"][0]) if error["loc"] else None
                rule = error["type"] == "value_error" and _RULES_SAID.get(field or "")
                self.add_error(field, rule or error["msg"])
        return data

    def as_options(self) -> ConversationOptions:
        """The options chosen (only after `is_valid()`)."""
        return self.options
