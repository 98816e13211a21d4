"""Undo what the disabled "Show deduplicated results" box stored: before this release, any options
save in a workspace without a license wrote `dedup: false`, so the conversation stayed
un-deduplicated after an upgrade. In a workspace that never had a license the box was disabled
all along, so no person chose that value.
"""

from django.db import migrations


def restore(apps, schema_editor):
    Conversation = apps.get_model("chat", "Conversation")
    License = apps.get_model("licensing", "License")
    licensed = set(License.objects.values_list("workspace_id", flat=True))
    for conversation in Conversation.objects.filter(search_options__dedup=False).exclude(workspace_id__in=licensed):
        conversation.search_options = {**conversation.search_options, "dedup": True}
        conversation.save(update_fields=["search_options"])


class Migration(migrations.Migration):
    dependencies = [("chat", "0002_dayone_search_defaults"), ("licensing", "0002_seed_tiers_and_features")]
    operations = [migrations.RunPython(restore, migrations.RunPython.noop)]
