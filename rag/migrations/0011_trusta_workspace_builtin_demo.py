from django.db import migrations, models


def mark_the_running_demo_trial(apps, schema_editor):
    """An installation whose trial runs on its `demo` workspace keeps it: that workspace is the built-in demo."""
    Installation = apps.get_model("licensing", "Installation")
    Workspace = apps.get_model("rag", "Workspace")
    installation = Installation.objects.filter(pk=1, trial_workspace__slug="demo").first()
    if installation is not None:
        Workspace.objects.filter(pk=installation.trial_workspace_id).update(builtin_demo=True)
        Installation.objects.filter(pk=1).update(trial_workspace_slug="demo")


class Migration(migrations.Migration):

    dependencies = [
        ("rag", "0010_merge_helpers"),
        ("licensing", "0004_trusta_trial_slug_renew_event"),
    ]

    operations = [
        migrations.AddField(
            model_name="workspace",
            name="builtin_demo",
            field=models.BooleanField(default=False, editable=False),
        ),
        migrations.RunPython(mark_the_running_demo_trial, migrations.RunPython.noop),
    ]
