"""How pages name where a document's date and version label came from (Document.date_source,
Document.version_source): kept apart from the models so each new source is one line here."""

DATE_SOURCE_LABELS = {
    "pdf_moddate": "PDF modification date",
    "pdf_creationdate": "PDF creation date",
    "office_modified": "Office document property: modified",
    "office_created": "Office document property: created",
    "odf_modified": "OpenDocument meta.xml: last saved",
    "odf_created": "OpenDocument meta.xml: created",
    "mail_date": "the mail's Date header",
    "frontmatter": "frontmatter date",
    "asciidoc_revdate": "AsciiDoc :revdate:",
    "asciidoc_date": "AsciiDoc :date:",
    "rst_date": "reStructuredText :Date: field",
    "html_meta_date": "HTML date meta tag",
    "git_commit": "Git commit of the tag that first holds this text",
    "mtime": "file modification time",
    "upload_time": "upload time (no date in or on the file)",
    "set_by_hand": "set by hand",
    "unknown": "nothing: no date found",
}
VERSION_SOURCE_LABELS = {
    "frontmatter": "frontmatter version",
    "asciidoc_revnumber": "AsciiDoc :revnumber:",
    "rst_version": "reStructuredText :Version: field",
    "pdf_metadata": "PDF metadata",
    "office_property": "Office document property \"version\"",
    "title": "title",
    "filename": "file name",
    "path": "folder name",
    "git_tag": "Git tag",
    "set_by_hand": "set by hand",
}
# How an unlabelled document's release was inferred (Document.inferred_source, rag.releases.inference).
RELEASE_SOURCE_LABELS = {
    "release_notes": "its release's series pages",
    "directives": "the newest 'new in' it mentions",
    "sibling": "labelled files of its export",
    "calendar": "its date against the release calendar",
    "family": "its place in its family",
}


_SLIDE_SUFFIXES = (".pptx", ".odp")


def page_label(*, path: str, page: int) -> str:
    """"slide 3" in a presentation, "p. 3" elsewhere: a chunk's page as its reader turns to it."""
    return f"slide {page}" if path.lower().endswith(_SLIDE_SUFFIXES) else f"p. {page}"
