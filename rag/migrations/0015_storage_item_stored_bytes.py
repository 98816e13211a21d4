"""IndexingJobItem.stored_bytes: the size of an item's stored copy, so a workspace's usage is one SQL sum.

Copies stored before it (absolute paths under MEDIA_ROOT/uploads) get their size from the disk here, once.
"""

from pathlib import Path

from django.conf import settings
from django.db import migrations, models


def sizes_from_disk(apps, schema_editor):
    Item = apps.get_model("rag", "IndexingJobItem")
    root = str(Path(settings.MEDIA_ROOT).resolve() / "uploads") + "/"
    sizes: dict[str, int] = {}
    for source_file in Item.objects.filter(source_file__startswith=root).values_list("source_file", flat=True).distinct():
        try:
            sizes[source_file] = Path(source_file).stat().st_size
        except OSError:
            pass  # deleted: a failed or duplicate item's copy
    for source_file, size in sizes.items():
        Item.objects.filter(source_file=source_file).update(stored_bytes=size)


class Migration(migrations.Migration):

    dependencies = [
        ("rag", "0014_merge_lineage_formats"),
    ]

    operations = [
        migrations.AddField(
            model_name="indexingjobitem",
            name="stored_bytes",
            field=models.BigIntegerField(db_default=0, default=0,
                                         help_text="Size of the stored copy it points to; 0 once deleted, or none."),
        ),
        migrations.RunPython(sizes_from_disk, migrations.RunPython.noop),
    ]
