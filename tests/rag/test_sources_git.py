"""Git sources on real repositories built here: tags as versions, blobs as documents, re-syncs, faults."""

from __future__ import annotations

import pytest

from rag.releases.scope import documents_as_of, workspace_version_labels
from rag.models import Document, IndexingJobItem, Source, SourceFile
from rag.sources.services import SourceError, source_add, source_sync
from tests.rag.source_support import GitRepo, encoded, sync_here

GUIDE_1 = "# Gateway guide\n\nThe gateway listens on port 8080 by default.\n"
GUIDE_2 = "# Gateway guide\n\nThe gateway listens on port 9090 by default since this release.\n"
LIMITS = "# Limits\n\nEach client may send 100 requests per minute.\n"


@pytest.fixture
def repo(tmp_path):
    """1.0: guide (8080). 1.1: limits added, guide unchanged. 1.2: guide says 9090. main: one unreleased edit."""
    repo = GitRepo(tmp_path / "docs-repo")
    repo.commit({"docs/guide.md": GUIDE_1, "README.txt": "not docs", "src/app.py": "print(1)\n"})
    repo.tag("v1.0")
    repo.commit({"docs/limits.md": LIMITS})
    repo.tag("v1.1", annotated=True)
    repo.commit({"docs/guide.md": GUIDE_2})
    repo.tag("v1.2")
    repo.tag("nightly-2024")  # not a version: left out by default
    repo.commit({"docs/limits.md": LIMITS.replace("100", "250")})
    return repo


@pytest.fixture
def source(workspace, repo):
    return source_add(workspace=workspace, name="docs", kind=Source.Kind.GIT, location=str(repo.path),
                      include=["docs/*"])


def _document(workspace, file_path: str, text: str) -> Document:
    return next(doc for doc in Document.objects.filter(workspace=workspace, display_path=file_path)
                if text in doc.chunks.first().text)


