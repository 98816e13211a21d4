# Chunk.identifiers: whole-token identifiers for the identifier-aware lexical list (rag.retrieval.identifiers).

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models

BATCH = 2000


def identifiers_fill(apps, schema_editor) -> None:
    """Existing chunks get their identifiers as indexing would have given them, in bounded batches."""
    from rag.retrieval.identifiers import chunk_identifiers

    Chunk = apps.get_model("rag", "Chunk")
    last = 0
    while True:
        batch = list(Chunk.objects.filter(pk__gt=last).order_by("pk").only("pk", "text", "heading_path")[:BATCH])
        if not batch:
            return
        for chunk in batch:
            chunk.identifiers = chunk_identifiers(text=chunk.text, heading_path=chunk.heading_path)
        Chunk.objects.bulk_update(batch, ["identifiers"])
        last = batch[-1].pk


class Migration(migrations.Migration):

    dependencies = [
        ('rag', '0007_version_lineage'),
    ]

    operations = [
        migrations.AddField(
            model_name='chunk',
            name='identifiers',
            field=django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=100), blank=True, db_default=models.Value([]), default=list, size=None),
        ),
        migrations.RunPython(identifiers_fill, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name='chunk',
            index=django.contrib.postgres.indexes.GinIndex(fields=['identifiers'], name='chunk_identifiers_gin'),
        ),
    ]
