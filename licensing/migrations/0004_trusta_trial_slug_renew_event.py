from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('licensing', '0003_security_installation'),
    ]

    operations = [
        migrations.AddField(
            model_name='installation',
            name='trial_workspace_slug',
            field=models.SlugField(blank=True, editable=False),
        ),
        migrations.AlterField(
            model_name='licenseevent',
            name='action',
            field=models.CharField(choices=[('issue', 'Issued'), ('install', 'Installed from a signed key'), ('renew', 'Renewed from a later issue of its key'), ('tier_change', 'Tier changed'), ('revoke', 'Revoked'), ('reinstate', 'Reinstated'), ('update', 'Updated')], max_length=20),
        ),
    ]
