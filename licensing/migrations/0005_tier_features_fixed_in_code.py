"""A tier's features leave the database: they are fixed in code (licensing.features.TIER_FEATURES) or signed
into each key, so that an admin edit of a tier cannot widen what a signed key or the built-in trial grants."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('licensing', '0004_trusta_trial_slug_renew_event'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='licensetier',
            name='features',
        ),
        migrations.AlterField(
            model_name='licensetier',
            name='slug',
            field=models.SlugField(help_text='What license keys name; fixed once the tier exists.', unique=True),
        ),
    ]
