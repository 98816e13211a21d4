"""Job items carry a lease, lost runs and merge completion, so that no item or merge is left unfinished."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('rag', '0007_version_lineage'),
    ]

    operations = [
        migrations.AddField(
            model_name='indexingjobitem',
            name='lease_expires_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='indexingjobitem',
            name='lost_runs',
            field=models.PositiveSmallIntegerField(db_default=0, default=0, help_text='Runs whose worker died before they finished.'),
        ),
        migrations.AddField(
            model_name='indexingjobitem',
            name='task_id',
            field=models.CharField(blank=True, db_default='', default='', max_length=64),
        ),
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
