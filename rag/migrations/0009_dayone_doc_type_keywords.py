"""The taxonomy's keywords as `rag.ingest.doctypes.DEFAULT_RULES` has them now, for installs still on
the first defaults: "guide", "module", "interface" and the like typed pages on weak evidence.
Rows an operator edited are left alone.
"""

from django.db import migrations

# The keywords 0004 seeded, per slug: a row still equal to these was never edited.
FIRST_DEFAULTS = {
    "troubleshooting": [
        "troubleshooting", "troubleshoot", "error", "errors", "fails", "failed", "failure", "crash",
        "crashes", "bug", "issue", "issues", "problem", "symptom", "symptoms", "cause", "root cause",
        "workaround", "fix", "debug", "debugging", "stack trace", "traceback", "exception", "timeout",
        "not working", "resolve", "resolution", "known issues", "faq",
    ],
    "operations": [
        "deploy", "deployment", "deploying", "kubernetes", "helm", "docker", "container", "backup",
        "backups", "restore", "monitoring", "metrics", "alert", "alerts", "alerting", "upgrade",
        "upgrading", "rollback", "runbook", "on-call", "incident", "scaling", "replicas", "capacity",
        "maintenance", "systemd", "log rotation", "prometheus", "grafana", "health check",
        "environment variable", "environment variables", "provisioning", "disaster recovery",
    ],
    "architecture": [
        "architecture", "architectural", "design", "component", "components", "subsystem", "module",
        "modules", "layer", "layers", "data flow", "diagram", "dependency", "dependencies", "trade-off",
        "trade-offs", "tradeoff", "decision", "decisions", "adr", "rationale", "scalability", "consistency",
        "interface", "interfaces", "boundary", "message queue", "event-driven", "microservice",
        "microservices", "schema", "data model",
    ],
    "api": [
        "api", "endpoint", "endpoints", "rest", "http", "https", "request", "requests", "response",
        "responses", "status code", "json", "payload", "query parameter", "header", "headers", "bearer",
        "api key", "token", "authentication", "authorization", "rate limit", "pagination", "webhook",
        "webhooks", "openapi", "swagger", "graphql", "sdk", "curl",
    ],
    "user": [
        "getting started", "tutorial", "how to", "guide", "user guide", "quickstart", "quick start",
        "click", "button", "menu", "page", "dashboard", "account", "profile", "settings", "sign in",
        "log in", "upload", "search", "you can", "step", "steps", "example", "walkthrough",
    ],
}


def refresh(apps, schema_editor):
    from rag.ingest.doctypes import DEFAULT_RULES

    DocType = apps.get_model("rag", "DocType")
    for rule in DEFAULT_RULES:
        row = DocType.objects.filter(slug=rule.slug).first()
        if row is not None and list(row.keywords) == FIRST_DEFAULTS.get(rule.slug):
            row.keywords = list(rule.keywords)
            row.save(update_fields=["keywords"])


class Migration(migrations.Migration):
    dependencies = [("rag", "0008_dayone_display_path")]
    operations = [migrations.RunPython(refresh, migrations.RunPython.noop)]
