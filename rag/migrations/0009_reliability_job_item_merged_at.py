"""Job items record when the merge after their indexing ended, so that a lost merge is sent again."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('rag', '0008_reliability_job_item_lease'),
    ]

    operations = [
        migrations.AddField(
            model_name='indexingjobitem',
            name='merged_at',
            field=models.DateTimeField(blank=True, help_text='When the merge of its new chunks ended (or gave up); empty: pending.', null=True),
        ),
        # Items indexed before merges were tracked: their merges ran (or `merge_duplicates` caught up).
        migrations.RunSQL(
            "UPDATE rag_indexingjobitem SET merged_at = finished_at WHERE status = 'indexed'",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
