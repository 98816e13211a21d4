from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    """The pgvector extension, alone, before any table that uses it."""

    initial = True
    dependencies = []
    operations = [VectorExtension()]
