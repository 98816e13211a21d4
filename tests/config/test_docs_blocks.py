"""Every code block in docs/ runs as written against what `make run` serves (issue 54): the demo workspace, a
personal token, the web server. A newcomer copies these blocks first; a block that fails when copied is a bug.

Each block is checked the way its kind is used: curl lines and the Python script run against a live server (the
address and token swapped for the test's); an MCP request is sent to /mcp and the answer shown after it must hold
what the live answer holds; an MCP client entry must connect; a `manage.py` synopsis must name commands and
options the command's --help lists; a deployment `export` line may only set variables docs/configuration.md lists.
A block of any other kind fails the test until a way to check it is added here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.core.management import get_commands, load_command_class

from rag.bootstrap import demo_corpus_prepare
from rag.tokens import api_token_create
from tests.chat.conftest import index_folder
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory
from tests.rag.retrieval_helpers import encoder, minilm  # noqa: F401 (the real MiniLM encoder, as fixtures)

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
# What the docs write for the instance `make run` serves and for a token; swapped for the live server's.
DOC_BASES = ("http://127.0.0.1:8000", "http://localhost:8000")
DOC_TOKEN = "docent_..."
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str  # a fence's language, "" for an indented block
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    """Fenced blocks and indented ones (four spaces after a blank line, outside lists' continuation text)."""
    blocks: list[Block] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            end = next(j for j in range(index + 1, len(lines)) if lines[j].startswith("```"))
            blocks.append(Block(path.name, index + 1, line[3:].strip(), "\n".join(lines[index + 1:end])))
            index = end + 1
            continue
        previous_blank = index == 0 or not lines[index - 1].strip()
        if line.startswith("    ") and line.strip() and previous_blank and not _in_list(lines, index):
            end = index
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            body = "\n".join(text[4:] for text in lines[index:end]).strip("\n")
            blocks.append(Block(path.name, index + 1, "", body))
            index = end
            continue
        index += 1
    return blocks


def _in_list(lines: list[str], index: int) -> bool:
    """An indented paragraph that continues a list item is text, not code."""
    for back in range(index - 1, -1, -1):
        if lines[back].strip():
            return bool(re.match(r"\s*([-*+]|\d+\.)\s", lines[back]))
    return False


ALL_BLOCKS = [block for path in DOCS for block in code_blocks(path)]


def kind(block: Block) -> str:
    text = block.text.lstrip()
    if text.startswith("curl "):
        return "curl"
    if block.lang == "python":
        return "python"
    if block.lang == "json":
        data = json.loads(block.text)
        if "jsonrpc" in data:
            return "mcp-request"
        if "mcpServers" in data or "servers" in data:
            return "mcp-client"
        return "mcp-result"
    if re.match(r"(\.venv/bin/)?python (manage\.py|tools/)", text):
        return "synopsis"
    if text.startswith("export "):
        return "environment"
    return "unknown"


def test_every_block_in_docs_is_of_a_kind_this_test_checks():
    assert ALL_BLOCKS, "no code block found in docs/"
    unknown = [str(block) for block in ALL_BLOCKS if kind(block) == "unknown"]
    assert not unknown, f"code blocks this test cannot check (add a way to, or make them text): {unknown}"
    # An MCP result shown in the docs follows the request that gives it.
    for block in ALL_BLOCKS:
        if kind(block) == "mcp-result":
            before = [other for other in ALL_BLOCKS if other.doc == block.doc and other.line < block.line]
            assert before and kind(before[-1]) == "mcp-request", f"{block}: a result with no request before it"


# --- what the docs show against a live server ------------------------------------------------------------------

@pytest.fixture
def served(django_db_serialized_rollback, live_server, transactional_db, encoder) -> dict[str, str]:
    """The demo workspace as `make run` makes it: the demo corpus indexed, the trial's features, one member's token."""
    user = UserFactory()
    workspace = WorkspaceFactory(slug="demo", members=[user])
    LicenseFactory(workspace=workspace)
    index_folder(workspace, demo_corpus_prepare())
    _, token = api_token_create(user=user, name="docs")
    return {"base": live_server.url, "token": token}


def _swap(text: str, served: dict[str, str]) -> str:
    for base in DOC_BASES:
        text = text.replace(base, served["base"])
    return text.replace(DOC_TOKEN, served["token"])


def _mcp_post(url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    request = urllib.request.Request(url, method="POST", data=json.dumps(body).encode(),
                                     headers={**MCP_HEADERS, **headers})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def _holds(shown: Any, live: Any, where: str) -> list[str]:
    """Where the shown answer says something the live one does not (shown answers are abridged: keys may be left
    out, lists cut short; a shown text must hold the live text's numbers)."""
    if isinstance(shown, dict):
        if not isinstance(live, dict):
            return [f"{where}: shown an object, got {live!r}"]
        return [miss for key, value in shown.items()
                for miss in ([f"{where}.{key}: missing"] if key not in live else _holds(value, live[key],
                                                                                         f"{where}.{key}"))]
    if isinstance(shown, list):
        if not isinstance(live, list) or len(live) < len(shown):
            return [f"{where}: shown {len(shown)} items, got {live!r}"]
        return [miss for i, value in enumerate(shown) for miss in _holds(value, live[i], f"{where}[{i}]")]
    if isinstance(shown, str) and isinstance(live, str) and ("http" in shown or len(shown) > 40):
        numbers = set(re.findall(r"\d+", re.sub(r"https?://\S+", "", shown)))
        missing = numbers - set(re.findall(r"\d+", live))
        return [f"{where}: {sorted(missing)} not in {live!r}"] if missing else []
    if isinstance(shown, int) and not isinstance(shown, bool) and where.endswith(("_id", ".id", ".n")):
        return []  # ids differ between installs
    return [] if shown == live else [f"{where}: shown {shown!r}, got {live!r}"]


RUNNABLE = [block for block in ALL_BLOCKS if kind(block) in {"curl", "python", "mcp-request", "mcp-client"}]


def test_every_runnable_block_runs_as_written_against_the_demo(served):
    """One live server and one indexed demo for all of them; every failing block is named."""
    assert RUNNABLE
    failures = [f"{block}: {miss}" for block in RUNNABLE for miss in _run(block, served)]
    assert not failures, "\n".join(failures)


def _run(block: Block, served: dict[str, str]) -> list[str]:
    if kind(block) == "curl":
        completed = subprocess.run(["bash", "-c", _swap(block.text, served) + " --fail-with-body --silent"],
                                   env={**os.environ, "TOKEN": served["token"]}, capture_output=True, text=True,
                                   timeout=120)
        if completed.returncode:
            return [f"exit {completed.returncode}: {completed.stderr} {completed.stdout}"]
        reply = json.loads(completed.stdout)
        return [] if reply.get("results") or reply.get("answer", {}).get("citations") else [f"empty: {reply}"]
    if kind(block) == "python":
        completed = subprocess.run([sys.executable, "-c", _swap(block.text, served)], capture_output=True, text=True,
                                   timeout=180)
        if completed.returncode:
            return [completed.stderr]
        shown = re.findall(r'# "([^"]+)"', block.text)  # what the script's comments say it prints
        return [f"prints {completed.stdout!r}, the docs say {text!r}" for text in shown if text not in completed.stdout]
    if kind(block) == "mcp-client":
        entry = next(iter(next(iter(json.loads(_swap(block.text, served)).values())).values()))
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "docs", "version": "1"}}}
        reply = _mcp_post(entry["url"], initialize, entry["headers"])
        return [] if reply.get("result", {}).get("serverInfo") else [f"no initialize result: {reply}"]
    reply = _mcp_post(f"{served['base']}/mcp", json.loads(block.text), {"Authorization": f"Bearer {served['token']}"})
    if "result" not in reply or reply["result"].get("isError"):
        return [f"refused: {reply}"]
    after = [other for other in ALL_BLOCKS if other.doc == block.doc and other.line > block.line]
    if after and kind(after[0]) == "mcp-result":
        shown = json.loads(_swap(after[0].text, served))
        return [f"{after[0]} shows what the server does not answer: {miss}"
                for miss in _holds(shown, reply["result"]["structuredContent"], "result")]
    return []


