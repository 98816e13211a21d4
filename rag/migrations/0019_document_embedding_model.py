from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('rag', '0018_folder_sync_stat'),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='embedding_model',
            field=models.CharField(blank=True, db_default='', default='', editable=False, max_length=100,
                                   help_text="The model whose vectors this document's chunks hold; empty when "
                                             "indexed before it was recorded."),
        ),
    ]
