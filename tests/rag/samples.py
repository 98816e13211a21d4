"""Small real files of every format, written into a test's folder."""

from __future__ import annotations

from datetime import datetime, UTC
from pathlib import Path

from fpdf import FPDF

GUIDE_MD = """---
title: Lumen Deployment Guide
date: 2025-03-14
tags: [deployment, kubernetes]
doc_type: operations
entities: [Lumen Gateway]
---
# Lumen Deployment Guide

## Kubernetes

Deploy the gateway as a Deployment with three replicas behind a Service.
The container listens on port 8443 and needs 512 MB of memory per replica.

### Health checks

The liveness probe calls /healthz every 10 seconds and restarts the pod after
three failures. The readiness probe calls /readyz and removes the pod from the
Service until the configuration store answers.

## Backups

Run a nightly backup of the configuration store with lumenctl backup create.
Keep at least seven daily backups and copy them off the cluster.
"""

API_ADOC = """= Lumen API Reference
:revdate: 2025-09-02
:doctype: book

== Authentication

Every request carries an API key in the X-Lumen-Key header. Keys are created
in the dashboard under Settings, API keys, and can be rotated at any time.

== Rate limits

Each API key may send 1200 requests per minute. Requests over the limit get
HTTP 429 with a Retry-After header that says how many seconds to wait.
"""

TROUBLE_RST = """==========================
Troubleshooting the gateway
==========================

Error 502 from upstream
=======================

A 502 means the upstream service closed the connection. Check the upstream
health and raise the upstream timeout if requests are slow.

Certificates
============

An expired certificate shows as error TLS-014 in the gateway log. Renew it
and reload the gateway with lumenctl reload.
"""

NOTES_TXT = """Release notes for operators

Upgrading

Stop the old gateway, install the new package, run lumenctl migrate and start
the gateway again. The upgrade keeps every route and API key.

Known issues

The dashboard may show stale metrics for one minute after an upgrade.
"""

PAGE_HTML = """<!doctype html><html><head><title>User guide: routes</title>
<style>body { color: red }</style><script>alert('never indexed')</script></head>
<body><h1>Creating routes</h1><p>Open the dashboard and choose New route. Give the route a
path such as /orders and pick the upstream service.</p>
<h2>Route keys</h2><p>Send the key as <code>&lt;api-key&gt;</code> in the header.</p></body></html>
"""


def write_pdf(
    path: Path,
    *,
    title: str = "Lumen Architecture Overview",
    created: datetime | None = datetime(2024, 5, 2, 9, 30, tzinfo=UTC),
    body: str = "The gateway has three components: the router, the policy engine and the configuration store. "
    "The router terminates TLS and forwards requests to upstream services. The policy engine applies rate "
    "limits and authentication. The configuration store keeps routes in PostgreSQL.",
    password: str | None = None,
) -> Path:
    pdf = FPDF()
    pdf.set_title(title)
    if created:
        pdf.set_creation_date(created)
    if password:
        pdf.set_encryption(owner_password="owner", user_password=password)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.cell(0, 12, title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, body)
    pdf.output(str(path))
    return path


def write_corpus(folder: Path) -> dict[str, Path]:
    """A tiny mixed-format folder; returns name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "guide": folder / "deploy-guide.md",
        "api": folder / "api" / "reference.adoc",
        "trouble": folder / "troubleshooting.rst",
        "notes": folder / "notes.txt",
        "page": folder / "routes.html",
        "arch": folder / "architecture.pdf",
    }
    files["api"].parent.mkdir(exist_ok=True)
    files["guide"].write_text(GUIDE_MD)
    files["api"].write_text(API_ADOC)
    files["trouble"].write_text(TROUBLE_RST)
    files["notes"].write_text(NOTES_TXT)
    files["page"].write_text(PAGE_HTML)
    write_pdf(files["arch"])
    return files