# --- what the docs name but a test server cannot run ------------------------------------------------------------

def _parser(command: list[str]) -> argparse.ArgumentParser:
    """The command's own argument parser (read in this process: a `manage.py --help` per line took minutes)."""
    if command[0] == "manage.py":
        parser = load_command_class(get_commands()[command[1]], command[1]).create_parser("manage.py", command[1])
    else:
        spec = importlib.util.spec_from_file_location("synopsis_tool", ROOT / command[0])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        parser = module._parser()
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction)), {})


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if kind(b) == "synopsis"], ids=str)
def test_a_synopsis_names_commands_and_options_that_exist(block):
    """`python manage.py ingest PATH --workspace SLUG [--sync]`: the command exists and takes each option shown."""
    lines = re.sub(r"\\\n|\n\s+(?=\[|--)", " ", block.text).splitlines()
    for line in filter(str.strip, lines):
        words = shlex.split(line.split("  #")[0].replace("|", " | "))
        command = words[1:3] if words[1] == "manage.py" else words[1:2]
        parser = _parser(command)
        rest = words[1 + len(command):]
        # A subcommand (source add, workspace create | list): its own options, with the command's.
        parsers = [parser, *(sub for word, sub in _subparsers(parser).items() if word in rest)]
        known = {option for each in parsers for action in each._actions for option in action.option_strings}
        shown = {word.split("=")[0].strip("[]()") for word in rest if word.lstrip("[(").startswith("--")}
        assert shown <= known, f"{block}: `{' '.join(command)}` takes no {sorted(shown - known)}"


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if kind(b) == "environment"], ids=str)
def test_an_environment_block_sets_only_documented_settings(block):
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs" / "configuration.md").read_text()))
    named = set(re.findall(r"\b([A-Z][A-Z0-9_]+)=", block.text))
    assert named and not (named - documented), f"{block}: not in docs/configuration.md: {named - documented}"
