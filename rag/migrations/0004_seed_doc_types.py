from django.db import migrations


def seed(apps, schema_editor):
    """The starting taxonomy; operators edit it in the admin afterwards."""
    from rag.ingest.doctypes import DEFAULT_RULES

    DocType = apps.get_model("rag", "DocType")
    for rule in DEFAULT_RULES:
        DocType.objects.get_or_create(
            slug=rule.slug,
            defaults={
                "name": rule.slug.replace("_", " ").title(),
                "keywords": list(rule.keywords),
                "path_patterns": list(rule.path_patterns),
            },
        )


class Migration(migrations.Migration):
    dependencies = [("rag", "0003_documents_chunks_jobs")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