def test_one_document_per_blob_labelled_and_dated_by_its_first_tag(source, workspace,
                                                                   django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # the merges, which build the families
        sync_here(source.pk)
    rows = {(row.file_path, row.tags[0] if row.tags else "main"): row
            for row in SourceFile.objects.filter(source=source)}
    assert set(rows) == {("docs/guide.md", "v1.0"), ("docs/guide.md", "v1.2"), ("docs/limits.md", "v1.1"),
                         ("docs/limits.md", "main")}
    assert rows[("docs/guide.md", "v1.0")].tags == ["v1.0", "v1.1"]
    assert rows[("docs/limits.md", "main")].on_branch and not rows[("docs/limits.md", "main")].tags

    old = _document(workspace, "docs/guide.md", "8080")
    assert (old.version_label, old.version_source, old.date_source) == ("1.0", "git_tag", "git_commit")
    assert old.doc_date.date().isoformat() == "2024-01-02"  # the v1.0 commit, not the file's own date
    unreleased = _document(workspace, "docs/limits.md", "250")
    assert unreleased.version_label == "" and unreleased.doc_date.date().isoformat() == "2024-01-05"
    assert Document.objects.filter(workspace=workspace).count() == 4  # README.txt and src/ left out
    # The branch's head is the newest version: its text is the current one, the 1.1 text an older version.
    assert unreleased.is_latest_version and unreleased.family_id is not None
    assert not _document(workspace, "docs/limits.md", "100").is_latest_version
    assert not old.is_latest_version and _document(workspace, "docs/guide.md", "9090").is_latest_version


def test_as_of_a_tag_finds_the_blob_its_tree_holds_even_when_written_for_an_older_tag(source, workspace):
    sync_here(source.pk)
    old_guide = _document(workspace, "docs/guide.md", "8080")
    new_guide = _document(workspace, "docs/guide.md", "9090")
    limits = _document(workspace, "docs/limits.md", "100")
    unreleased = _document(workspace, "docs/limits.md", "250")
    at_1_1 = documents_as_of(workspace_id=workspace.pk, version="1.1")
    assert {old_guide.pk, limits.pk} <= at_1_1 and not {new_guide.pk, unreleased.pk} & at_1_1
    at_1_0 = documents_as_of(workspace_id=workspace.pk, version="1.0")
    assert old_guide.pk in at_1_0 and limits.pk not in at_1_0
    at_1_2 = documents_as_of(workspace_id=workspace.pk, version="1.2")
    assert {new_guide.pk, limits.pk} <= at_1_2 and old_guide.pk not in at_1_2
    assert {"1.0", "1.1", "1.2"} <= set(workspace_version_labels(workspace_id=workspace.pk))


def test_a_resync_reads_only_new_tags_and_encodes_only_new_blobs(source, workspace, repo):
    sync_here(source.pk)
    nothing = sync_here(source.pk)
    source.refresh_from_db()
    assert source.last_changes["tags_read"] == [] and not source.last_changes["branch_moved"]
    assert nothing.items.count() == 0

    repo.tag("v1.3")  # the branch's head released: no new blob, one more tag for each
    tagged = sync_here(source.pk)
    source.refresh_from_db()
    assert source.last_changes["tags_read"] == ["v1.3"] and encoded(tagged) == 0 and tagged.items.count() == 0
    released = _document(workspace, "docs/limits.md", "250")
    assert released.version_label == "1.3" and released.version_source == "git_tag"
    assert SourceFile.objects.get(source=source, document_path=released.path).tags == ["v1.3"]
    assert released.pk in documents_as_of(workspace_id=workspace.pk, version="1.3")


def test_a_force_pushed_branch_is_reread_and_what_left_it_archived(workspace, repo, tmp_path):
    remote = tmp_path / "remote.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(remote))
    source = source_add(workspace=workspace, name="mirror", kind=Source.Kind.GIT, location=f"file://{remote}",
                        include=["docs/*"])
    sync_here(source.pk)
    unreleased = _document(workspace, "docs/limits.md", "250")

    repo.git("reset", "-q", "--hard", "v1.2")
    repo.commit({"docs/limits.md": LIMITS.replace("100", "500")}, message="rewritten")
    repo.git("push", "-q", "--force", str(remote), "main")
    job = sync_here(source.pk)
    source.refresh_from_db()
    assert source.last_changes["force_push"] and source.last_changes["tags_read"] == []
    assert Document.objects.get(pk=unreleased.pk).archived and job.archived_count == 1
    assert _document(workspace, "docs/limits.md", "500").archived is False
    assert not Document.objects.filter(workspace=workspace, archived=False, chunks__text__contains="250").exists()


def test_an_unreachable_remote_fails_with_a_reason_and_loses_nothing(workspace, repo, tmp_path):
    remote = tmp_path / "remote.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(remote))
    source = source_add(workspace=workspace, name="mirror", kind=Source.Kind.GIT, location=f"file://{remote}")
    sync_here(source.pk)
    indexed = Document.objects.filter(workspace=workspace, archived=False).count()

    Source.objects.filter(pk=source.pk).update(location="http://127.0.0.1:9/docs.git")  # nothing listens there
    with pytest.raises(SourceError, match="cannot fetch http://127.0.0.1:9/docs.git"):
        source_sync(source_id=source.pk)
    source.refresh_from_db()
    assert "cannot fetch" in source.last_error and not source.paused
    assert Document.objects.filter(workspace=workspace, archived=False).count() == indexed

    Source.objects.filter(pk=source.pk).update(location=f"file://{remote}")
    repo.commit({"docs/new.md": "# New\n\nA page written after the remote came back.\n"})
    repo.git("push", "-q", str(remote), "main")
    job = sync_here(source.pk)
    assert job.items.filter(status=IndexingJobItem.Status.INDEXED).count() == 1
    source.refresh_from_db()
    assert not source.last_error


def test_a_deleted_tag_archives_the_blobs_only_it_held(source, workspace, repo):
    sync_here(source.pk)
    repo.git("tag", "-d", "v1.2")
    sync_here(source.pk)
    assert _document(workspace, "docs/guide.md", "9090").archived is False  # the branch still holds it
    repo.git("tag", "-d", "v1.1")
    sync_here(source.pk)
    limits = _document(workspace, "docs/limits.md", "100")
    assert limits.archived  # only v1.1 held that blob


def test_a_password_in_the_url_is_refused_and_credentials_never_logged(workspace, caplog, settings):
    settings.GIT_SOURCE_CREDENTIALS = {"127.0.0.1": {"username": "bot", "password": "s3cret-token"}}
    with pytest.raises(SourceError, match="password"):
        source_add(workspace=workspace, name="g", kind="git", location="https://bot:pw@127.0.0.1:9/docs.git")
    source = source_add(workspace=workspace, name="g", kind="git", location="https://bot@127.0.0.1:9/docs.git")
    with pytest.raises(SourceError):
        source_sync(source_id=source.pk)
    source.refresh_from_db()
    assert "s3cret" not in caplog.text and "s3cret" not in source.last_error and "bot@" not in source.last_error


def _credential_store(tmp_path, monkeypatch, *entries: str) -> None:
    """git's own credential store, holding `entries`, as the only git configuration the test sees."""
    store = tmp_path / "credentials"
    store.write_text("".join(f"{entry}\n" for entry in entries))
    config = tmp_path / "gitconfig"
    config.write_text(f"[credential]\n\thelper = store --file={store}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def test_https_credentials_come_from_the_hosts_entry_else_from_gits_credential_store(tmp_path, monkeypatch,
                                                                                    settings):
    from rag.sources.git import credentials_for

    settings.GIT_SOURCE_CREDENTIALS = {"git.example.com": {"username": "bot", "password": "env-token"}}
    assert credentials_for("https://git.example.com/docs.git") == ("bot", "env-token")
    settings.GIT_SOURCE_CREDENTIALS = {}
    _credential_store(tmp_path, monkeypatch, "https://ci:store-token@git.example.com")
    assert credentials_for("https://git.example.com/docs.git") == ("ci", "store-token")
    assert credentials_for("https://other.example.com/docs.git") == (None, None)  # no prompt, no credential


def test_a_tag_older_than_those_read_becomes_the_first_tag_of_its_blobs(source, workspace, repo):
    sync_here(source.pk)
    first = repo.git("rev-list", "--max-parents=0", "HEAD")
    repo.git("tag", "v0.9", first)  # a release tagged late, older than every tag already read
    job = sync_here(source.pk)
    old_guide = _document(workspace, "docs/guide.md", "8080")
    assert (old_guide.version_label, old_guide.version_source) == ("0.9", "git_tag")
    assert job.items.count() == 0 and old_guide.path.startswith("git/docs/v0.9/")
    assert SourceFile.objects.get(source=source, document_path=old_guide.path).tags == ["v0.9", "v1.0", "v1.1"]


def test_credentials_go_only_to_their_host_and_never_over_plain_http(tmp_path, monkeypatch, settings):
    from rag.sources.git import credentials_for

    settings.GIT_SOURCE_CREDENTIALS = {"git.example.com": {"username": "bot", "password": "tok"},
                                       "git.example.com:8443": {"username": "ci", "password": "other"}}
    _credential_store(tmp_path, monkeypatch, "http://ci:store-token@git.example.com",
                      "http://ci:store-token@plain.example.com")
    assert credentials_for("https://GIT.example.com/docs.git") == ("bot", "tok")
    assert credentials_for("https://git.example.com:8443/docs.git") == ("ci", "other")
    assert credentials_for("https://evil.example.net/docs.git") == (None, None)  # another host gets nothing
    assert credentials_for("https://git.example.com.evil.example.net/docs.git") == (None, None)
    assert credentials_for("http://git.example.com/docs.git") == (None, None)  # plain HTTP: not even the store's
    assert credentials_for("http://plain.example.com/docs.git") == (None, None)
    assert credentials_for("http://bob@git.example.com/docs.git") == ("bob", None)


def test_a_remote_ref_with_a_name_git_refuses_is_left_out_not_a_crash(source, workspace, repo, tmp_path,
                                                                        monkeypatch):
    import rag.sources.git as git_module

    remote = tmp_path / "remote.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(remote))
    real = git_module.get_transport_and_path

    def advertising_a_bad_name(location, **kwargs):
        client, path = real(location, **kwargs)
        fetch = client.fetch

        def fetched(*args, **fetch_kwargs):
            result = fetch(*args, **fetch_kwargs)
            result.refs[b"refs/tags/v9..0"] = result.refs[b"refs/heads/main"]  # what a hostile server may send
            return result
        client.fetch = fetched
        return client, path

    monkeypatch.setattr(git_module, "get_transport_and_path", advertising_a_bad_name)
    Source.objects.filter(pk=source.pk).update(location=f"file://{remote}")
    job = sync_here(source.pk)
    source.refresh_from_db()
    assert not source.last_error and job.items.exists()
    assert "v9..0" not in source.state["tags"]
